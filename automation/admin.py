"""Admin: watched items to edit; deliveries, stock and ad group actions to read (and replay)."""

import json

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from django.shortcuts import redirect
from django.urls import path
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from . import held_changes, inbox, inventory, promotions, scheduling, shopify_access
from .forms import PromotionForm
from .models import (
    AdGroupAction,
    BrakeSettings,
    CheckoutState,
    Claim,
    DataRequest,
    Delivery,
    HeldChange,
    MarginRule,
    Promotion,
    PromotionAdGroup,
    ReconcileRun,
    ReminderDecision,
    ReminderSettings,
    StockLevel,
    SuppressedAddress,
    WatchedItem,
)
from .privacy import mask_email
from .sources import load_body


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records the merchant reads but never edits."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "received_at",
        "source",
        "topic",
        "shop_domain",
        "status",
        "attempts",
        "duplicate_count",
        "processed_at",
    )
    list_filter = ("source", "topic", "status")
    search_fields = ("webhook_id", "event_id")
    date_hierarchy = "received_at"
    actions = ["replay"]
    fields = (
        "source",
        "shop_domain",
        "topic",
        "status",
        "last_error",
        "webhook_id",
        "event_id",
        "api_version",
        "triggered_at",
        "received_at",
        "processing_started_at",
        "processed_at",
        "attempts",
        "duplicate_count",
        "pretty_body",
    )
    readonly_fields = fields

    @admin.display(description=_("body"))
    def pretty_body(self, obj: Delivery) -> str:
        if obj.body is None:
            return _("(dropped after the retention period)")
        raw = bytes(obj.body)
        try:
            text = json.dumps(load_body(raw), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            text = raw.decode("utf-8", errors="replace")
        # A JSON escape like "\ud800" decodes to a lone surrogate, which the response cannot
        # encode as UTF-8: show it escaped, as the body spells it, instead of a 500.
        text = text.encode("utf-8", "backslashreplace").decode()
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", text)

    @admin.action(description=_("Replay selected failed, dead or refused deliveries"))
    def replay(self, request: HttpRequest, queryset: QuerySet[Delivery]) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        replayed = inbox.replay(ids)
        skipped = len(ids) - replayed
        self.message_user(
            request, _("Replaying %(count)d deliveries.") % {"count": replayed}, messages.SUCCESS
        )
        if skipped:
            self.message_user(
                request,
                _("Skipped %(count)d that are neither failed, dead nor refused.")
                % {"count": skipped},
                messages.WARNING,
            )


@admin.register(WatchedItem)
class WatchedItemAdmin(admin.ModelAdmin):
    list_display = (
        "label",
        "inventory_item_id",
        "ad_group_id",
        "customer_id",
        "pause_at",
        "enabled",
        "total_available",
        "last_stock_update",
        "last_action",
    )
    list_display_links = ("label",)
    list_editable = ("ad_group_id", "pause_at", "enabled")
    list_filter = ("enabled",)
    search_fields = ("label", "inventory_item_id", "ad_group_id")

    @admin.display(description=_("available now"))
    def total_available(self, obj: WatchedItem) -> int:
        return inventory.total_available(obj.inventory_item_id)

    @admin.display(description=_("last stock update"))
    def last_stock_update(self, obj: WatchedItem):
        level = (
            StockLevel.objects.filter(inventory_item_id=obj.inventory_item_id)
            .order_by("-updated_at")
            .first()
        )
        return level.updated_at if level else "–"

    @admin.display(description=_("last action"))
    def last_action(self, obj: WatchedItem) -> str:
        action = AdGroupAction.objects.filter(
            customer_id=obj.customer_id, ad_group_id=obj.ad_group_id
        ).first()
        if action is None:
            return "–"
        when = timezone.localtime(action.requested_at).strftime("%Y-%m-%d %H:%M")
        return f"{action.desired_status} ({action.get_result_display()}) {when}"


@admin.register(AdGroupAction)
class AdGroupActionAdmin(ReadOnlyAdmin):
    list_display = (
        "requested_at",
        "ad_group_id",
        "desired_status",
        "result",
        "source",
        "reason",
        "delivery",
        "applied_at",
    )
    list_filter = ("desired_status", "result", "source", "customer_id")
    search_fields = ("ad_group_id", "reason")
    date_hierarchy = "requested_at"
    list_select_related = ("delivery",)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(StockLevel)
class StockLevelAdmin(ReadOnlyAdmin):
    list_display = ("inventory_item_id", "location_id", "available", "updated_at", "recorded_at")
    search_fields = ("inventory_item_id", "location_id")


@admin.register(ReminderSettings)
class ReminderSettingsAdmin(admin.ModelAdmin):
    """One row; the list view goes straight to it and warns when discounts cannot be sent."""

    fieldsets = (
        (_("When"), {"fields": ("reminder_delay_minutes", "frequency_cap_days")}),
        (
            _("Expected value"),
            {"fields": ("p0", "p_plain", "p_discount", "default_margin_rate")},
        ),
        (_("Discount"), {"fields": ("discount_code", "discount_rate", "discount_cooldown_days")}),
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not ReminderSettings.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context=None):
        config = ReminderSettings.load()
        return redirect("admin:automation_remindersettings_change", config.pk)

    def change_view(self, request: HttpRequest, object_id, form_url="", extra_context=None):
        config = ReminderSettings.load()
        if not config.discount_code.strip():
            self.message_user(
                request,
                _(
                    "No discount code configured: reminders are sent without a discount until "
                    "you enter one."
                ),
                messages.WARNING,
            )
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(MarginRule)
class MarginRuleAdmin(admin.ModelAdmin):
    list_display = ("__str__", "rate", "variant_id", "product_id", "sku", "vendor", "note")
    list_editable = ("rate",)
    search_fields = ("sku", "vendor", "note")


@admin.register(ReminderDecision)
class ReminderDecisionAdmin(ReadOnlyAdmin):
    list_display = (
        "decided_at",
        "masked_email",
        "arm",
        "reason",
        "margin",
        "delta_plain",
        "delta_discount",
        "sent_at",
    )
    list_filter = ("arm", ("sent_at", admin.EmptyFieldListFilter))
    search_fields = ("email", "checkout__token")
    date_hierarchy = "decided_at"
    list_select_related = ("checkout",)

    @admin.display(description=_("e-mail"))
    def masked_email(self, obj: ReminderDecision) -> str:
        return mask_email(obj.email)


@admin.register(CheckoutState)
class CheckoutStateAdmin(ReadOnlyAdmin):
    list_display = (
        "token",
        "source",
        "masked_email",
        "accepts_marketing",
        "total_price",
        "currency",
        "updated_at",
        "completed_at",
    )
    list_filter = ("source", "accepts_marketing", ("completed_at", admin.EmptyFieldListFilter))
    search_fields = ("token", "email")

    @admin.display(description=_("e-mail"))
    def masked_email(self, obj: CheckoutState) -> str:
        return mask_email(obj.email)


@admin.register(Claim)
class ClaimAdmin(ReadOnlyAdmin):
    list_display = ("key", "created_at", "expires_at")
    search_fields = ("key",)


@admin.register(SuppressedAddress)
class SuppressedAddressAdmin(admin.ModelAdmin):
    list_display = ("email", "reason", "created_at")
    search_fields = ("email",)


@admin.register(DataRequest)
class DataRequestAdmin(admin.ModelAdmin):
    list_display = ("received_at", "customer_email", "customer_id", "shop_domain", "handled")
    list_editable = ("handled",)
    readonly_fields = ("shop_domain", "customer_email", "customer_id", "orders_requested")


class PromotionAdGroupInline(admin.TabularInline):
    model = PromotionAdGroup
    extra = 1


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
        scheduling.save_and_schedule(obj)
        for line in form.schedule_summary():
            self.message_user(request, f"{obj.name} {line}.", messages.INFO)

    def delete_model(self, request: HttpRequest, obj: Promotion) -> None:
        scheduling.delete_and_cancel(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Promotion]) -> None:
        for promotion in queryset:
            scheduling.delete_and_cancel(promotion)


@admin.register(ReconcileRun)
class ReconcileRunAdmin(ReadOnlyAdmin):
    list_display = (
        "started_at",
        "local_date",
        "trigger",
        "status",
        "items_checked",
        "levels_changed",
        "correction_count",
        "duration_seconds",
    )
    list_filter = ("status", "trigger")

    @admin.display(description=_("corrections"))
    def correction_count(self, obj: ReconcileRun) -> int:
        return len(obj.corrections)

    def changelist_view(self, request: HttpRequest, extra_context=None):
        if not shopify_access.is_configured():
            self.message_user(
                request,
                _(
                    "The nightly reconciliation is not configured: set %(settings)s so it "
                    "can read the true stock from Shopify."
                )
                % {"settings": shopify_access.missing_settings()},
                messages.WARNING,
            )
        if shopify_access.webhooks_managed_by_toml():
            self.message_user(
                request,
                _(
                    "Webhook subscriptions are managed by the app configuration "
                    "(shopify.app.toml): the nightly run neither checks nor creates them."
                ),
                messages.INFO,
            )
        return super().changelist_view(request, extra_context)


# --- the safety brake: its settings and the pauses it held ---------------------------------


@admin.register(BrakeSettings)
class BrakeSettingsAdmin(admin.ModelAdmin):
    """One row ("Notbremse"); the list view goes straight to it."""

    fields = ("enabled", "window_minutes", "max_share_percent", "max_count")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not BrakeSettings.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context=None):
        config = BrakeSettings.load()
        return redirect("admin:automation_brakesettings_change", config.pk)


@admin.register(HeldChange)
class HeldChangeAdmin(ReadOnlyAdmin):
    """Pauses the brake held, with "apply all" and "discard all" for the open ones."""

    change_list_template = "admin/automation/heldchange/change_list.html"
    list_display = (
        "held_at",
        "ad_group_id",
        "desired_status",
        "reason",
        "resolution",
        "resolved_by",
        "resolved_at",
        "outcome",
    )
    list_filter = ("resolution", "source")
    search_fields = ("ad_group_id", "reason")
    list_select_related = ("resolved_by",)
    actions = ["apply_selected", "discard_selected"]

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_urls(self):
        own = [
            path(
                "apply-all/",
                self.admin_site.admin_view(self.apply_all_view),
                name="automation_heldchange_apply_all",
            ),
            path(
                "discard-all/",
                self.admin_site.admin_view(self.discard_all_view),
                name="automation_heldchange_discard_all",
            ),
        ]
        return own + super().get_urls()

    def changelist_view(self, request: HttpRequest, extra_context=None):
        extra = {"open_count": held_changes.open_changes().count(), **(extra_context or {})}
        return super().changelist_view(request, extra)

    def _decide(self, request: HttpRequest, queryset: QuerySet[HeldChange], how: str) -> None:
        if how == "apply":
            decided = held_changes.apply(queryset, request.user)
            message = _(
                "Applied %(count)d held changes: each ad group got the status its stock says now."
            )
        else:
            decided = held_changes.discard(queryset, request.user)
            message = _("Discarded %(count)d held changes: the ads stay as they are.")
        self.message_user(request, message % {"count": decided.decided}, messages.SUCCESS)
        for error in decided.errors:
            self.message_user(request, error, messages.ERROR)

    def _decide_all(self, request: HttpRequest, how: str):
        if request.method != "POST":
            return redirect("admin:automation_heldchange_changelist")
        if not self.has_decide_permission(request):
            raise PermissionDenied
        self._decide(request, held_changes.open_changes(), how)
        return redirect("admin:automation_heldchange_changelist")

    def has_decide_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("automation.change_heldchange")

    def apply_all_view(self, request: HttpRequest):
        return self._decide_all(request, "apply")

    def discard_all_view(self, request: HttpRequest):
        return self._decide_all(request, "discard")

    @admin.action(
        description=_("Apply selected held changes (send what the stock says now)"),
        permissions=["decide"],
    )
    def apply_selected(self, request: HttpRequest, queryset: QuerySet[HeldChange]) -> None:
        self._decide(request, queryset, "apply")

    @admin.action(
        description=_("Discard selected held changes (keep the ads as they are)"),
        permissions=["decide"],
    )
    def discard_selected(self, request: HttpRequest, queryset: QuerySet[HeldChange]) -> None:
        self._decide(request, queryset, "discard")
