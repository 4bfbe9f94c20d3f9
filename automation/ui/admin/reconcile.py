"""The nightly runs: what each read, changed and reported."""

from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from automation.models import (
    ReconcileRun,
)
from automation.platform.display_names import named
from automation.shopify import access as shopify_access
from automation.ui.admin.base import ReadOnlyAdmin


def _what_was_run(entry: dict) -> str:
    """The watched product a run's entry is about, else its item by name (id on hover)."""
    if entry.get("label"):
        return entry["label"]
    return named(entry.get("item_name"), entry["item"]) if entry.get("item") else "–"


def _run_list(row: str, rows) -> str:
    shown = format_html_join("", row, rows)
    return format_html("<ul>{}</ul>", shown) if shown else "–"


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
    fields = (
        "local_date",
        "trigger",
        "status",
        "started_at",
        "finished_at",
        "duration_seconds",
        "items_checked",
        "levels_changed",
        "ad_groups_read",
        "corrections_named",
        "held_named",
        "subscriptions_created",
        "errors",
        "claims_deleted",
        "bodies_dropped",
    )
    readonly_fields = ("corrections_named", "held_named")

    @admin.display(description=_("corrections"))
    def correction_count(self, obj: ReconcileRun) -> int:
        return len(obj.corrections)

    @admin.display(description=_("corrections"))
    def corrections_named(self, obj: ReconcileRun) -> str:
        """Each correction by the names the run stored, the ids on hover."""
        rows = (
            (_what_was_run(c), named(c.get("ad_group_name"), c["ad_group"]), c["was"], c["now"])
            for c in obj.corrections
        )
        return _run_list("<li>{}: {} {} → {}</li>", rows)

    @admin.display(description=ReconcileRun._meta.get_field("held").verbose_name)
    def held_named(self, obj: ReconcileRun) -> str:
        rows = (
            (_what_was_run(h), named(h.get("ad_group_name"), h["ad_group"]), h["held"])
            for h in obj.held
        )
        return _run_list("<li>{}: {} → {}</li>", rows)

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
