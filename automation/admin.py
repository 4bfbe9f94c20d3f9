"""Admin: watched items to edit; deliveries, stock and ad group actions to read (and replay)."""

import json
from datetime import UTC, datetime
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse, reverse_lazy
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from . import held_changes, inbox, inventory, promotions, scheduling, shopify_access
from .exceptions import InvalidPayload
from .forms import PromotionForm
from .models import (
    AdGroupAction,
    BrakeSettings,
    CheckoutState,
    Claim,
    DashboardSettings,
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
from .setup.forms import WatchedItemForm
from .sources import load_body
from .sources.events import parse_event

# The header names the shop, not "Django administration"; "View site" leads to the dashboard.
admin.site.site_header = settings.SHOP_NAME
admin.site.site_title = settings.SHOP_NAME
admin.site.site_url = reverse_lazy("dashboard")


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records the merchant reads but never edits or deletes (no delete action either)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class SingletonSettingsAdmin(admin.ModelAdmin):
    """A settings model with one row (`SingletonSettings`): the list view goes straight to it,
    and it can be neither added twice nor deleted."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not self.model.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context=None):
        meta = self.model._meta
        return redirect(f"admin:{meta.app_label}_{meta.model_name}_change", self.model.load().pk)


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
        "result",
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
        "result",
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


class ReasonForm(forms.Form):
    """The reason the merchant gives for a manual pause or enable."""

    reason = forms.CharField(
        label=_("reason"),
        max_length=WatchedItem._meta.get_field("manual_reason").max_length,
        help_text=_("Why, for the log, e.g. “supplier delayed until Friday”."),
    )


MANUAL_VERBS = {
    "pause": AdGroupAction.Status.PAUSED,
    "enable": AdGroupAction.Status.ENABLED,
    "release": "",
}
STATUS_SINCE_FORMAT = "j. N, H:i"
"""How the status column dates a change, with Django's localised month names ("1. Dez., 07:46")."""


def _last_actions() -> QuerySet[AdGroupAction]:
    return AdGroupAction.objects.filter(
        customer_id=OuterRef("customer_id"), ad_group_id=OuterRef("ad_group_id")
    ).order_by("-requested_at", "-pk")


def with_status(queryset: QuerySet[WatchedItem]) -> QuerySet[WatchedItem]:
    """Watched items with what their status column needs, in the same query (no N+1).

    `current` is the last status sent (failed calls aside), `since` the first action of the
    current run of that status, `last_result`/`last_failure` how the newest call went, and
    `stock` the stored total (NULL while no tracked level is stored).
    """
    sent = _last_actions().exclude(result=AdGroupAction.Result.FAILED)
    stock = (
        StockLevel.objects.filter(inventory_item_id=OuterRef("inventory_item_id"))
        .values("inventory_item_id")
        .annotate(total=Sum("available"))
        .values("total")
    )
    return (
        queryset.select_related("manual_by")
        .annotate(
            stock=Subquery(stock),
            last_result=Subquery(_last_actions().values("result")[:1]),
            last_failure=Subquery(_last_actions().values("error")[:1]),
            current=Subquery(sent.values("desired_status")[:1]),
        )
        .annotate(
            changed_at=Subquery(
                sent.exclude(desired_status=OuterRef("current")).values("requested_at")[:1]
            )
        )
        .annotate(
            since=Subquery(
                sent.filter(
                    desired_status=OuterRef("current"),
                    requested_at__gt=Coalesce(
                        OuterRef("changed_at"), Value(datetime.min.replace(tzinfo=UTC))
                    ),
                )
                .order_by("requested_at", "pk")
                .values("requested_at")[:1]
            )
        )
    )


def status_text(item: WatchedItem) -> tuple[str, str]:
    """The status column's words and their hover text, from `with_status`'s annotations."""
    stock = item.stock
    if not item.enabled:
        return str(_("switched off – not watched")), ""
    if item.manual_status:
        who = item.manual_by.get_username() if item.manual_by else "?"
        when = formats.date_format(timezone.localtime(item.manual_at), STATUS_SINCE_FORMAT)
        hover = _("%(reason)s (%(who)s, %(when)s)") % {
            "reason": item.manual_reason,
            "who": who,
            "when": when,
        }
        if item.manual_status == AdGroupAction.Status.PAUSED:
            return str(_("manually paused")), hover
        return str(_("manually enabled")), hover
    if item.current == AdGroupAction.Status.PAUSED:
        text = _("paused since %(since)s – stock %(stock)s ≤ %(pause_at)s") % {
            "since": formats.date_format(timezone.localtime(item.since), STATUS_SINCE_FORMAT),
            "stock": "?" if stock is None else formats.localize(stock),
            "pause_at": formats.localize(item.pause_at),
        }
    elif item.current == AdGroupAction.Status.ENABLED:
        text = _("running – stock %(stock)s") % {
            "stock": "?" if stock is None else formats.localize(stock)
        }
    elif stock is None:
        text = _("no stock known yet")
    else:
        text = _("not switched yet – stock %(stock)s") % {"stock": formats.localize(stock)}
    if item.last_result == AdGroupAction.Result.FAILED:
        return f"{text} · {_('last change failed')}", item.last_failure or ""
    return str(text), ""


def describe(decision: inventory.Decision) -> tuple[int, str]:
    """The message level and text that say what deciding a row again did."""
    values = {
        "label": decision.label,
        "stock": "?" if decision.total is None else formats.localize(decision.total),
        "pause_at": formats.localize(decision.pause_at),
    }
    if decision.error:
        return messages.WARNING, _(
            "Google Ads did not take the change for %(label)s: %(error)s. The change is saved; "
            "the next stock update or the nightly reconciliation sets the ad group again."
        ) % {**values, "error": decision.error}
    if not decision.watched:
        return messages.INFO, _("%(label)s is switched off: the ad group was not changed.") % values
    if decision.status is None:
        return messages.INFO, _(
            "No stock known yet for %(label)s: the ad group stays as it is until the first "
            "stock update."
        ) % values
    if decision.held == AdGroupAction.Status.PAUSED:
        text = _("Ad group paused manually (%(label)s); the stock does not change it.")
    elif decision.held:
        text = _("Ad group enabled manually (%(label)s); the stock does not change it.")
    elif decision.status == AdGroupAction.Status.PAUSED:
        text = _("Ad group paused: stock %(stock)s ≤ %(pause_at)s (%(label)s)")
    else:
        text = _("Ad group running: stock %(stock)s > %(pause_at)s (%(label)s)")
    text = text % values
    if settings.ADS_BACKEND == "dryrun":
        text = f"{text} – {_('dry run: not sent to Google Ads')}"
    return messages.SUCCESS, text


@admin.register(WatchedItem)
class WatchedItemAdmin(admin.ModelAdmin):
    """The list says what matters (status, threshold, stock); the rest is on the item's page.

    Every save decides the item again from the stored levels, after the save has committed
    (source `admin`); manual pause and enable hold until released.
    """

    form = WatchedItemForm  # product and ad group picked by name (automation/setup/forms.py)
    list_display = ("label", "product", "status", "pause_at", "stock_display")
    list_display_links = ("label",)
    list_editable = ("pause_at",)
    list_filter = ("enabled", "manual_status")
    search_fields = ("label", "inventory_item_id", "ad_group_id")
    actions = ["pause_manually", "enable_manually", "release_manual"]
    readonly_fields = (
        "status",
        "stock_display",
        "manual_status",
        "manual_reason",
        "manual_by",
        "manual_at",
        "ad_group_changes",
    )
    fieldsets = (
        (None, {"fields": ("label", "inventory_item_id", "pause_at", "enabled")}),
        (_("Google Ads"), {"fields": ("ad_group_id", "customer_id")}),
        (
            _("Status"),
            {
                "fields": (
                    "status",
                    "stock_display",
                    "manual_status",
                    "manual_reason",
                    "manual_by",
                    "manual_at",
                    "ad_group_changes",
                )
            },
        ),
        (_("Dashboard"), {"fields": ("clicks_per_day", "cost_per_click")}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[WatchedItem]:
        return with_status(super().get_queryset(request))

    @admin.display(description=_("product"), ordering="inventory_item_id")
    def product(self, obj: WatchedItem) -> int:
        return obj.inventory_item_id

    @admin.display(description=_("status"))
    def status(self, obj: WatchedItem) -> str:
        if obj.pk is None:
            return "–"
        text, hover = status_text(obj)
        dry_run = settings.ADS_BACKEND == "dryrun" or (
            obj.last_result == AdGroupAction.Result.DRY_RUN
        )
        badge = (
            format_html(' <span class="dry-run-badge">{}</span>', _("dry run")) if dry_run else ""
        )
        if hover:
            return format_html('<span title="{}">{}</span>{}', hover, text, badge)
        return format_html("<span>{}</span>{}", text, badge)

    @admin.display(description=_("available now"), ordering="stock")
    def stock_display(self, obj: WatchedItem) -> str:
        stock = getattr(obj, "stock", None)
        return "–" if stock is None else formats.localize(stock)

    @admin.display(description=_("ad group changes"))
    def ad_group_changes(self, obj: WatchedItem) -> str:
        if obj.pk is None:
            return "–"
        url = reverse("admin:automation_adgroupaction_changelist")
        query = urlencode({"customer_id": obj.customer_id, "ad_group_id": obj.ad_group_id})
        return format_html('<a href="{}?{}">{}</a>', url, query, _("show the log"))

    # --- a save decides again ---------------------------------------------------------------

    def save_model(self, request: HttpRequest, obj: WatchedItem, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        # After the commit: an Ads error is shown, never loses the save.
        transaction.on_commit(lambda: self._decide_again(request, obj))

    def _decide_again(self, request: HttpRequest, obj: WatchedItem) -> None:
        level, text = describe(inventory.redecide(obj))
        self.message_user(request, text, level)

    # --- manual pause, enable, release -------------------------------------------------------

    def get_urls(self):
        manual = path(
            "<path:object_id>/manual/<str:verb>/",
            self.admin_site.admin_view(self.manual_view),
            name="automation_watcheditem_manual",
        )
        return [manual, *super().get_urls()]

    def manual_view(self, request: HttpRequest, object_id: str, verb: str) -> HttpResponse:
        """The item page's buttons: a form for the reason, then the manual change."""
        obj = self.get_object(request, object_id)
        if obj is None or verb not in MANUAL_VERBS:
            raise Http404
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        change_url = reverse("admin:automation_watcheditem_change", args=[obj.pk])
        form = ReasonForm(request.POST or None) if verb != "release" else None
        if request.method == "POST" and (form is None or form.is_valid()):
            reason = form.cleaned_data["reason"] if form is not None else ""
            self._apply_manual(request, [obj], verb, reason)
            return redirect(change_url)
        return self._reason_page(request, [obj], verb, form, action="", cancel_url=change_url)

    def _reason_page(self, request, items, verb, form, *, action, cancel_url) -> HttpResponse:
        titles = {
            "pause": _("Pause manually"),
            "enable": _("Enable manually"),
            "release": _("Release manual control"),
        }
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": titles[verb],
            "items": items,
            "form": form,
            "verb": verb,
            "action": action,
            "selected": [item.pk for item in items],
            "cancel_url": cancel_url,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/automation/watcheditem/manual.html", context)

    def _apply_manual(self, request, items, verb: str, reason: str) -> None:
        for item in items:
            if verb == "release":
                decision = inventory.release_manual(item, request.user)
                self.message_user(
                    request,
                    _("Manual control released for %(label)s.") % {"label": item.label},
                    messages.INFO,
                )
            else:
                decision = inventory.set_manual(item, MANUAL_VERBS[verb], reason, request.user)
            level, text = describe(decision)
            self.message_user(request, text, level)

    def _manual_action(self, request, queryset, verb: str):
        items = list(queryset)
        form = ReasonForm(request.POST if "confirm" in request.POST else None)
        if verb == "release" or ("confirm" in request.POST and form.is_valid()):
            reason = "" if verb == "release" else form.cleaned_data["reason"]
            self._apply_manual(request, items, verb, reason)
            return None
        return self._reason_page(
            request,
            items,
            verb,
            form,
            action=f"{verb}_manually" if verb != "release" else "release_manual",
            cancel_url=reverse("admin:automation_watcheditem_changelist"),
        )

    @admin.action(description=_("Pause manually"), permissions=["change"])
    def pause_manually(self, request: HttpRequest, queryset: QuerySet[WatchedItem]):
        return self._manual_action(request, queryset, "pause")

    @admin.action(description=_("Enable manually"), permissions=["change"])
    def enable_manually(self, request: HttpRequest, queryset: QuerySet[WatchedItem]):
        return self._manual_action(request, queryset, "enable")

    @admin.action(description=_("Release manual control"), permissions=["change"])
    def release_manual(self, request: HttpRequest, queryset: QuerySet[WatchedItem]):
        return self._manual_action(request, queryset, "release")


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


@admin.register(StockLevel)
class StockLevelAdmin(ReadOnlyAdmin):
    list_display = ("inventory_item_id", "location_id", "available", "updated_at", "recorded_at")
    search_fields = ("inventory_item_id", "location_id")


@admin.register(ReminderSettings)
class ReminderSettingsAdmin(SingletonSettingsAdmin):
    """One row; the list view goes straight to it and warns when discounts cannot be sent."""

    fieldsets = (
        (_("When"), {"fields": ("reminder_delay_minutes", "frequency_cap_days")}),
        (
            _("Expected value"),
            {"fields": ("p0", "p_plain", "p_discount", "default_margin_rate")},
        ),
        (_("Discount"), {"fields": ("discount_code", "discount_rate", "discount_cooldown_days")}),
        (
            _("Measuring"),
            {
                "fields": (
                    "holdout_share",
                    "holdout_salt",
                    "attribution_window_days",
                    "probabilities_from",
                    "min_decisions_per_arm",
                ),
                "description": _(
                    "A random share of the checkouts that would get a reminder gets none; "
                    "comparing them shows what reminders really add. The dashboard shows the "
                    "measured rates beside the configured ones."
                ),
            },
        ),
    )

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


@admin.register(DashboardSettings)
class DashboardSettingsAdmin(SingletonSettingsAdmin):
    """One row, like the reminder settings: the list view goes straight to it."""

    fields = ("manual_check_hours",)


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
class BrakeSettingsAdmin(SingletonSettingsAdmin):
    """One row ("Notbremse"); the list view goes straight to it."""

    fields = ("enabled", "window_minutes", "max_share_percent", "max_count")


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
