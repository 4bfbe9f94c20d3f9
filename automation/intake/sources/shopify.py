"""Shopify webhooks: HMAC-SHA256 over the raw body, base64 in `X-Shopify-Hmac-Sha256`."""

import base64
import binascii
import hashlib
import hmac
import re
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest

from automation.intake.sources import Incoming, header, load_body, parse_timestamp, read_body
from automation.intake.sources.fields import possible_instant
from automation.platform import connections
from automation.platform.exceptions import (
    BadHeader,
    InvalidPayload,
    ShopNotAllowed,
    SignatureInvalid,
)

# Visible ASCII only, bounded: header values end up in unique indexes and PostgreSQL text.
_TOKEN = re.compile(r"[\x21-\x7e]{1,255}")


def sign(body: bytes, secret: str) -> str:
    """The header value Shopify sends for `body`."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def signature_matches(body: bytes, header: str, secrets: list[str]) -> bool:
    """Constant-time check of a base64 header against every configured secret (rotation)."""
    try:
        given = base64.b64decode(header.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        return False
    matched = False
    for secret in secrets:
        expected = hmac.new(secret.encode(), body, hashlib.sha256).digest()
        matched |= hmac.compare_digest(expected, given)
    return matched


def verify(request: HttpRequest) -> Incoming:
    """Check size, signature, shop and headers in the contract's order; then normalise."""
    body = read_body(request)
    secrets = connections.shopify_webhook_secrets()
    if not secrets:
        raise ImproperlyConfigured(
            "set SHOPIFY_WEBHOOK_SECRETS or enter the app's client secret on the set-up page"
        )
    signature = header(request, "X-Shopify-Hmac-Sha256")
    if not signature or not signature_matches(body, signature, secrets):
        raise SignatureInvalid("invalid signature")

    shop = header(request, "X-Shopify-Shop-Domain").strip().lower()
    if shop not in {domain.lower() for domain in settings.SHOPIFY_SHOP_DOMAINS}:
        raise ShopNotAllowed("shop domain not allowed")

    topic = _required_header(request, "X-Shopify-Topic")
    webhook_id = _required_header(request, "X-Shopify-Webhook-Id")
    return Incoming(
        source="shopify",
        topic=topic,
        body=body,
        shop_domain=shop,
        webhook_id=webhook_id,
        event_id=_optional_header(request, "X-Shopify-Event-Id"),
        triggered_at=_triggered_at(header(request, "X-Shopify-Triggered-At")),
        api_version=_optional_header(request, "X-Shopify-API-Version")[:32],
        invalid_reason=_json_object_problem(body),
    )


def _triggered_at(value: str) -> datetime | None:
    """The header's instant when it is a possible one; None otherwise (it is not signed, and
    only the latency metric reads it: an absurd one is dropped, the delivery kept)."""
    parsed = parse_timestamp(value[:64])
    if parsed is None:
        return None
    try:
        return possible_instant(parsed, "X-Shopify-Triggered-At")
    except InvalidPayload:
        return None


def _required_header(request: HttpRequest, name: str) -> str:
    value = header(request, name)
    if not value:
        raise BadHeader(f"missing {name} header")
    if not _TOKEN.fullmatch(value):
        raise BadHeader(f"malformed {name} header")
    return value


def _optional_header(request: HttpRequest, name: str) -> str:
    value = header(request, name)
    return value if _TOKEN.fullmatch(value) else ""


def _json_object_problem(body: bytes) -> str:
    """Why a signed body is unusable, or "" when it is a JSON object."""
    try:
        payload = load_body(body)
    except (ValueError, RecursionError) as err:
        return f"body is not valid JSON: {str(err)[:200]}"
    if not isinstance(payload, dict):
        return f"body is JSON but not an object ({type(payload).__name__})"
    return ""
