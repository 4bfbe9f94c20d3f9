"""The deliveries: every webhook as stored, what became of it, and the replay."""

import json
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from automation.intake import inbox
from automation.intake.sources import load_body
from automation.intake.sources.events import parse_event
from automation.models import (
    Delivery,
)
from automation.platform import notes
from automation.platform.exceptions import InvalidPayload
from automation.ui.admin.base import (
    ReadOnlyAdmin,
)


def checkout_token(delivery: Delivery) -> str:
    """The checkout a delivery's body is about (its decision's key), or "" for other topics."""
    if delivery.body is None:
        return ""
    try:
        event = parse_event(
            delivery.source, delivery.topic, bytes(delivery.body), delivery.shop_domain
        )
    except InvalidPayload:
        return ""
    return getattr(event, "token", "") or ""


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "received_at",
        "source",
        "topic",
        "shop_domain",
        "status",
        "result_shown",
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
        "result_shown",
        "last_error",
        "caused",
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

    @admin.display(description=_("result"))
    def result_shown(self, obj: Delivery) -> str:
        """The result in the reader's language (rows without a code: as stored)."""
        return notes.shown(obj.result_note, obj.result)

    @admin.display(description=_("what it caused"))
    def caused(self, obj: Delivery) -> str:
        """Links to the ad group changes and the reminder decision this delivery led to."""
        links = []
        changes = obj.ad_group_actions.count()
        if changes:
            url = reverse("admin:automation_adgroupaction_changelist")
            links.append(
                (
                    f"{url}?{urlencode({'delivery__id__exact': obj.pk})}",
                    ngettext("%(count)d ad group change", "%(count)d ad group changes", changes)
                    % {"count": changes},
                )
            )
        token = checkout_token(obj)
        if token:
            url = reverse("admin:automation_reminderdecision_changelist")
            links.append((f"{url}?{urlencode({'q': token})}", _("reminder decisions")))
        if not links:
            return "–"
        return format_html_join(mark_safe("<br>"), '<a href="{}">{}</a>', links)

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
