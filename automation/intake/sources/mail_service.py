"""The merchant's mail service's tracking events (bounces, complaints), via django-anymail.

anymail's tracking webhook views (`/anymail/<service>/tracking/`) check the basic auth and turn
each service's payload into an `AnymailTrackingEvent` (its `esp_to_anymail_event`). Here that
event becomes the body the inbox stores, and a stored body becomes a `TrackingEvent` whose
`kind` says what the event means for the address. anymail's `event_type` alone does not tell a
hard bounce from a soft one: it maps Brevo's `hard_bounce` and `soft_bounce` both to `bounced`
(anymail/webhooks/brevo.py, `event_types`), and Postmark's `HardBounce` and `SoftBounce` both
to `bounced` (anymail/webhooks/postmark.py, `event_types`). The service's own field decides,
as anymail's docs advise (https://anymail.dev/en/stable/esps/brevo/#status-tracking-webhooks:
"examine the raw esp_event").
"""

import enum
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from automation.intake.sources import Incoming, parse_timestamp
from automation.platform.addresses import identifying_address
from automation.platform.exceptions import InvalidPayload

SOURCE = "mail_service"

# anymail's `esp_name` of the services we send through: the name the body keeps.
SERVICES = {"Brevo": "brevo", "Postmark": "postmark"}

# anymail's normalised event types (anymail.signals.EventType) we store: the ones that can stop
# reminders, and `deferred`, which a service reports for a temporary failure and which must not.
# Opens, clicks and deliveries are not stored: nothing here acts on them.
RECORDED_TYPES = frozenset({"bounced", "complained", "unsubscribed", "deferred"})

# Brevo's event names (https://developers.brevo.com/docs/transactional-webhooks) that mean the
# address cannot receive mail: a hard bounce, and an address Brevo found invalid.
BREVO_PERMANENT_BOUNCES = frozenset({"hard_bounce", "invalid_email"})
# Postmark's bounce types (https://postmarkapp.com/developer/api/bounce-api#bounce-types): only
# a hard bounce ("unknown user, mailbox not found") is permanent among those anymail reports as
# `bounced` (SoftBounce, VirusNotification are too). A SubscriptionChange carries the reason as
# `SuppressionReason` instead of `Type`
# (https://postmarkapp.com/developer/webhooks/subscription-change-webhook).
POSTMARK_PERMANENT_BOUNCES = frozenset({"HardBounce"})

MAX_DETAIL_CHARS = 255


class Kind(enum.StrEnum):
    """What a tracking event says about the address."""

    HARD_BOUNCE = "hard bounce"
    SOFT_BOUNCE = "soft bounce"
    COMPLAINT = "complaint"
    UNSUBSCRIBE = "unsubscribe"


@dataclass(frozen=True)
class TrackingEvent:
    """One stored tracking event: who, what it means, and the service's words for the record."""

    service: str
    kind: Kind
    recipient: str
    occurred_at: datetime | None
    detail: str


# --- intake: anymail's event → the body we store -------------------------------------------------


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def incoming_from_anymail(event: Any, esp_name: str) -> Incoming | None:
    """The delivery to store for anymail's tracking event; None for one nothing acts on.

    The key that makes a repeated delivery of the same event a duplicate: the service's event
    id where it has one (Postmark's bounce `ID`), else a digest of the service's own payload
    (Brevo sends no event id: anymail sets `event_id=None`), since a retry repeats it as it was.
    """
    service = SERVICES.get(esp_name)
    if service is None or event.event_type not in RECORDED_TYPES:
        return None
    esp_event = event.esp_event if isinstance(event.esp_event, dict) else {}
    event_id = str(event.event_id or "")[:200]
    key = event_id or "sha256:" + hashlib.sha256(_canonical(esp_event).encode()).hexdigest()
    body = {
        "service": service,
        "event_type": event.event_type,
        "reject_reason": event.reject_reason,
        "recipient": event.recipient,
        "event_id": event_id,
        "timestamp": event.timestamp.isoformat() if event.timestamp else None,
        "mta_response": event.mta_response,
        "description": event.description,
        "esp_event": esp_event,
    }
    return Incoming(
        source=SOURCE,
        topic=event.event_type,
        body=_canonical(body).encode(),
        webhook_id=f"{service}:{key}",
        event_id=event_id,
        triggered_at=event.timestamp,
    )


# --- processing: the stored body → a typed event -------------------------------------------------


def _kind(service: str, event_type: str, esp_event: dict) -> Kind:
    if event_type == "complained":
        return Kind.COMPLAINT
    if event_type == "unsubscribed":
        # Postmark reports a suppression after a hard bounce or a complaint as a subscription
        # change, which anymail maps by its SuppressionReason (HardBounce → bounced, …).
        return Kind.UNSUBSCRIBE
    if event_type == "deferred":
        return Kind.SOFT_BOUNCE
    if service == "brevo":
        permanent = esp_event.get("event") in BREVO_PERMANENT_BOUNCES
    else:
        reason = esp_event.get("Type") or esp_event.get("SuppressionReason")
        permanent = reason in POSTMARK_PERMANENT_BOUNCES
    return Kind.HARD_BOUNCE if permanent else Kind.SOFT_BOUNCE


def _detail(payload: dict) -> str:
    """The service's words for the merchant: the receiving server's answer or the description."""
    parts = [payload.get("mta_response"), payload.get("description")]
    text = " ".join(part.strip() for part in parts if isinstance(part, str) and part.strip())
    return "".join(ch if ch.isprintable() else " " for ch in text)[:MAX_DETAIL_CHARS]


def parse_tracking(payload: object) -> TrackingEvent:
    """Check a stored tracking body's shape and read what it means for the address."""
    if not isinstance(payload, dict):
        raise InvalidPayload("tracking event is not a JSON object")
    service = payload.get("service")
    if service not in SERVICES.values():
        raise InvalidPayload(f"unknown mail service {str(service)[:40]!r}")
    event_type = payload.get("event_type")
    if event_type not in RECORDED_TYPES:
        raise InvalidPayload(f"unexpected event type {str(event_type)[:40]!r}")
    esp_event = payload.get("esp_event")
    if not isinstance(esp_event, dict):
        raise InvalidPayload("esp_event must be an object")
    recipient = identifying_address(payload.get("recipient"))
    if recipient is None:
        raise InvalidPayload("recipient is no e-mail address")
    timestamp = payload.get("timestamp")
    return TrackingEvent(
        service=service,
        kind=_kind(service, event_type, esp_event),
        recipient=recipient,
        occurred_at=parse_timestamp(timestamp) if isinstance(timestamp, str) else None,
        detail=_detail(payload),
    )
