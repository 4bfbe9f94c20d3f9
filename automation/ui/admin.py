"""Admin: watched products, ad groups and locations to edit; the catalogue, deliveries, stock and
ad group actions to read (and replay)."""

import json
from datetime import UTC, datetime
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db import models, transaction
from django.db.models import DateTimeField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Least
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse, reverse_lazy
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from automation.google_ads import statuses as ads
from automation.intake import inbox
from automation.intake.sources import load_body
from automation.intake.sources.events import parse_event
from automation.models import (
    AdGroup,
    AdGroupAction,
    BrakeSettings,
    CheckoutState,
    Claim,
    DashboardSettings,
    DataRequest,
    Delivery,
    HeldChange,
    Location,
    MarginRule,
    Product,
    Promotion,
    PromotionAdGroup,
    ReconcileRun,
    ReminderDecision,
    ReminderSettings,
    StockLevel,
    SuppressedAddress,
    Variant,
    WatchedProduct,
)
from automation.platform import notes
from automation.platform.display_names import ad_group_name_of_row, item_name, named
from automation.platform.exceptions import InvalidPayload
from automation.platform.pseudonyms import mask_email
from automation.promotions import edges as promotions
from automation.reminders import mail as reminder_mail
from automation.reminders.mail_text import PLACEHOLDERS
from automation.shopify import access as shopify_access
from automation.stock import apply, facts, held_changes, manual, selectors
from automation.ui.admin_forms import LocalizedDecimalField, PromotionAdGroupForm, PromotionForm
from automation.ui.setup import failures, pickers
from automation.ui.setup.forms import AdGroupForm, WatchedProductForm, dashed

# The header names the shop, not "Django administration"; "View site" leads to the dashboard.
admin.site.site_header = settings.SHOP_NAME
admin.site.site_title = settings.SHOP_NAME
admin.site.site_url = reverse_lazy("dashboard")

GERMAN_DECIMALS = {models.DecimalField: {"form_class": LocalizedDecimalField}}
"""Decimal fields shown and taken as the merchant writes them ("0,04"): LocalizedDecimalField."""


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records the merchant reads but never edits or deletes (no delete action either)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class ReasonShownMixin:
    """A row's reason in the reader's language, in the list and on the (read-only) page: the
    stored text is English, its note is rendered when shown."""

    exclude = ("reason", "reason_note")
    readonly_fields = ("reason_shown",)

    @admin.display(description=_("reason"), ordering="reason")
    def reason_shown(self, obj: models.Model) -> str:
        return notes.reason_shown(obj)


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


class ReasonForm(forms.Form):
    """The reason the merchant gives for a manual pause or enable."""

    reason = forms.CharField(
        label=_("reason"),
        max_length=AdGroup._meta.get_field("manual_reason").max_length,
        help_text=_("Why, for the log, e.g. “supplier delayed until Friday”."),
    )


MANUAL_VERBS = {
    "pause": AdGroupAction.Status.PAUSED,
    "enable": AdGroupAction.Status.ENABLED,
    "release": "",
}
STATUS_SINCE_FORMAT = "j. N, H:i"
"""How the status column dates a change, with Django's localised month names ("1. Dez., 07:46")."""


def _when(moment) -> str:
    return formats.date_format(timezone.localtime(moment), STATUS_SINCE_FORMAT) if moment else "?"


def _number(value: int | None) -> str:
    return "?" if value is None else formats.localize(value)


def product_stock_text(product: WatchedProduct) -> str:
    """What the product's stock said the last time it was decided, and what decided."""
    if product.decided_at is None:
        return str(_("no stock known yet"))
    return facts.stored_sellability(product).reason.text()


def ad_group_status_text(group: AdGroup, product: WatchedProduct | None = None) -> tuple[str, str]:
    """One ad group's status words and their hover text, from the selector's annotations
    (`selectors.ad_groups_with_status`); with `product`, its stock as that product last saw it."""
    if group.missing:
        hover = _("since %(when)s; skipped until the nightly run finds it again") % {
            "when": _when(group.missing_since)
        }
        return str(group.get_missing_display()), str(hover)
    if group.manual_status:
        who = group.manual_by.get_username() if group.manual_by else "?"
        hover = _("%(reason)s (%(who)s, %(when)s)") % {
            "reason": group.manual_reason,
            "who": who,
            "when": _when(group.manual_at),
        }
        if group.manual_status == AdGroupAction.Status.PAUSED:
            return str(_("manually paused")), str(hover)
        return str(_("manually enabled")), str(hover)
    text = _ad_group_text(group, product)
    if group.last_result == AdGroupAction.Result.FAILED:
        return f"{text} · {_('last change failed')}", group.last_failure or ""
    return str(text), ""


def _ad_group_text(group: AdGroup, product: WatchedProduct | None) -> str:
    if product is None:  # the ad group's own list: no product's stock to name
        if group.held:
            return str(_("held (safety brake)"))
        if group.current == AdGroupAction.Status.PAUSED:
            return str(_("paused since %(since)s") % {"since": _when(group.since)})
        if group.current == AdGroupAction.Status.ENABLED:
            return str(_("running since %(since)s") % {"since": _when(group.since)})
        return str(_("not switched yet"))
    stock = product.stock
    values = {
        "since": _when(group.since),
        "stock": _number(stock),
        "pause_at": formats.localize(product.pause_at),
        "resume_at": formats.localize(product.resume_level),
    }
    if group.held:
        return str(_("held (safety brake) – stock %(stock)s") % values)
    if group.current == AdGroupAction.Status.PAUSED:
        if stock is not None and stock <= product.pause_at:
            return str(_("paused since %(since)s – stock %(stock)s ≤ %(pause_at)s") % values)
        if stock is not None and product.sellable is False:
            return str(
                _("paused since %(since)s – stock %(stock)s, runs again above %(resume_at)s")
                % values
            )
        return str(_("paused since %(since)s – stock %(stock)s") % values)
    if group.current == AdGroupAction.Status.ENABLED:
        return str(_("running – stock %(stock)s") % values)
    if stock is None:
        return str(_("no stock known yet"))
    return str(_("not switched yet – stock %(stock)s") % values)


def _dry_run(text: str, done: apply.Settled) -> str:
    if settings.ADS_BACKEND == "dryrun" and done.status is not None and done.error is None:
        return str(notes.note("dry_run_not_sent", reason=text))
    return text


def _ads_failed(done: apply.Settled, name: str) -> tuple[int, str]:
    return (
        messages.WARNING,
        _(
            "Google Ads did not take the change for ad group %(group)s: %(error)s The change is "
            "saved; the next stock update or the nightly reconciliation sets the ad group again."
        )
        % {"group": name, "error": failures.explain(done.error)},
    )


def _names(keys) -> dict[tuple[str, str], str]:
    """What a message calls each ad group: its name, else its id ("Ad group 555 paused")."""
    keys = set(keys)
    found = AdGroup.objects.filter(ad_group_id__in={key[1] for key in keys}).only(
        "customer_id", "ad_group_id", "name"
    )
    return {g.key: g.name or g.ad_group_id for g in found if g.key in keys}


def describe(product: WatchedProduct, settled: list[apply.Settled]) -> list[tuple[int, str]]:
    """The messages that say what deciding a watched product again did, one per ad group."""
    if not product.enabled:
        return [
            (
                messages.INFO,
                _("%(label)s is switched off: the ad groups were not changed.")
                % {"label": product.label},
            )
        ]
    return settled_messages(settled, product)


def settled_messages(
    settled: list[apply.Settled], product: WatchedProduct | None = None
) -> list[tuple[int, str]]:
    """One message per ad group settled: what it does now and why."""
    said = []
    unknown = product is not None and product.reason.get("code") in ("stock_unknown", "no_variants")
    names = _names([done.key for done in settled])
    for done in settled:
        values = {
            "label": done.label,
            "group": names.get(done.key, done.key[1]),
            "reason": done.reason,
        }
        if product is not None:
            values["label"] = product.label
        if done.error is not None:
            said.append(_ads_failed(done, values["group"]))
            continue
        if done.result == apply.MISSING:
            text = _("Ad group %(group)s is missing in Google Ads: skipped.")
        elif done.status is None and unknown:
            text = _(
                "No stock known yet for %(label)s: ad group %(group)s stays as it is until the "
                "first stock update."
            )
        elif done.status is None:
            text = _("Ad group %(group)s stays as it is: %(reason)s")
        elif done.manual:
            text = _("Ad group %(group)s is held manually; the stock does not change it.")
        elif done.result == AdGroupAction.Result.HELD:
            text = _("Ad group %(group)s: pause held by the safety brake (%(reason)s)")
        elif done.status == AdGroupAction.Status.PAUSED:
            text = _("Ad group %(group)s paused: %(reason)s")
        else:
            text = _("Ad group %(group)s running: %(reason)s")
        said.append((messages.SUCCESS, _dry_run(str(text % values), done)))
    return said


class ManualControlMixin:
    """Manual pause, enable and release of ad groups, with a reason page in between; a
    watched product's buttons act on all of its ad groups."""

    manual_url_name = ""

    def ad_groups_of(self, objects) -> list[AdGroup]:
        raise NotImplementedError

    def get_urls(self):
        manual = path(
            "<path:object_id>/manual/<str:verb>/",
            self.admin_site.admin_view(self.manual_view),
            name=self.manual_url_name,
        )
        return [manual, *super().get_urls()]

    def manual_view(self, request: HttpRequest, object_id: str, verb: str) -> HttpResponse:
        """The page's buttons: a form for the reason, then the manual change."""
        obj = self.get_object(request, object_id)
        if obj is None or verb not in MANUAL_VERBS:
            raise Http404
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        meta = self.model._meta
        change_url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
        form = ReasonForm(request.POST or None) if verb != "release" else None
        if request.method == "POST" and (form is None or form.is_valid()):
            reason = form.cleaned_data["reason"] if form is not None else ""
            self._apply_manual(request, [obj], verb, reason)
            return redirect(change_url)
        return self._reason_page(request, [obj], verb, form, action="", cancel_url=change_url)

    def _reason_page(self, request, objects, verb, form, *, action, cancel_url) -> HttpResponse:
        titles = {
            "pause": _("Pause manually"),
            "enable": _("Enable manually"),
            "release": _("Release manual control"),
        }
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": titles[verb],
            "ad_groups": self.ad_groups_of(objects),
            "form": form,
            "verb": verb,
            "action": action,
            "selected": [obj.pk for obj in objects],
            "cancel_url": cancel_url,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/automation/manual.html", context)

    def _apply_manual(self, request, objects, verb: str, reason: str) -> None:
        for group in self.ad_groups_of(objects):
            with ads.on_a_page():
                if verb == "release":
                    done = manual.release_manual(group, request.user)
                else:
                    done = manual.set_manual(group, MANUAL_VERBS[verb], reason, request.user)
            values = {"group": group.name or group.ad_group_id, "reason": reason or done.reason}
            if done.error is not None:
                level, text = _ads_failed(done, values["group"])
            elif done.result == apply.MISSING:
                level, text = (
                    messages.WARNING,
                    _("Ad group %(group)s is missing in Google Ads: skipped."),
                )
            elif verb == "pause":
                level, text = messages.SUCCESS, _("Ad group %(group)s paused manually: %(reason)s")
            elif verb == "enable":
                level, text = messages.SUCCESS, _("Ad group %(group)s enabled manually: %(reason)s")
            elif done.status is None:
                level, text = messages.INFO, _("Manual control released for ad group %(group)s.")
            elif done.status == AdGroupAction.Status.PAUSED:
                level, text = messages.SUCCESS, _("Ad group %(group)s paused: %(reason)s")
            else:
                level, text = messages.SUCCESS, _("Ad group %(group)s running: %(reason)s")
            self.message_user(request, _dry_run(str(text % values), done), level)

    def _manual_action(self, request, queryset, verb: str):
        objects = list(queryset)
        form = ReasonForm(request.POST if "confirm" in request.POST else None)
        if verb == "release" or ("confirm" in request.POST and form.is_valid()):
            reason = "" if verb == "release" else form.cleaned_data["reason"]
            self._apply_manual(request, objects, verb, reason)
            return None
        meta = self.model._meta
        return self._reason_page(
            request,
            objects,
            verb,
            form,
            action=f"{verb}_manually" if verb != "release" else "release_manual",
            cancel_url=reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"),
        )

    @admin.action(description=_("Pause manually"), permissions=["change"])
    def pause_manually(self, request: HttpRequest, queryset):
        return self._manual_action(request, queryset, "pause")

    @admin.action(description=_("Enable manually"), permissions=["change"])
    def enable_manually(self, request: HttpRequest, queryset):
        return self._manual_action(request, queryset, "enable")

    @admin.action(description=_("Release manual control"), permissions=["change"])
    def release_manual(self, request: HttpRequest, queryset):
        return self._manual_action(request, queryset, "release")


def _level_text(level) -> str:
    """ "Lager Hamburg 3", or "Laden 2 (does not count)" for a location whose stock is left out."""
    location = level.location
    if location.isdigit():  # a location Shopify has not described to us yet
        location = _("location %(id)s") % {"id": location}
    values = {"stock": _number(level.available), "location": location}
    if level.counted:
        return str(_("%(location)s %(stock)s") % values)
    return str(_("%(location)s %(stock)s (does not count)") % values)


def _ad_group_links(groups) -> str:
    url = reverse("admin:automation_adgroupaction_changelist")
    links = [
        (f"{url}?{urlencode({'customer_id': g.customer_id, 'ad_group_id': g.ad_group_id})}", g)
        for g in groups
    ]
    return format_html_join(", ", '<a href="{}">{}</a>', links) or "–"


STATUS_FIELDS = ("status", "stock_display", "decided", "stock_by_variant", "ad_group_changes")


@admin.register(WatchedProduct)
class WatchedProductAdmin(ManualControlMixin, admin.ModelAdmin):
    """The list says what matters (status per ad group, what decided, levels, stock); the rest
    is on the product's page. Every save decides the product again from the stored levels,
    after the save has committed (source `admin`). The form picks the product and the ad
    groups by name (automation/ui/setup/forms.py)."""

    form = WatchedProductForm
    manual_url_name = "automation_watchedproduct_manual"
    list_display = ("label", "product", "status", "pause_at", "resume_at", "stock_display")
    list_display_links = ("label",)
    list_editable = ("pause_at", "resume_at")
    list_filter = ("enabled", "sellable")
    search_fields = (
        "label",
        "product_id",
        "ad_groups__ad_group_id",
        "ad_groups__name",
        "ad_groups__campaign_name",
    )
    actions = ["pause_manually", "enable_manually", "release_manual"]
    readonly_fields = STATUS_FIELDS
    fieldsets = (
        (None, {"fields": ("product_id", "label", "variants", "pause_at", "resume_at", "enabled")}),
        (_("Google Ads"), {"fields": ("ad_groups",)}),
        (
            _("Status"),
            {"fields": STATUS_FIELDS},
        ),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[WatchedProduct]:
        catalogue = Product.objects.filter(product_id=OuterRef("product_id"))
        return (
            selectors.watched_products_with_status(super().get_queryset(request))
            .annotate(
                product_title=Subquery(catalogue.values("title")[:1]),
                product_status=Subquery(catalogue.values("status")[:1]),
            )
            .prefetch_related("variants")
        )

    def ad_groups_of(self, objects) -> list[AdGroup]:
        keys = {group.key for product in objects for group in product.ad_groups.all()}
        return apply.ad_group_rows(keys)

    def get_fieldsets(self, request: HttpRequest, obj=None):
        # A product not saved yet has no status to show.
        return self.fieldsets if obj is not None else self.fieldsets[:2]

    def change_view(self, request: HttpRequest, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, object_id)
        held = obj is not None and any(group.manual_status for group in obj.ad_groups.all())
        extra = {"any_manual": held, **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra)

    @admin.display(description=_("product"), ordering="product_id")
    def product(self, obj: WatchedProduct) -> str:
        title = (
            named(getattr(obj, "product_title", None), obj.product_id) if obj.product_id else "–"
        )
        status = pickers.status_text(getattr(obj, "product_status", None) or "")
        chosen = [(named(str(v), v.inventory_item_id),) for v in obj.variants.all()]
        which = format_html_join(", ", "{}", chosen) if chosen else _("all variants")
        return format_html(
            "{}{}<br><small>{}</small>",
            title,
            format_html(' <span class="product-status">({})</span>', status) if status else "",
            which,
        )

    @admin.display(description=_("status"))
    def status(self, obj: WatchedProduct) -> str:
        if obj.pk is None:
            return "–"
        if not obj.enabled:
            return str(_("switched off – not watched"))
        groups = obj.ad_groups.all()  # prefetched with their annotations: no query per row
        lines = []
        for group in groups:
            text, hover = ad_group_status_text(group, obj)
            lines.append((hover, f"{group}: {text}" if len(groups) > 1 else text))
        dry_run = settings.ADS_BACKEND == "dryrun"
        badge = (
            format_html(' <span class="dry-run-badge">{}</span>', _("dry run")) if dry_run else ""
        )
        body = format_html_join(mark_safe("<br>"), '<span title="{}">{}</span>', lines)
        decided = ""
        if obj.decided_at is not None:  # what decided: which variant and location
            decided = format_html('<div class="decided-by">{}</div>', product_stock_text(obj))
        return format_html("{}{}{}", body or "–", badge, decided)

    @admin.display(description=_("available now"), ordering="stock")
    def stock_display(self, obj: WatchedProduct) -> str:
        return "–" if obj.stock is None else formats.localize(obj.stock)

    @admin.display(description=_("last decision"))
    def decided(self, obj: WatchedProduct) -> str:
        if obj.pk is None:
            return "–"
        if obj.decided_at is None:
            return product_stock_text(obj)
        return _("%(reason)s (%(when)s)") % {
            "reason": product_stock_text(obj),
            "when": _when(obj.decided_at),
        }

    @admin.display(description=_("stock per variant and location"))
    def stock_by_variant(self, obj: WatchedProduct) -> str:
        if obj.pk is None:
            return "–"
        product = facts.product_facts([obj])[obj.pk]
        lines = []
        for variant in product.variants:
            if not variant.tracked:
                where = _("stock not tracked (never sells out)")
            elif variant.keeps_selling:
                where = _("sold on when sold out")
            elif not variant.levels:
                where = _("no stock reported yet")
            else:
                where = ", ".join(_level_text(level) for level in variant.levels)
            lines.append((variant.name, where))
        return format_html_join(mark_safe("<br>"), "{}: {}", lines) or "–"

    @admin.display(description=_("ad group changes"))
    def ad_group_changes(self, obj: WatchedProduct) -> str:
        return "–" if obj.pk is None else _ad_group_links(obj.ad_groups.all())

    # --- a save decides again ---------------------------------------------------------------

    def save_related(self, request: HttpRequest, form, formsets, change: bool) -> None:
        before = set()
        if change:
            before = {
                g.key for g in WatchedProduct.objects.get(pk=form.instance.pk).ad_groups.all()
            }
        super().save_related(request, form, formsets, change)
        for note in getattr(form, "notes", []):
            self.message_user(request, note, messages.WARNING)
        obj = form.instance
        # After the commit: an Ads error is shown, never loses the save.
        transaction.on_commit(lambda: self._decide_again(request, obj, before))

    def _decide_again(self, request: HttpRequest, obj: WatchedProduct, before: set) -> None:
        with ads.on_a_page():
            settled = apply.redecide([obj.pk], source=AdGroupAction.Source.ADMIN, also=before)
        obj.refresh_from_db()
        for level, text in describe(obj, settled):
            self.message_user(request, text, level)


@admin.register(AdGroup)
class AdGroupAdmin(ManualControlMixin, admin.ModelAdmin):
    """The ad groups we switch: name, campaign, status, manual state, whether Google Ads still
    has them, and the watched products that control them."""

    formfield_overrides = GERMAN_DECIMALS

    form = AdGroupForm
    manual_url_name = "automation_adgroup_manual"
    list_display = ("__str__", "campaign_name", "ad_group_id", "account", "status", "watched_by")
    list_filter = ("manual_status", "missing")
    search_fields = ("name", "campaign_name", "ad_group_id")
    actions = ["pause_manually", "enable_manually", "release_manual"]
    readonly_fields = (
        "status",
        "watched_by",
        "manual_status",
        "manual_reason",
        "manual_by",
        "manual_at",
        "missing_since",
        "ad_group_changes",
    )
    fields = (
        "name",
        "campaign_name",
        "customer_id",
        "ad_group_id",
        "status",
        "watched_by",
        "manual_status",
        "manual_reason",
        "manual_by",
        "manual_at",
        "missing",
        "missing_since",
        "clicks_per_day",
        "cost_per_click",
        "ad_group_changes",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[AdGroup]:
        return selectors.ad_groups_with_status(super().get_queryset(request)).prefetch_related(
            "watched_products"
        )

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        # Which ad group a row is stays fixed: its history and Google's state are keyed by it.
        fixed = ("customer_id", "ad_group_id") if obj is not None else ()
        return (*fixed, *self.readonly_fields)

    def ad_groups_of(self, objects) -> list[AdGroup]:
        return list(objects)

    @admin.display(description=_("account"), ordering="customer_id")
    def account(self, obj: AdGroup) -> str:
        return dashed(obj.customer_id)

    @admin.display(description=_("status"))
    def status(self, obj: AdGroup) -> str:
        if obj.pk is None:
            return "–"
        text, hover = ad_group_status_text(obj)
        return format_html('<span title="{}">{}</span>', hover, text)

    @admin.display(description=_("watched products"))
    def watched_by(self, obj: AdGroup) -> str:
        if obj.pk is None:
            return "–"
        links = [
            (reverse("admin:automation_watchedproduct_change", args=[product.pk]), product.label)
            for product in obj.watched_products.all()
        ]
        return format_html_join(", ", '<a href="{}">{}</a>', links) or "–"

    @admin.display(description=_("ad group changes"))
    def ad_group_changes(self, obj: AdGroup) -> str:
        return "–" if obj.pk is None else _ad_group_links([obj])


@admin.register(Location)
class LocationAdmin(admin.ModelAdmin):
    """Where stock is kept; the merchant decides whether a location's stock counts. A change
    decides every watched product with stock there again, at once."""

    list_display = (
        "__str__",
        "location_id",
        "fulfills_online_orders",
        "is_active",
        "counting",
        "counted_now",
    )
    list_editable = ("counting",)
    readonly_fields = ("location_id", "name", "fulfills_online_orders", "is_active", "counted_now")
    fields = (*readonly_fields[:4], "counting", "counted_now")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # Shopify's: the nightly run lists them; a deleted row would count again

    @admin.display(description=_("counts now"), boolean=True)
    def counted_now(self, obj: Location) -> bool:
        return obj.counted

    def save_model(self, request: HttpRequest, obj: Location, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if "counting" in form.changed_data:
            transaction.on_commit(lambda: self._decide_again(request, obj))

    def _decide_again(self, request: HttpRequest, obj: Location) -> None:
        with ads.on_a_page():
            settled = apply.redecide_counting(obj.location_id)
        text = (
            _("Stock at %(location)s counts now.")
            if obj.counted
            else _("Stock at %(location)s no longer counts.")
        ) % {"location": obj}
        if not settled:
            text = _("%(text)s No watched product has stock there.") % {"text": text}
        self.message_user(request, text, messages.INFO)
        for level, line in settled_messages(settled):
            self.message_user(request, line, level)


class VariantInline(admin.TabularInline):
    """A product's variants, as Shopify last described them (read only)."""

    model = Variant
    fields = ("__str__", "sku", "inventory_item_id", "tracked", "inventory_policy", "deleted_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Product)
class ProductAdmin(ReadOnlyAdmin):
    """The shop's products as far as the stock needs them (kept from Shopify, read only)."""

    list_display = ("__str__", "product_id", "status", "updated_at", "deleted_at")
    list_filter = ("status",)
    search_fields = ("title", "product_id")
    inlines = [VariantInline]


@admin.register(Variant)
class VariantAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "product", "sku", "inventory_item_id", "tracked", "inventory_policy")
    search_fields = ("title", "sku", "inventory_item_id", "variant_id")
    list_select_related = ("product",)


@admin.register(AdGroupAction)
class AdGroupActionAdmin(ReasonShownMixin, ReadOnlyAdmin):
    list_display = (
        "requested_at",
        "ad_group",
        "desired_status",
        "result",
        "source",
        "reason_shown",
        "delivery",
        "applied_at",
    )
    list_filter = ("desired_status", "result", "source", "customer_id")
    search_fields = ("ad_group_id", "reason")
    date_hierarchy = "requested_at"
    list_select_related = ("delivery",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[AdGroupAction]:
        return super().get_queryset(request).annotate(ad_group_name=ad_group_name_of_row())

    @admin.display(description=_("ad group"), ordering="ad_group_id")
    def ad_group(self, obj: AdGroupAction) -> str:
        """The ad group by its name (from the same query), its id on hover."""
        return named(getattr(obj, "ad_group_name", ""), obj.ad_group_id)


# The latest instant Python's datetime holds in every time zone the admin may show it in.
LOADABLE_UNTIL = datetime(9999, 12, 30, tzinfo=UTC)


@admin.register(StockLevel)
class StockLevelAdmin(ReadOnlyAdmin):
    list_display = (
        "item",
        "location",
        "available",
        "shopify_updated_at",
        "recorded_at",
    )
    search_fields = ("inventory_item_id", "location_id")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        """The list reads Shopify's timestamp capped at what Python can load: a level stored
        from beyond year 9999 (before the parsers refused such times) does not take it down."""
        shown = Least("updated_at", Value(LOADABLE_UNTIL, output_field=DateTimeField()))
        variant = Variant.objects.filter(inventory_item_id=OuterRef("inventory_item_id"))
        location = Location.objects.filter(location_id=OuterRef("location_id"))
        return (
            super()
            .get_queryset(request)
            .defer("updated_at")
            .annotate(
                shown_updated_at=shown,
                product_title=Subquery(variant.values("product__title")[:1]),
                variant_title=Subquery(variant.values("title")[:1]),
                variant_sku=Subquery(variant.values("sku")[:1]),
                location_name=Subquery(location.values("name")[:1]),
            )
        )

    @admin.display(description=_("variant"), ordering="inventory_item_id")
    def item(self, level: StockLevel) -> str:
        """The product and variant the level is for, the inventory item id on hover."""
        return named(
            item_name(level.product_title, level.variant_title, level.variant_sku),
            level.inventory_item_id,
        )

    @admin.display(description=_("location"), ordering="location_id")
    def location(self, level: StockLevel) -> str:
        return named(level.location_name, level.location_id)

    @admin.display(description=_("updated at"), ordering="updated_at")
    def shopify_updated_at(self, level: StockLevel) -> datetime:
        return level.shown_updated_at


PREVIEW_ADDRESS = "kundin@example.com"
"""Who the preview is addressed to when the signed-in user has no address."""


def preview_arms(config: ReminderSettings) -> list[str]:
    """The reminders the preview can show: plain, and with discount once a code is set."""
    arms = [ReminderDecision.Arm.PLAIN.value]
    if config.discount_code.strip():
        arms.append(ReminderDecision.Arm.DISCOUNT.value)
    return arms


def _user_url(request: HttpRequest) -> str:
    """The signed-in user's own admin page, where the e-mail address is entered."""
    meta = request.user._meta
    try:
        return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[request.user.pk])
    except NoReverseMatch:
        return ""


@admin.register(ReminderSettings)
class ReminderSettingsAdmin(SingletonSettingsAdmin):
    """One row; the list view goes straight to it and warns when no imprint or no discount code
    is set; the preview shows the mail as sent and sends it to the signed-in user."""

    formfield_overrides = GERMAN_DECIMALS

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

    def get_fieldsets(self, request: HttpRequest, obj=None):
        mail = (
            _("Reminder mail"),
            {
                "fields": (
                    "mail_sender_name",
                    "mail_subject",
                    "mail_greeting",
                    "mail_body",
                    "mail_imprint",
                ),
                "description": _(
                    "Your text, as plain text. The imprint and the unsubscribe link end every "
                    "reminder, whatever the text says. The preview shows the mail as it is sent."
                ),
            },
        )
        return (*self.fieldsets, mail)

    def get_urls(self):
        own = [
            path(
                "preview/",
                self.admin_site.admin_view(self.preview_view),
                name="automation_remindersettings_preview",
            ),
            path(
                "preview/test/",
                self.admin_site.admin_view(self.test_mail_view),
                name="automation_remindersettings_test_mail",
            ),
        ]
        return own + super().get_urls()

    def _settings_to_preview(self, request: HttpRequest) -> tuple[ReminderSettings, object]:
        """The saved settings, or the unsaved values the change form posted (`_draft`), with
        that form (None without a draft); a draft that does not validate shows the saved
        settings beside the form's errors. Nothing is saved."""
        config = ReminderSettings.load()
        if request.method != "POST" or "_draft" not in request.POST:
            return config, None
        if not self.has_change_permission(request, config):
            raise PermissionDenied
        form = self.get_form(request, config, change=True)(request.POST, instance=config)
        if form.is_valid():
            return form.save(commit=False), form
        return ReminderSettings.load(), form

    def preview_view(self, request: HttpRequest) -> HttpResponse:
        """The reminder as it would be sent now, with a sample basket, in both parts."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        config, draft = self._settings_to_preview(request)
        arms = preview_arms(config)
        arm = request.POST.get("arm") or request.GET.get("arm", arms[-1])
        if arm not in arms:
            raise Http404
        address = request.user.email or PREVIEW_ADDRESS
        rendered = reminder_mail.render(reminder_mail.sample_checkout(address), arm, config)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Preview of the reminder"),
            "rendered": rendered,
            "to": address,
            "arm": arm,
            "arms": [(value, ReminderDecision.Arm(value).label) for value in arms],
            "imprint_missing": reminder_mail.imprint_missing(config),
            "settings_url": reverse("admin:automation_remindersettings_change", args=[config.pk]),
            "can_send": self.has_change_permission(request),
            "has_address": bool(request.user.email),
            "user_url": _user_url(request),
            "placeholders": [(f"{{{name}}}", text) for name, text in PLACEHOLDERS.items()],
            "draft": draft,
            "draft_fields": [
                (name, value)
                for name, values in request.POST.lists()
                if name not in ("csrfmiddlewaretoken", "arm", "_draft")
                for value in values
            ]
            if draft is not None and draft.is_valid()
            else [],
        }
        return TemplateResponse(request, "admin/automation/remindersettings/preview.html", context)

    def test_mail_view(self, request: HttpRequest) -> HttpResponse:
        """POST: the preview as a mail to the signed-in user's own address."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_change_permission(request):
            raise PermissionDenied
        config, draft = self._settings_to_preview(request)
        if draft is not None and not draft.is_valid():
            raise PermissionDenied  # the preview offers no test of a draft that failed
        arm = request.POST.get("arm", "")
        if arm not in preview_arms(config):
            raise Http404
        back = f"{reverse('admin:automation_remindersettings_preview')}?{urlencode({'arm': arm})}"
        address = request.user.email
        if not address:
            self.message_user(
                request,
                _(
                    "Your user account has no e-mail address: enter it on your user page "
                    "(“Users” in the menu, or the link on this page), then send the test again."
                ),
                messages.ERROR,
            )
            return redirect(back)
        try:
            reminder_mail.send_preview(
                config, arm, address, timeout=settings.VENDOR_INTERACTIVE_TIMEOUT
            )
        except Exception as err:  # noqa: BLE001 (shown to the merchant, who may retry)
            self.message_user(request, failures.explain(err), messages.ERROR)
            return redirect(back)
        self.message_user(request, _("Test reminder sent to %(address)s.") % {"address": address})
        return redirect(back)

    def change_view(self, request: HttpRequest, object_id, form_url="", extra_context=None):
        config = ReminderSettings.load()
        if reminder_mail.imprint_missing(config):
            self.message_user(
                request,
                _("No imprint: no reminder is sent until you enter it under “Reminder mail”."),
                messages.ERROR,
            )
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
    formfield_overrides = GERMAN_DECIMALS
    list_display = ("__str__", "rate", "variant", "product", "sku", "vendor", "note")
    list_editable = ("rate",)
    search_fields = ("sku", "vendor", "note")

    def get_queryset(self, request: HttpRequest) -> QuerySet[MarginRule]:
        """The variant and product names from the catalogue, in the list's one query."""
        variant = Variant.objects.filter(variant_id=OuterRef("variant_id"))
        product = Product.objects.filter(product_id=OuterRef("product_id"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                variant_product_title=Subquery(variant.values("product__title")[:1]),
                variant_title=Subquery(variant.values("title")[:1]),
                variant_sku=Subquery(variant.values("sku")[:1]),
                product_title=Subquery(product.values("title")[:1]),
            )
        )

    @admin.display(description=_("variant"), ordering="variant_id")
    def variant(self, obj: MarginRule) -> str:
        if obj.variant_id is None:
            return "–"
        title = item_name(
            getattr(obj, "variant_product_title", None),
            getattr(obj, "variant_title", None),
            getattr(obj, "variant_sku", None),
        )
        return named(title, obj.variant_id)

    @admin.display(description=_("product"), ordering="product_id")
    def product(self, obj: MarginRule) -> str:
        if obj.product_id is None:
            return "–"
        return named(getattr(obj, "product_title", None), obj.product_id)


@admin.register(ReminderDecision)
class ReminderDecisionAdmin(ReasonShownMixin, ReadOnlyAdmin):
    list_display = (
        "decided_at",
        "masked_email",
        "arm",
        "reason_shown",
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


class SuppressionReasonFilter(admin.SimpleListFilter):
    """The written reasons by their labels; the merchant's own texts are searched, not listed."""

    title = _("reason")
    parameter_name = "reason"

    def lookups(self, request, model_admin):
        return SuppressedAddress.Reason.choices

    def queryset(self, request, queryset):
        return queryset.filter(reason=self.value()) if self.value() else queryset


@admin.register(SuppressedAddress)
class SuppressedAddressAdmin(admin.ModelAdmin):
    list_display = ("email", "why", "detail", "created_at")
    list_filter = (SuppressionReasonFilter,)
    search_fields = ("email",)

    @admin.display(description=_("reason"), ordering="reason")
    def why(self, obj: SuppressedAddress) -> str:
        """A written reason's label (hard bounce, complaint); the merchant's own text as is."""
        try:
            return SuppressedAddress.Reason(obj.reason).label
        except ValueError:
            return obj.reason


@admin.register(DataRequest)
class DataRequestAdmin(admin.ModelAdmin):
    list_display = ("received_at", "customer_email", "customer_id", "shop_domain", "handled")
    list_editable = ("handled",)
    readonly_fields = ("shop_domain", "customer_email", "customer_id", "orders_requested")


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


# --- the safety brake: its settings and the pauses it held ---------------------------------


@admin.register(BrakeSettings)
class BrakeSettingsAdmin(SingletonSettingsAdmin):
    """One row ("Notbremse"); the list view goes straight to it."""

    fields = ("enabled", "window_minutes", "max_share_percent", "max_count")


@admin.register(HeldChange)
class HeldChangeAdmin(ReasonShownMixin, ReadOnlyAdmin):
    """Pauses the brake held, with "apply all" and "discard all" for the open ones."""

    change_list_template = "admin/automation/heldchange/change_list.html"
    list_display = (
        "held_at",
        "ad_group",
        "desired_status",
        "reason_shown",
        "resolution",
        "resolved_by",
        "resolved_at",
        "outcome",
    )
    list_filter = ("resolution", "source")
    search_fields = ("ad_group_id", "reason")
    list_select_related = ("resolved_by",)
    actions = ["apply_selected", "discard_selected"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[HeldChange]:
        return super().get_queryset(request).annotate(ad_group_name=ad_group_name_of_row())

    @admin.display(description=_("ad group"), ordering="ad_group_id")
    def ad_group(self, obj: HeldChange) -> str:
        """The ad group by its name (from the same query), its id on hover."""
        return named(getattr(obj, "ad_group_name", ""), obj.ad_group_id)

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
            with ads.on_a_page():
                decided = held_changes.apply(queryset, request.user)
            message = _(
                "Applied %(count)d held changes: each ad group got the status its stock says now."
            )
        else:
            decided = held_changes.discard(queryset, request.user)
            message = _("Discarded %(count)d held changes: the ads stay as they are.")
        self.message_user(request, message % {"count": decided.decided}, messages.SUCCESS)
        names = dict(
            AdGroup.objects.filter(
                ad_group_id__in={ad_group_id for ad_group_id, _error in decided.failures}
            ).values_list("ad_group_id", "name")
        )
        for ad_group_id, error in decided.failures:
            text = _("Ad group %(group)s: %(error)s") % {
                "group": names.get(ad_group_id) or ad_group_id,
                "error": failures.explain(error),
            }
            self.message_user(request, text, messages.ERROR)

    def _confirm_page(
        self, request: HttpRequest, changes: list[HeldChange], how: str, *, action: str = ""
    ) -> HttpResponse:
        """What a decision will do, before it is done: how many changes, which ad groups."""
        count = len(changes)
        if how == "apply":
            title = _("Apply held changes")
            effect = ngettext(
                "%(count)d held change will be applied: its ad group gets the status its stock "
                "says now, sent to Google Ads (it may have recovered since and keep running).",
                "%(count)d held changes will be applied: each ad group gets the status its stock "
                "says now, sent to Google Ads (some may have recovered since and keep running).",
                count,
            )
            button = _("Yes, apply")
        else:
            title = _("Discard held changes")
            effect = ngettext(
                "%(count)d held change will be discarded: nothing is sent, the ad group keeps "
                "running as it is.",
                "%(count)d held changes will be discarded: nothing is sent, the ad groups keep "
                "running as they are.",
                count,
            )
            button = _("Yes, discard")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": title,
            "effect": effect % {"count": count},
            "button": button,
            "changes": changes,
            "action": action,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "cancel_url": reverse("admin:automation_heldchange_changelist"),
        }
        return TemplateResponse(request, "admin/automation/heldchange/confirm.html", context)

    def _shown(self, request: HttpRequest, queryset: QuerySet[HeldChange]) -> list[HeldChange]:
        """The open changes of `queryset` with their ad groups' names, oldest first."""
        return list(
            self.get_queryset(request)
            .filter(pk__in=queryset.values("pk"), resolution=HeldChange.Resolution.OPEN)
            .order_by("held_at", "pk")
        )

    def _decide_all(self, request: HttpRequest, how: str):
        """GET shows what will happen; only the confirming POST decides, and only on the
        changes that page showed (a pause held meanwhile waits for its own decision)."""
        if not self.has_decide_permission(request):
            raise PermissionDenied
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            shown = request.POST.getlist("change")
            ids = [int(pk) for pk in shown if pk.isdigit()]
            self._decide(request, held_changes.open_changes().filter(pk__in=ids), how)
            return redirect("admin:automation_heldchange_changelist")
        changes = self._shown(request, held_changes.open_changes())
        if not changes:
            self.message_user(request, _("No held change is waiting."), messages.INFO)
            return redirect("admin:automation_heldchange_changelist")
        return self._confirm_page(request, changes, how)

    def has_decide_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("automation.change_heldchange")

    def apply_all_view(self, request: HttpRequest):
        return self._decide_all(request, "apply")

    def discard_all_view(self, request: HttpRequest):
        return self._decide_all(request, "discard")

    def _decide_selected(self, request: HttpRequest, queryset: QuerySet[HeldChange], how: str):
        if request.POST.get("confirm") == "yes":
            self._decide(request, queryset, how)
            return None
        changes = self._shown(request, queryset)
        if not changes:
            self.message_user(request, _("None of the selected changes is open."), messages.INFO)
            return None
        return self._confirm_page(request, changes, how, action=f"{how}_selected")

    @admin.action(
        description=_("Apply selected held changes (send what the stock says now)"),
        permissions=["decide"],
    )
    def apply_selected(self, request: HttpRequest, queryset: QuerySet[HeldChange]):
        return self._decide_selected(request, queryset, "apply")

    @admin.action(
        description=_("Discard selected held changes (keep the ads as they are)"),
        permissions=["decide"],
    )
    def discard_selected(self, request: HttpRequest, queryset: QuerySet[HeldChange]):
        return self._decide_selected(request, queryset, "discard")
