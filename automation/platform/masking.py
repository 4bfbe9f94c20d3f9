"""One function masks secrets in text bound for a log line: configured secrets by value, and
anything shaped like a Shopify, Stripe or Google credential by its pattern.

Why: a vendor (or a proxy in front of it) may echo what it was sent, a token included, in the
error text our adapters keep; that text goes to the log only through `mask_secrets`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.conf import settings

MASK = "[masked]"
MIN_SECRET_LENGTH = 6
"""Configured values shorter than this are not searched for (they would mask ordinary words)."""

SECRET_PATTERN = re.compile(
    r"""
    \bshp(?:at|ss|ca|pa|ua)_\w+         # Shopify access tokens and shared secrets
    | \bwhsec_\w+                       # Stripe webhook signing secrets
    | \b(?:sk|rk)_(?:live|test)_\w+     # Stripe API keys
    | \bya29\.[\w.-]+                   # Google OAuth access tokens
    | \b1//[\w-]+                       # Google OAuth refresh tokens
    | \bGOCSPX-[\w-]+                   # Google OAuth client secrets
    """,
    re.VERBOSE,
)


def configured_secrets() -> list[str]:
    """Every secret the settings hold, longest first (so a longer one is masked whole)."""
    values = [
        settings.SHOPIFY_ADMIN_TOKEN,
        settings.SHOPIFY_CLIENT_SECRET,
        *settings.SHOPIFY_WEBHOOK_SECRETS,
        *settings.STRIPE_WEBHOOK_SECRETS,
        settings.STRIPE_API_KEY,
        *settings.GOOGLE_ADS_SECRETS,
        settings.EMAIL_HOST_PASSWORD,
        settings.METRICS_TOKEN,
        *_stored_secrets(),
    ]
    found = {str(value) for value in values if value and len(str(value)) >= MIN_SECRET_LENGTH}
    return sorted(found, key=len, reverse=True)


SECRET_SOURCES: list[Callable[[], list[str]]] = []
"""More secrets to mask, asked on each call (in memory only, no query): the set-up page's
stored ones register here at start (apps.py), since this module is loaded with the logging
set-up, before the models."""


def _stored_secrets() -> list[str]:
    return [secret for source in SECRET_SOURCES for secret in source()]


def mask_secrets(text: str) -> str:
    """`text` with every configured secret and every credential-shaped word replaced by MASK."""
    for secret in configured_secrets():
        text = text.replace(secret, MASK)
    return SECRET_PATTERN.sub(MASK, text)
