"""E-mails to the merchant when something needs a human."""

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext

from . import reminder_mail
from .models import AdGroup, BrakeEpisode, Delivery, WatchedProduct

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
