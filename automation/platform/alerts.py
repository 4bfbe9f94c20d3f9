"""E-mails to the merchant when something needs a human.

Alerts are written in the shop's language (LANGUAGE_CODE), whoever's request or job caused
them. Alerts that can come in floods (dead deliveries, reminders and promotion edges whose
retries are spent) mail at most once per ALERT_WINDOW and kind: `claim_mail` is the one owner
of "may this kind mail now?"; what it holds back is counted, and the next mail of the kind (a
new alert after the window, or `send_held` from cron) reports how many happened since.
"""

import functools
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import formats, timezone, translation
from django.utils.translation import gettext, ngettext

from automation.models import AdGroup, AlertSlot, BrakeEpisode, Delivery, Promotion, WatchedProduct
from automation.platform import mail_server, notes

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

ALERT_WINDOW = timedelta(hours=1)
"""At most one mail per kind of grouped alert within this time."""
DELIVERY_DEAD = "delivery_dead"
REMINDER_FAILED = "reminder_failed"
PROMOTION_FAILED = "promotion_failed"


def in_shop_language(func: Callable[P, R]) -> Callable[P, R]:
    """Render the alert in the shop's language, not in the active one of whoever caused it."""

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with translation.override(settings.LANGUAGE_CODE):
            return func(*args, **kwargs)

    return run


def admin_url(delivery: Delivery) -> str:
    """An absolute link to the delivery in the admin, for the e-mail."""
    path = reverse("admin:automation_delivery_change", args=[delivery.pk])
    return f"{settings.PUBLIC_BASE_URL}{path}"


def recipients() -> list[str]:
    """Who gets the alerts: ALERT_EMAILS when set, else every active staff user with an
    address (superusers who may sign in to the admin are staff), each address once.

    The one owner of this answer: the alerts, the set-up page and the notice bar ask it.
    Staff only, because every alert links into the admin; a superuser without staff status
    cannot open those links and is not mailed.
    """
    if settings.ALERT_EMAILS:
        return list(settings.ALERT_EMAILS)
    users = (
        get_user_model()
        .objects.filter(is_active=True, is_staff=True)
        .exclude(email="")
        .order_by("pk")
        .values_list("email", flat=True)
    )
    seen: dict[str, str] = {}
    for address in users:
        seen.setdefault(address.strip().lower(), address.strip())
    return [address for address in seen.values() if address]


def send(subject: str, body: str) -> bool:
    """E-mail the merchant's alert addresses; never raises (an alert must not fail a job)."""
    try:
        to = recipients()
    except Exception:
        logger.exception("alert not sent, its recipients could not be read: %s", subject)
        return False
    if not to:
        logger.warning("alert not sent, nobody receives alerts: %s", subject)
        return False
    problem = mail_server.mail_server_problem()
    if problem:
        logger.warning("alert not sent, %s: %s", problem, subject)
        return False
    try:
        send_mail(subject, body, None, to)
    except Exception:
        logger.exception("could not send the alert %r", subject)
        return False
    return True


def _local(when: datetime) -> str:
    """A time as the shop reads it: its time zone, its language's format."""
    return formats.date_format(timezone.localtime(when), "SHORT_DATETIME_FORMAT")


# --- grouping: at most one mail per kind and window ------------------------------------------


def claim_mail(kind: str, now: datetime | None = None) -> int:
    """Record one alert of `kind`: how many alerts the mail sent now reports (this one and
    those held back since the last mail), or 0 when the kind mailed within ALERT_WINDOW and
    this one is held back for the next mail.

    The kind's row is locked while deciding (INSERT … ON CONFLICT DO NOTHING creates it), so
    of two workers deciding at once, one mails and the other counts.
    """
    now = now or timezone.now()
    AlertSlot.objects.bulk_create([AlertSlot(kind=kind)], ignore_conflicts=True)
    with transaction.atomic():
        slot = AlertSlot.objects.select_for_update().get(kind=kind)
        if slot.mailed_at is not None and now - slot.mailed_at < ALERT_WINDOW:
            slot.held += 1
            slot.held_since = slot.held_since or now
            slot.save(update_fields=["held", "held_since"])
            return 0
        count = slot.held + 1
        slot.held, slot.held_since, slot.mailed_at = 0, None, now
        slot.save(update_fields=["held", "held_since", "mailed_at"])
    return count


def _unclaim(kind: str, count: int, since: datetime | None) -> None:
    """A mail that could not go out: its alerts wait for the next mail of the kind."""
    AlertSlot.objects.filter(kind=kind).update(
        held=F("held") + count, held_since=Coalesce(F("held_since"), since or timezone.now())
    )


def _send_counted(kind: str, count: int, subject: str, body: str) -> bool:
    if send(subject, body):
        return True
    _unclaim(kind, count, None)
    return False


def _since_last_mail(count: int, what: Callable[[int], str]) -> str:
    """The line a grouped mail adds when it reports alerts held back before it."""
    if count <= 1:
        return ""
    others = count - 1
    return "\n\n" + ngettext(
        "%(count)d more (%(what)s) happened since the last mail of this kind; alerts of a kind "
        "are mailed at most once an hour.",
        "%(count)d more (%(what)s) happened since the last mail of this kind; alerts of a kind "
        "are mailed at most once an hour.",
        others,
    ) % {"count": others, "what": what(others)}


def _deliveries(n: int) -> str:
    return ngettext("delivery given up", "deliveries given up", n)


def _reminders(n: int) -> str:
    return ngettext("reminder not sent", "reminders not sent", n)


def _promotion_edges(n: int) -> str:
    return ngettext("promotion not switched", "promotions not switched", n)


HELD_TEXT: dict[str, tuple[Callable[[int], str], str]] = {
    DELIVERY_DEAD: (_deliveries, "admin:automation_delivery_changelist"),
    REMINDER_FAILED: (_reminders, "admin:automation_reminderdecision_changelist"),
    PROMOTION_FAILED: (_promotion_edges, "admin:automation_promotion_changelist"),
}
"""Per grouped kind: what its alerts are called in a count, and the admin list to look at."""


@in_shop_language
def send_held(now: datetime | None = None) -> int:
    """Mail each kind whose alerts were held back and whose window has passed, with the count;
    returns how many mails went out (cron: `automation.cron`)."""
    now = now or timezone.now()
    due: list[tuple[str, int, datetime | None]] = []
    with transaction.atomic():
        slots = AlertSlot.objects.select_for_update(skip_locked=True).filter(
            held__gt=0, mailed_at__lte=now - ALERT_WINDOW
        )
        for slot in slots:
            due.append((slot.kind, slot.held, slot.held_since))
            slot.held, slot.held_since, slot.mailed_at = 0, None, now
            slot.save(update_fields=["held", "held_since", "mailed_at"])
    sent = 0
    for kind, count, since in due:
        what, changelist = HELD_TEXT[kind]
        subject = gettext("[Elbkerzen] %(count)d × %(what)s") % {
            "count": count,
            "what": what(count),
        }
        body = gettext(
            "Since %(since)s: %(count)d × %(what)s. These alerts were held back because alerts "
            "of a kind are mailed at most once an hour. See them in the admin:\n%(url)s\n"
        ) % {
            "since": _local(since or now),
            "count": count,
            "what": what(count),
            "url": f"{settings.PUBLIC_BASE_URL}{reverse(changelist)}",
        }
        if send(subject, body):
            sent += 1
        else:
            _unclaim(kind, count, since)
    return sent


# --- the alerts ------------------------------------------------------------------------------


@in_shop_language
def delivery_dead(delivery: Delivery) -> None:
    """Tell the merchant a delivery was given up; the row already says dead. Grouped: at most
    one mail an hour, the next one saying how many more were given up."""
    count = claim_mail(DELIVERY_DEAD)
    if not count:
        logger.info("alert for dead delivery %s held back: one mail an hour", delivery.pk)
        return
    context = {"delivery": delivery, "admin_url": admin_url(delivery)}
    # A text/plain body: Django's templates escape for HTML unless told otherwise, so the
    # template wraps itself in {% autoescape off %} (https://docs.djangoproject.com/en/5.2/ref/
    # templates/builtins/#autoescape); else an error quoting `"` arrives as `&quot;`.
    subject = gettext("[Elbkerzen] Delivery gave up: %(source)s %(topic)s #%(id)s") % {
        "source": delivery.source,
        "topic": delivery.topic,
        "id": delivery.pk,
    }
    body = render_to_string("automation/email/delivery_dead.txt", context)
    more = _since_last_mail(count, _deliveries)
    if more:
        body = body.rstrip("\n") + more + "\n"
    _send_counted(DELIVERY_DEAD, count, subject, body)


@in_shop_language
def reminder_failed(checkout_id: int, error: str) -> None:
    """Tell the merchant a reminder evaluation failed on its last attempt: no reminder goes
    out for that checkout version. Grouped like dead deliveries."""
    count = claim_mail(REMINDER_FAILED)
    if not count:
        logger.info("alert for checkout %s's reminder held back: one mail an hour", checkout_id)
        return
    path = reverse("admin:automation_reminderdecision_changelist")
    subject = gettext("[Elbkerzen] Reminder not sent: checkout %(id)s") % {"id": checkout_id}
    body = gettext(
        "The reminder for checkout %(id)s failed on every attempt and is not tried again: "
        "%(error)s\n\nNo reminder goes out for it. Check the mail server and the reminder "
        "decisions in the admin:\n%(url)s"
    ) % {"id": checkout_id, "error": error, "url": f"{settings.PUBLIC_BASE_URL}{path}"}
    _send_counted(
        REMINDER_FAILED, count, subject, body + _since_last_mail(count, _reminders) + "\n"
    )


@in_shop_language
def promotion_failed(promotion_id: int, edge: str, error: str) -> None:
    """Tell the merchant a promotion's start or end failed on its last attempt (Google Ads kept
    failing); the minute check keeps trying. Grouped like dead deliveries."""
    promotion = Promotion.objects.filter(pk=promotion_id).first()
    if promotion is None or (promotion.ended_at if edge == "end" else promotion.started_at):
        return  # deleted, or switched meanwhile (the minute check): nothing to tell
    count = claim_mail(PROMOTION_FAILED)
    if not count:
        logger.info("alert for promotion %s %s held back: one mail an hour", promotion_id, edge)
        return
    values = {"name": promotion.name, "error": error}
    if edge == "end":
        subject = gettext("[Elbkerzen] Promotion %(name)s has not ended yet") % values
        first = gettext("The end of the promotion %(name)s failed on every attempt: %(error)s")
    else:
        subject = gettext("[Elbkerzen] Promotion %(name)s has not started yet") % values
        first = gettext("The start of the promotion %(name)s failed on every attempt: %(error)s")
    path = reverse("admin:automation_promotion_change", args=[promotion.pk])
    body = (
        first % values
        + "\n\n"
        + gettext(
            "Its ad groups may still have the old status. The check every minute keeps trying; "
            "look at the promotion in the admin:\n%(url)s"
        )
        % {"url": f"{settings.PUBLIC_BASE_URL}{path}"}
    )
    _send_counted(
        PROMOTION_FAILED, count, subject, body + _since_last_mail(count, _promotion_edges) + "\n"
    )


@in_shop_language
def brake_engaged(episode_id: int) -> None:
    """Tell the merchant the safety brake holds pauses; once per episode (its creator calls)."""
    episode = BrakeEpisode.objects.filter(pk=episode_id).first()
    if episode is None:
        return
    path = reverse("admin:automation_heldchange_changelist")
    body = gettext(
        "The safety brake engaged at %(when)s: %(reason)s.\n\n"
        "Further pauses are held, not sent: your ads keep running. Decide in the admin whether "
        "to apply them (each ad group gets the status its stock says now) or discard them:\n"
        "%(url)s\n"
    ) % {
        "when": _local(episode.started_at),
        "reason": notes.reason_shown(episode),
        "url": f"{settings.PUBLIC_BASE_URL}{path}",
    }
    send(gettext("[Elbkerzen] Safety brake: pauses held"), body)


@in_shop_language
def ad_group_missing(ad_group_pk: int) -> None:
    """Tell the merchant an ad group is gone from Google Ads; once, when it is first marked."""
    group = AdGroup.objects.filter(pk=ad_group_pk).first()
    if group is None or not group.missing:
        return
    products = ", ".join(group.watched_products.values_list("label", flat=True)) or "–"
    path = reverse("admin:automation_adgroup_change", args=[group.pk])
    subject = gettext("[Elbkerzen] Ad group %(name)s: %(state)s") % {
        "name": group,
        "state": group.get_missing_display(),
    }
    body = gettext(
        "Google Ads reports the ad group %(name)s (id %(id)s, account %(customer)s) as "
        "“%(state)s”. It is skipped from now on; nothing is sent for it until the nightly "
        "run finds it in Google Ads again.\n\nWatched products that control it: "
        "%(products)s.\nChoose another ad group for them, or remove it:\n%(url)s\n"
    ) % {
        "name": group,
        "id": group.ad_group_id,
        "customer": group.customer_id,
        "state": group.get_missing_display(),
        "products": products,
        "url": f"{settings.PUBLIC_BASE_URL}{path}",
    }
    send(subject, body)


@in_shop_language
def product_deleted(watched_product_pks: list[int]) -> None:
    """Tell the merchant that products Shopify deleted are no longer watched."""
    from_models = WatchedProduct.objects.filter(pk__in=watched_product_pks)
    labels = ", ".join(from_models.values_list("label", flat=True))
    if not labels:
        return
    path = reverse("admin:automation_watchedproduct_changelist")
    subject = gettext("[Elbkerzen] Deleted in Shopify: %(labels)s") % {"labels": labels}
    body = gettext(
        "Shopify deleted the product %(labels)s. It is no longer watched: its ad groups stay "
        "as they are unless another watched product controls them. Check them here:\n%(url)s\n"
    ) % {"labels": labels, "url": f"{settings.PUBLIC_BASE_URL}{path}"}
    send(subject, body)
