"""Admin: every delivery visible, read-only, with a replay action for failed and dead ones."""

import json

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from . import inbox
from .models import Delivery


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
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

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Delivery | None = None) -> bool:
        return False

    @admin.display(description="body")
    def pretty_body(self, obj: Delivery) -> str:
        if obj.body is None:
            return "(dropped after the retention period)"
        raw = bytes(obj.body)
        try:
            text = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            text = raw.decode("utf-8", errors="replace")
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", text)

    @admin.action(description="Replay selected failed or dead deliveries")
    def replay(self, request: HttpRequest, queryset: QuerySet[Delivery]) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        replayed = inbox.replay(ids)
        skipped = len(ids) - replayed
        self.message_user(request, f"Replaying {replayed} deliveries.", messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                f"Skipped {skipped} that are neither failed nor dead.",
                messages.WARNING,
            )
