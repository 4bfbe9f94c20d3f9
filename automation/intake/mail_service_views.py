"""The mail service's tracking webhooks: anymail's views verify and parse, we store.

anymail's views at `/anymail/<service>/tracking/` check the basic auth (ANYMAIL_WEBHOOK_SECRET)
and send its `tracking` signal once per event (anymail/webhooks/base.py, `post`). The receiver
only stores the event in the inbox; the suppression happens in the delivery's job
(automation/reminders/bounces.py). If storing fails, the error propagates: anymail answers 500 and
the service delivers the event again ("Any other errors (e.g., in signal dispatch) will turn into
HTTP 500 responses ... ESPs generally treat that as 'try again later'", same file).
"""

import logging
from collections.abc import Callable
from functools import wraps
from typing import Any

from anymail.signals import tracking
from django.conf import settings
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, JsonResponse

from automation.intake import inbox
from automation.intake.sources.mail_service import SERVICES, incoming_from_anymail
from automation.platform.pseudonyms import mask_email

logger = logging.getLogger(__name__)

# anymail's URL names (anymail/urls.py) of the tracking webhooks we mount: one per service we
# send through. The others (other services, inbound mail) stay unmounted: 404.
TRACKING_URL_NAMES = frozenset(f"{service}_tracking_webhook" for service in SERVICES.values())


@receiver(tracking, dispatch_uid="automation.intake.mail_service_views.record_tracking_event")
def record_tracking_event(sender: type, event: Any, esp_name: str, **kwargs: Any) -> None:
    """Store one tracking event as a delivery; events nothing acts on are left out."""
    if esp_name not in SERVICES:
        logger.warning(
            "tracking event of %s not recorded: we send through %s only",
            esp_name,
            ", ".join(SERVICES),
        )
        return
    incoming = incoming_from_anymail(event, esp_name)
    if incoming is None:
        logger.debug("%s %s event not recorded", esp_name, event.event_type)
        return
    recorded = inbox.record(incoming)
    logger.info(
        "%s %s for %s %s",
        esp_name,
        event.event_type,
        mask_email(event.recipient or ""),
        f"recorded as delivery {recorded.pk}" if recorded else "was a duplicate",
    )


def webhook_secret_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """anymail's view, answering 403 while no ANYMAIL_WEBHOOK_SECRET is set.

    Without one anymail only warns and accepts every request (anymail/webhooks/base.py,
    `AnymailBasicAuthMixin`): anyone could then stop a customer's reminders with a forged bounce.
    """

    @wraps(view)
    def guarded(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if not settings.ANYMAIL.get("WEBHOOK_SECRET"):
            logger.error("mail service webhook refused: set ANYMAIL_WEBHOOK_SECRET")
            return JsonResponse({"error": "set ANYMAIL_WEBHOOK_SECRET"}, status=403)
        return view(request, *args, **kwargs)

    return guarded
