"""What needs the merchant now: the notice bar on every admin page and the dashboard.

Each kind of trouble is one cheap read (a COUNT, an EXISTS or a MAX over an index) and turns
into a German sentence with a link to where it is resolved; it disappears once resolved. A
notice is shown only to who may open its link (the model's view permission).

Kinds: the safety brake holding pauses; deliveries given up; a failing connection (the newest
nightly run's errors, and watched ad groups whose last Google Ads call failed: the set-up
page's tests store no result, so those are not a source); reminders skipped because Shopify
sent no e-mail address (no access to protected customer data); ad groups removed in Google
Ads that still control a product; and nobody receiving alerts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Exists, Max, OuterRef, Q, Subquery
from django.http import HttpRequest
from django.urls import reverse
from django.utils import formats, timezone, translation
from django.utils.functional import SimpleLazyObject
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from automation.models import (
    AdGroup,
    AdGroupAction,
    CheckoutState,
    Delivery,
    HeldChange,
    ReconcileRun,
    ReminderDecision,
)
from automation.platform import alerts
from automation.platform.masking import mask_secrets
from automation.reminders import checkouts

NO_ADDRESS_DAYS = 7
"""How far back a reminder skipped for lack of an address still makes a notice."""

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Notice:
    """One thing that needs the merchant: what (German), where to resolve it, how bad."""

    key: str
    text: str
    url: str
    link_text: str
    severity: str = ERROR


def held_pauses() -> Notice | None:
    count = HeldChange.objects.filter(resolution=HeldChange.Resolution.OPEN).count()
    if not count:
        return None
    text = ngettext(
        "The safety brake holds %(count)d pause: the ad keeps running until you apply or "
        "discard it.",
        "The safety brake holds %(count)d pauses: the ads keep running until you apply or "
        "discard them.",
        count,
    ) % {"count": count}
    url = reverse("admin:automation_heldchange_changelist") + "?resolution__exact=open"
    return Notice("brake", text, url, _("Decide"))


def dead_deliveries() -> Notice | None:
    count = Delivery.objects.filter(status=Delivery.Status.DEAD).count()
    if not count:
        return None
    text = ngettext(
        "%(count)d delivery was given up: fix the cause, then replay it.",
        "%(count)d deliveries were given up: fix the cause, then replay them.",
        count,
    ) % {"count": count}
    url = reverse("admin:automation_delivery_changelist") + "?status__exact=dead"
    return Notice("dead_deliveries", text, url, _("Show deliveries"))


def failing_nightly_run() -> Notice | None:
    run = ReconcileRun.objects.exclude(status=ReconcileRun.Status.RUNNING).first()
    if run is None or run.status != ReconcileRun.Status.ERRORS:
        return None
    first = mask_secrets(str(run.errors[0])) if run.errors else ""  # stored vendor text
    text = _("The nightly check on %(date)s could not reach everything it needs: %(error)s") % {
        "date": formats.date_format(run.local_date, "SHORT_DATE_FORMAT"),
        "error": first[:200],
    }
    url = reverse("admin:automation_reconcilerun_change", args=[run.pk])
    return Notice("connection_nightly", text, url, _("Show the run"))


def failing_ads_calls() -> Notice | None:
    last = AdGroupAction.objects.filter(
        customer_id=OuterRef("customer_id"), ad_group_id=OuterRef("ad_group_id")
    ).order_by("-requested_at", "-pk")
    count = (
        AdGroup.objects.filter(watched_products__enabled=True, demo=False)
        .distinct()
        .annotate(last_result=Subquery(last.values("result")[:1]))
        .filter(last_result=AdGroupAction.Result.FAILED)
        .count()
    )
    if not count:
        return None
    text = ngettext(
        "Google Ads: the last change of %(count)d ad group failed; it may not have the status "
        "its stock says.",
        "Google Ads: the last change of %(count)d ad groups failed; they may not have the "
        "status their stock says.",
        count,
    ) % {"count": count}
    url = reverse("admin:automation_adgroup_changelist")
    return Notice("connection_ads", text, url, _("Show ad groups"))


def _skipped_for_no_address() -> Q:
    """Decisions skipped for lack of an address: by their reason's code, or (rows written before
    reasons had codes) by the text as stored, in the shop's language or English."""
    texts = set()
    for language in (settings.LANGUAGE_CODE, "en"):
        with translation.override(language):
            texts.add(str(checkouts.NO_ADDRESS))
    return Q(reason_note__code=checkouts.NO_ADDRESS.code) | Q(
        reason_note__isnull=True, reason__in=texts
    )


def reminders_without_address(now=None) -> Notice | None:
    """Shopify's checkouts came without an address lately, and none with one since: the app
    most likely lacks access to protected customer data (Shopify then redacts e-mail, name
    and phone)."""
    since = (now or timezone.now()) - timedelta(days=NO_ADDRESS_DAYS)
    decisions = ReminderDecision.objects.filter(
        decided_at__gte=since, checkout__source=CheckoutState.Source.SHOPIFY
    )
    skipped = decisions.filter(_skipped_for_no_address(), arm=ReminderDecision.Arm.NONE)
    newest = skipped.aggregate(at=Max("decided_at"))["at"]
    if newest is None:
        return None
    if decisions.exclude(email="").filter(decided_at__gt=newest).exists():
        return None
    count = skipped.count()
    text = ngettext(
        "%(count)d reminder in the last %(days)d days was not sent: Shopify sent no e-mail "
        "address. Grant the app access to protected customer data (name and e-mail) in "
        "Shopify.",
        "%(count)d reminders in the last %(days)d days were not sent: Shopify sent no e-mail "
        "address. Grant the app access to protected customer data (name and e-mail) in "
        "Shopify.",
        count,
    ) % {"count": count, "days": NO_ADDRESS_DAYS}
    url = reverse("admin:automation_reminderdecision_changelist") + "?arm__exact=none"
    return Notice("no_address", text, url, _("Show decisions"), WARNING)


def missing_ad_groups() -> Notice | None:
    watched = AdGroup.objects.filter(pk=OuterRef("pk"), watched_products__enabled=True).values("pk")
    groups = list(
        AdGroup.objects.exclude(missing=AdGroup.Missing.NO)
        .filter(Exists(watched))
        .order_by("name", "ad_group_id")[:6]
    )
    if not groups:
        return None
    names = ", ".join(str(group) for group in groups[:5]) + (" …" if len(groups) > 5 else "")
    text = ngettext(
        "Removed or not found in Google Ads: %(names)s. Choose another ad group for its products.",
        "Removed or not found in Google Ads: %(names)s. Choose other ad groups for their products.",
        len(groups),
    ) % {"names": names}
    if len(groups) == 1:
        url = reverse("admin:automation_adgroup_change", args=[groups[0].pk])
    else:
        url = reverse("admin:automation_adgroup_changelist")
    return Notice("missing_ad_groups", text, url, _("Show ad groups"))


def nobody_alerted() -> Notice | None:
    if alerts.recipients():
        return None
    text = _(
        "Nobody receives alerts: enter your e-mail address, or set ALERT_EMAILS, so that "
        "trouble reaches you."
    )
    url = reverse("setup-email")
    return Notice("nobody_alerted", text, url, _("Enter your e-mail address"), WARNING)


KINDS = (
    ("automation.view_heldchange", held_pauses),
    ("automation.view_delivery", dead_deliveries),
    ("automation.view_reconcilerun", failing_nightly_run),
    ("automation.view_adgroup", failing_ads_calls),
    ("automation.view_reminderdecision", reminders_without_address),
    ("automation.view_adgroup", missing_ad_groups),
    (None, nobody_alerted),
)
"""Each kind with the permission its link needs, most urgent first."""


def current(user: AbstractBaseUser | AnonymousUser) -> list[Notice]:
    """The notices for this user: staff only, each kind only with its link's permission."""
    if not (user.is_authenticated and user.is_active and user.is_staff):
        return []
    found = []
    for permission, kind in KINDS:
        if permission is not None and not user.has_perm(permission):
            continue
        notice = kind()
        if notice is not None:
            found.append(notice)
    return found


def context(request: HttpRequest) -> dict[str, object]:
    """Template context processor: `trouble_notices`, read only when a page shows it."""
    user = getattr(request, "user", None) or AnonymousUser()
    return {"trouble_notices": SimpleLazyObject(lambda: current(user))}
