"""Sign and post webhook bodies exactly like Shopify and Stripe do."""

import json
import time
import uuid

from django.test import Client

from automation.intake.sources import shopify, stripe

SHOP = "elbkerzen.myshopify.com"
SECRET = "demo_secret"
STRIPE_SECRET = "whsec_test_one"


def shopify_headers(body: bytes, topic: str, secret: str = SECRET, **overrides: str) -> dict:
    headers = {
        "HTTP_X_SHOPIFY_TOPIC": topic,
        "HTTP_X_SHOPIFY_HMAC_SHA256": shopify.sign(body, secret),
        "HTTP_X_SHOPIFY_SHOP_DOMAIN": SHOP,
        "HTTP_X_SHOPIFY_WEBHOOK_ID": str(uuid.uuid4()),
        "HTTP_X_SHOPIFY_EVENT_ID": str(uuid.uuid4()),
        "HTTP_X_SHOPIFY_TRIGGERED_AT": "2026-11-26T15:10:00.000000Z",
        "HTTP_X_SHOPIFY_API_VERSION": "2026-07",
    }
    headers.update(overrides)
    return {key: value for key, value in headers.items() if value is not None}


def post_shopify(client: Client, body: bytes | dict, topic: str = "test/topic", **headers):
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    return client.post(
        "/webhooks/shopify/",
        data=body,
        content_type="application/json",
        **shopify_headers(body, topic, **headers),
    )


def stripe_header(body: bytes, secrets: list[str], timestamp: int | None = None) -> str:
    timestamp = int(time.time()) if timestamp is None else timestamp
    signatures = ",".join(f"v1={stripe.sign(body, secret, timestamp)}" for secret in secrets)
    return f"t={timestamp},{signatures}"


def post_stripe(client: Client, body: bytes | dict, secrets=(STRIPE_SECRET,), timestamp=None):
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    return client.post(
        "/webhooks/stripe/",
        data=body,
        content_type="application/json",
        HTTP_STRIPE_SIGNATURE=stripe_header(body, list(secrets), timestamp),
    )
