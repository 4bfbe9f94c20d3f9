"""E-mails to the merchant when something needs a human: a dead delivery, later more."""

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse

from .models import Delivery

logger = logging.getLogger(__name__)


def admin_url(delivery: Delivery) -> str:
    """An absolute link to the delivery in the admin, for the e-mail."""
    path = reverse("admin:automation_delivery_change", args=[delivery.pk])
    return f"{settings.PUBLIC_BASE_URL}{path}"


def delivery_dead(delivery: Delivery) -> None:
    """Tell the merchant a delivery was given up; never raises, the row already says dead."""
    recipients = settings.ALERT_EMAILS
    if not recipients:
        logger.warning("delivery %s is dead and ALERT_EMAILS is empty: nobody told", delivery.pk)
        return
    context = {"delivery": delivery, "admin_url": admin_url(delivery)}
    subject = f"[Elbkerzen] Delivery gave up: {delivery.source} {delivery.topic} #{delivery.pk}"
    try:
        send_mail(
            subject,
            render_to_string("automation/email/delivery_dead.txt", context),
            None,
            recipients,
        )
    except Exception:
        logger.exception("could not send the alert for dead delivery %s", delivery.pk)
