"""Webhook senders: each module verifies its own signature and normalises a delivery.

The topic modules (`shopify_inventory`, `shopify_products`, `shopify_checkouts`,
`shopify_privacy`, `stripe_checkouts`) turn a stored body into a typed event, and `events` says
which parser belongs to which (source, topic): handlers never see JSON.
"""

import functools
import json
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.http import HttpRequest

from automation.platform.exceptions import LengthRequired, PayloadTooLarge


@dataclass(frozen=True)
class Incoming:
    """A verified delivery, ready to store; `invalid_reason` marks a signed but unusable body."""

    source: str
    topic: str
    body: bytes
    shop_domain: str = ""
    webhook_id: str = ""
    event_id: str = ""
    triggered_at: datetime | None = None
    api_version: str = ""
    invalid_reason: str = ""


def read_body(request: HttpRequest) -> bytes:
    """The raw body, refusing oversize ones by their declared length before reading them, and
    chunked ones (411), which Django would read as empty and so answer a signed delivery 401."""
    # WSGI servers pass a chunked body on without CONTENT_LENGTH (gunicorn's
    # `wsgi.input_terminated`), and Django's WSGIRequest then reads zero bytes
    # (django/core/handlers/wsgi.py). 411 Length Required:
    # https://www.rfc-editor.org/rfc/rfc9110#section-15.5.12. Behind the buffering proxy a chunked
    # body arrives with a Content-Length and is accepted
    # (https://nginx.org/en/docs/http/ngx_http_proxy_module.html#proxy_request_buffering).
    if request.META.get("HTTP_TRANSFER_ENCODING"):
        raise LengthRequired(
            "send the body with a Content-Length header; "
            "Transfer-Encoding (chunked) bodies are not read here"
        )
    limit = settings.WEBHOOK_MAX_BODY_BYTES
    try:  # without either header the body is empty (RFC 9112, section 6.3), checked as such
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise PayloadTooLarge(f"body larger than {limit} bytes")
    body = request.body
    if len(body) > limit:
        raise PayloadTooLarge(f"body larger than {limit} bytes")
    return body


def load_body(body: bytes | memoryview) -> object:
    """The JSON value of a delivery's raw body: the one place a body is decoded.

    Raises what `json.loads` raises (ValueError, RecursionError for absurd nesting); callers
    decide whether that makes the delivery invalid (the intake) or is a failure to retry.
    """
    return json.loads(bytes(body))


def header(request: HttpRequest, name: str) -> str:
    """The value of request header `name` (as HTTP spells it), "" when absent.

    For the senders' own headers; WSGI keeps Content-Type and Content-Length without the
    `HTTP_` prefix, so they are not found here.

    Read from `request.META` directly: `request.headers` first builds a mapping of every header,
    a large part of the signature check's cost (docs/PERFORMANCE.md, "Headers read from
    request.META").
    """
    return request.META.get(_meta_key(name), "")


@functools.cache
def _meta_key(name: str) -> str:
    return "HTTP_" + name.upper().replace("-", "_")


def parse_timestamp(value: str) -> datetime | None:
    """An ISO 8601 instant with offset, or None when absent or unusable."""
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    return parsed if parsed.tzinfo is not None else None
