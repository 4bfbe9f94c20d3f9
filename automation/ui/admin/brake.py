"""The safety brake: its settings and the pauses it held."""

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from automation.google_ads import statuses as ads
from automation.models import (
    AdGroup,
    BrakeSettings,
    HeldChange,
)
from automation.platform.display_names import ad_group_name_of_row, named
from automation.stock import held_changes
from automation.ui.admin.base import (
    OwnPagesMixin,
    ReadOnlyAdmin,
    ReasonShownMixin,
    SingletonSettingsAdmin,
)
from automation.ui.setup import failures


@admin.register(BrakeSettings)
class BrakeSettingsAdmin(SingletonSettingsAdmin):
    """One row ("Notbremse"); the list view goes straight to it."""

    fields = ("enabled", "window_minutes", "max_share_percent", "max_count")


@admin.register(HeldChange)
class HeldChangeAdmin(OwnPagesMixin, ReasonShownMixin, ReadOnlyAdmin):
    """Pauses the brake held, with "apply all" and "discard all" for the open ones."""

    own_pages = (
        ("apply-all/", "apply_all_view", "automation_heldchange_apply_all"),
        ("discard-all/", "discard_all_view", "automation_heldchange_discard_all"),
    )

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
