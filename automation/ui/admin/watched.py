"""Watched products and ad groups: edited here, with the manual pause and enable and the
status the stock rule gave them."""

from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from automation.google_ads import statuses as ads
from automation.models import (
    AdGroup,
    AdGroupAction,
    Product,
    WatchedProduct,
)
from automation.platform import notes
from automation.platform.display_names import named
from automation.stock import apply, facts, manual, selectors
from automation.ui.admin.base import (
    GERMAN_DECIMALS,
    OwnPagesMixin,
)
from automation.ui.setup import failures, pickers
from automation.ui.setup.forms import AdGroupForm, WatchedProductForm, dashed


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


class ManualControlMixin(OwnPagesMixin):
    """Manual pause, enable and release of ad groups, with a reason page in between; a
    watched product's buttons act on all of its ad groups."""

    @property
    def own_pages(self) -> tuple[tuple[str, str, str], ...]:
        return (("<path:object_id>/manual/<str:verb>/", "manual_view", self.manual_url_name),)

    manual_url_name = ""

    def ad_groups_of(self, objects) -> list[AdGroup]:
        raise NotImplementedError

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
