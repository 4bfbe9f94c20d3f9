"""Promotions: an ad group runs from their start to their end, at Berlin's local time."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from automation.models import (
    Promotion,
    PromotionAdGroup,
)
from automation.platform.display_names import ad_group_name_of_row
from automation.promotions import edges as promotions
from automation.ui.admin_forms import PromotionAdGroupForm, PromotionForm


class PromotionAdGroupInline(admin.TabularInline):
    model = PromotionAdGroup
    form = PromotionAdGroupForm
    extra = 1
    readonly_fields = ("ad_group_name",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[PromotionAdGroup]:
        return super().get_queryset(request).annotate(ad_group_name=ad_group_name_of_row())

    @admin.display(description=_("name"))
    def ad_group_name(self, obj: PromotionAdGroup) -> str:
        """The ad group's name as Google Ads last said (the nightly read keeps it)."""
        return getattr(obj, "ad_group_name", None) or "–"


@admin.register(Promotion)
class PromotionAdmin(admin.ModelAdmin):
    form = PromotionForm
    inlines = [PromotionAdGroupInline]
    list_display = ("name", "status", "local_start", "local_end", "start_at", "end_at", "ended_at")
    list_filter = ("status",)
    readonly_fields = (
        "schedule",
        "status",
        "started_at",
        "start_late_seconds",
        "ended_at",
        "end_late_seconds",
        "last_error",
    )

    @admin.display(description=_("local start"))
    def local_start(self, obj: Promotion) -> str:
        return f"{obj.start_date} {obj.start_time:%H:%M}" if obj.start_date else "–"

    @admin.display(description=_("local end"))
    def local_end(self, obj: Promotion) -> str:
        return f"{obj.end_date} {obj.end_time:%H:%M}" if obj.end_date else "–"

    @admin.display(description=_("schedule"))
    def schedule(self, obj: Promotion) -> str:
        now = timezone.now()
        lines = [
            promotions.describe_instant(label, day, clock, obj.time_zone, now)
            for label, day, clock in (
                (_("starts"), obj.start_date, obj.start_time),
                (_("ends"), obj.end_date, obj.end_time),
            )
            if day and clock is not None
        ]
        return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in lines)) or "–"

    def save_model(self, request: HttpRequest, obj: Promotion, form, change: bool) -> None:
        promotions.save_and_schedule(obj)
        for line in form.schedule_summary():
            self.message_user(request, f"{obj.name} {line}.", messages.INFO)

    def delete_model(self, request: HttpRequest, obj: Promotion) -> None:
        promotions.delete_and_cancel(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Promotion]) -> None:
        for promotion in queryset:
            promotions.delete_and_cancel(promotion)
