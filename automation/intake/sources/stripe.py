"""Stripe webhooks: `Stripe-Signature: t=...,v1=...`, HMAC-SHA256 hex over "{t}.{raw body}"."""

import hashlib
import hmac
import re
import time

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest

from automation.intake.sources import Incoming, header, load_body, read_body
from automation.platform import connections
from automation.platform.exceptions import StripeSignatureInvalid

_TOKEN = re.compile(r"[\x21-\x7e]{1,255}")


def sign(body: bytes, secret: str, timestamp: int) -> str:
    """The v1 signature Stripe computes for `body` at `timestamp`."""
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def parse_signature_header(header: str) -> tuple[int, list[str]]:
    """The timestamp and every v1 signature; other schemes (v0) are ignored."""
    timestamp: int | None = None
    signatures: list[str] = []
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise StripeSignatureInvalid("Stripe-Signature has no valid timestamp") from None
        elif key == "v1":
            signatures.append(value)
    if timestamp is None:
        raise StripeSignatureInvalid("Stripe-Signature has no timestamp")
    if not signatures:
        raise StripeSignatureInvalid("Stripe-Signature has no v1 signature")
    return timestamp, signatures


def verify(request: HttpRequest, now: float | None = None) -> Incoming:
    """Accept when any v1 matches any secret and the timestamp is within the tolerance."""
    body = read_body(request)
    secrets = connections.stripe_webhook_secrets()
    if not secrets:
        raise ImproperlyConfigured(
            "set STRIPE_WEBHOOK_SECRETS or enter the signing secret on the set-up page"
        )
    signature = header(request, "Stripe-Signature")
    if not signature:
        raise StripeSignatureInvalid("missing Stripe-Signature header")
    timestamp, given = parse_signature_header(signature)
    matched = False
    for secret in secrets:
        expected = sign(body, secret, timestamp).encode()
        for candidate in given:
            matched |= hmac.compare_digest(expected, candidate.encode("ascii", "replace"))
    if not matched:
        raise StripeSignatureInvalid("no signature matches the payload")
    now = time.time() if now is None else now
    if abs(now - timestamp) > settings.STRIPE_WEBHOOK_TOLERANCE:
        raise StripeSignatureInvalid("timestamp outside the tolerance zone")

    # The topic is the body's own `type`, covered by the signature (unlike Shopify's topic
    # header): a captured event cannot be replayed under another type without breaking it.
    event_id, event_type, problem = _event_identity(body)
    return Incoming(
        source="stripe",
        topic=event_type,
        body=body,
        event_id=event_id,
        invalid_reason=problem,
    )


def _event_identity(body: bytes) -> tuple[str, str, str]:
    """(event id, type, problem): a usable event needs both as short strings."""
    try:
        event = load_body(body)
    except (ValueError, RecursionError) as err:
        return "", "(unknown)", f"body is not valid JSON: {str(err)[:200]}"
    if not isinstance(event, dict):
        return "", "(unknown)", f"body is JSON but not an object ({type(event).__name__})"
    event_id, event_type = event.get("id"), event.get("type")
    if not isinstance(event_id, str) or not _TOKEN.fullmatch(event_id):
        return "", "(unknown)", "event has no usable id"
    if not isinstance(event_type, str) or not _TOKEN.fullmatch(event_type):
        return event_id, "(unknown)", "event has no usable type"
    return event_id, event_type, ""
