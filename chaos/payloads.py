"""Bodies and headers exactly as Shopify and Stripe send them, signed with the run's secrets."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import UTC, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings

from chaos import shop
from chaos.generator import (
    FAR_FUTURE,
    CheckoutVersion,
    FutureLevel,
    LevelChange,
    OrderPlaced,
    Send,
    StripeSession,
)

BERLIN = ZoneInfo(shop.TIME_ZONE)
API_VERSION = "2026-07"


def instant(t0: float, offset: float) -> datetime:
    """The wall-clock instant of an offset, in Hamburg time like the shop's admin shows it."""
    return datetime.fromtimestamp(t0 + offset, tz=UTC).astimezone(BERLIN)


def iso(t0: float, offset: float) -> str:
    """ISO 8601 with milliseconds and offset, as the stale guard compares it."""
    return instant(t0, offset).isoformat(timespec="milliseconds")


def future_stamp(send: Send, t0: float) -> str:
    """A far-future level's `updated_at`: FAR_FUTURE, or `beyond` seconds past the skew the
    system allows (its WEBHOOK_MAX_FUTURE_SECONDS, read from the same environment) ahead of
    the planned send."""
    event = send.event
    assert isinstance(event, FutureLevel)
    if event.beyond is None:
        return FAR_FUTURE
    return iso(t0, send.at + settings.WEBHOOK_MAX_FUTURE_SECONDS + event.beyond)


def body(send: Send, t0: float) -> bytes:
    """The JSON body of one send."""
    event = send.event
    if isinstance(event, LevelChange | FutureLevel):
        stamp = future_stamp(send, t0) if isinstance(event, FutureLevel) else iso(t0, event.at)
        payload: dict = {
            "inventory_item_id": event.item,
            "location_id": event.location,
            "available": event.available,
            "updated_at": stamp,
            "admin_graphql_api_id": (
                f"gid://shopify/InventoryLevel/{event.location}?inventory_item_id={event.item}"
            ),
        }
    elif isinstance(event, CheckoutVersion):
        payload = _checkout(event, t0)
    elif isinstance(event, OrderPlaced):
        payload = {
            "id": int(event.token[:12], 16),
            "checkout_token": event.token,
            "created_at": iso(t0, event.at),
            "financial_status": "paid",
        }
    else:
        payload = _stripe_event(send.key, event, t0)
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def _checkout(version: CheckoutVersion, t0: float) -> dict:
    lines = []
    total = Decimal(0)
    for line in version.lines:
        product = shop.CATALOG[line.product]
        total += product.price * line.quantity
        lines.append(
            {
                "title": product.title,
                "product_id": product.product_id,
                "variant_id": product.variant_id,
                "sku": product.sku,
                "vendor": product.vendor,
                "quantity": line.quantity,
                "price": f"{product.price:.2f}",
            }
        )
    return {
        "id": int(version.token[:12], 16),
        "token": version.token,
        "updated_at": iso(t0, version.at),
        "email": version.email or None,
        "buyer_accepts_marketing": version.consent,
        "customer": {"first_name": version.first_name} if version.first_name else None,
        "abandoned_checkout_url": (
            f"https://elbkerzen.example/checkouts/{version.token}/recover?key=chaos"
        ),
        "total_price": f"{total:.2f}",
        "currency": "EUR",
        "line_items": lines,
        "completed_at": None,
    }


def _stripe_event(event_id: str, session: StripeSession, t0: float) -> dict:
    created = int(t0 + session.at)
    obj: dict = {
        "id": session.session_id,
        "object": "checkout.session",
        "status": "complete" if session.kind == "completed" else "expired",
        "amount_total": session.amount_cents,
        "currency": "eur",
        "consent": {"promotions": "opt_in" if session.consent else "opt_out"},
        "after_expiration": {
            "recovery": {"enabled": True, "url": f"https://pay.elbkerzen.example/r/{event_id}"}
        },
    }
    if session.consent or session.kind == "completed":  # the e-mail only with consent
        obj["customer_details"] = {"email": session.email}
    return {
        "id": event_id,
        "object": "event",
        "type": f"checkout.session.{session.kind}",
        "created": created,
        "data": {"object": obj},
    }


def headers(send: Send, raw: bytes) -> dict[str, str]:
    """Signed headers for one attempt; Stripe signs every retry anew with a new timestamp."""
    if send.source == "stripe":
        stamp = int(time.time())
        signed = str(stamp).encode() + b"." + raw
        digest = hmac.new(shop.STRIPE_SECRET.encode(), signed, hashlib.sha256).hexdigest()
        return {"Content-Type": "application/json", "Stripe-Signature": f"t={stamp},v1={digest}"}
    digest = hmac.new(shop.SHOPIFY_SECRET.encode(), raw, hashlib.sha256).digest()
    return {
        "Content-Type": "application/json",
        "X-Shopify-Topic": send.topic,
        "X-Shopify-Hmac-Sha256": base64.b64encode(digest).decode(),
        "X-Shopify-Shop-Domain": shop.SHOP_DOMAIN,
        "X-Shopify-Webhook-Id": send.key,
        "X-Shopify-Event-Id": send.event_id,
        "X-Shopify-Triggered-At": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "X-Shopify-API-Version": API_VERSION,
    }


def path(send: Send) -> str:
    return "/webhooks/stripe/" if send.source == "stripe" else "/webhooks/shopify/"
