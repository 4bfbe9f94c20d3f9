"""E-mails to the merchant when something needs a human."""

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from . import reminder_mail
from .models import BrakeEpisode, Delivery

logger = logging.getLogger(__name__)


def admin_url(delivery: Delivery) -> str:
    """An absolute link to the delivery in the admin, for the e-mail."""
    path = reverse("admin:automation_delivery_change", args=[delivery.pk])
    return f"{settings.PUBLIC_BASE_URL}{path}"


def send(subject: str, body: str) -> bool:
    """E-mail the merchant's alert addresses; never raises (an alert must not fail a job)."""
    recipients = settings.ALERT_EMAILS
    if not recipients:
        logger.warning("alert not sent, ALERT_EMAILS is empty: %s", subject)
        return False
    problem = reminder_mail.mail_server_problem()
    if problem:
        logger.warning("alert not sent, %s: %s", problem, subject)
        return False
    try:
        send_mail(subject, body, None, recipients)
    except Exception:
        logger.exception("could not send the alert %r", subject)
        return False
    return True


def delivery_dead(delivery: Delivery) -> None:
    """Tell the merchant a delivery was given up; the row already says dead."""
    context = {"delivery": delivery, "admin_url": admin_url(delivery)}
    # A text/plain body: Django's templates escape for HTML unless told otherwise, so the
    # template wraps itself in {% autoescape off %} (https://docs.djangoproject.com/en/5.2/ref/
    # templates/builtins/#autoescape); else an error quoting `"` arrives as `&quot;`.
    subject = f"[Elbkerzen] Delivery gave up: {delivery.source} {delivery.topic} #{delivery.pk}"
    send(subject, render_to_string("automation/email/delivery_dead.txt", context))


def brake_engaged(episode_id: int) -> None:
    """Tell the merchant the safety brake holds pauses; once per episode (its creator calls)."""
    episode = BrakeEpisode.objects.filter(pk=episode_id).first()
    if episode is None:
        return
    path = reverse("admin:automation_heldchange_changelist")
    when = timezone.localtime(episode.started_at).strftime("%Y-%m-%d %H:%M")
    body = (
        f"The safety brake (Notbremse) engaged at {when}: {episode.reason}.\n\n"
        "Further pauses are held, not sent: your ads keep running. Decide in the admin whether "
        "to apply them (each ad group gets the status its stock says now) or discard them:\n"
        f"{settings.PUBLIC_BASE_URL}{path}\n"
    )
    send("[Elbkerzen] Safety brake: pauses held", body)
