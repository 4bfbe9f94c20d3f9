"""The vendors a reminder asks "did the buyer pay meanwhile?", answering on 127.0.0.1.

`not_bought` (a fixture) points our settings at a Shopify Admin stand-in
(tests/support/shopify_standin.py, no orders unless a test adds one with `add_order`) and a Stripe
stand-in whose sessions are expired unless a test completes one: so a test about reminders meets the
vendors as production does, at the HTTP boundary, and a test about a paid buyer says so in the
stand-in's data.

Stripe's side: `GET /v1/checkout/sessions/{id}` with the secret key as a Bearer token answers
the Checkout Session object (https://docs.stripe.com/api/checkout/sessions/retrieve), here
Stripe's own published fixture (tests/fixtures/stripe/checkout_session.json, from stripe/openapi)
with its `id`, `status` and `payment_status` set; a wrong key gets Stripe's 401 with an
`invalid_request_error` (https://docs.stripe.com/api/errors, https://docs.stripe.com/api/authentication).
`GET /v1/checkout/sessions?limit=N` lists the completed sessions, newest first, at most N, as
Stripe's list object `{"object": "list", "url": "/v1/checkout/sessions", "has_more": ..., "data":
[...]}` (https://docs.stripe.com/api/checkout/sessions/list, https://docs.stripe.com/api/pagination):
the set-up page's "Test connection".
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from werkzeug import Request, Response

from tests.support.shopify_standin import TOKEN, ShopifyStandIn, serve_on_own_server

STRIPE_KEY = "sk_test_standin"  # noqa: S105 (a stand-in's key, not a secret)
SESSION_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/stripe/checkout_session.json"
SESSION_PATH = re.compile(r"^/v1/checkout/sessions/(?P<id>[^/]+)$")
SESSIONS_PATH = "/v1/checkout/sessions"


@dataclass
class StripeStandIn:
    """Checkout Sessions as Stripe keeps them: expired unless `complete` was called."""

    key: str = STRIPE_KEY
    sessions: dict[str, tuple[str, str]] = field(default_factory=dict)
    script: list[int] = field(default_factory=list)
    """HTTP statuses to answer next, whatever was asked (e.g. 500, 503)."""
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._object = json.loads(SESSION_FIXTURE.read_text())

    def complete(self, session_id: str, payment_status: str = "paid") -> None:
        """The buyer paid the session (status `complete`)."""
        self.sessions[session_id] = ("complete", payment_status)

    def install(self, server: Any) -> str:
        server.expect_request(SESSION_PATH, method="GET").respond_with_handler(self.handle)
        server.expect_request(SESSIONS_PATH, method="GET").respond_with_handler(self.handle)
        return server.url_for("/").rstrip("/")

    def serve(self, host: str = "127.0.0.1") -> contextlib.AbstractContextManager[str]:
        """Run on an own werkzeug server (ephemeral port) outside pytest; yields the base URL."""
        return serve_on_own_server(self, host)

    def handle(self, request: Request) -> Response:
        with self._lock:
            listing = request.path == SESSIONS_PATH
            session_id = "" if listing else SESSION_PATH.match(request.path)["id"]
            self.requests.append(request.full_path if listing else session_id)
            if self.script:
                status = self.script.pop(0)
                return _json({"error": {"type": "api_error", "message": "stand-in"}}, status)
            if request.headers.get("Authorization") != f"Bearer {self.key}":
                error = {"type": "invalid_request_error", "message": "Invalid API Key provided"}
                return _json({"error": error}, 401)
            if listing:
                return self._list(int(request.args.get("limit", 10)))
            status, payment_status = self.sessions.get(session_id, ("expired", "unpaid"))
            body = {
                **self._object,
                "id": session_id,
                "status": status,
                "payment_status": payment_status,
            }
            return _json(body)

    def _list(self, limit: int) -> Response:
        completed = [
            {**self._object, "id": session_id, "status": status, "payment_status": payment}
            for session_id, (status, payment) in reversed(self.sessions.items())
        ]
        body = {
            "object": "list",
            "url": SESSIONS_PATH,
            "has_more": len(completed) > limit,
            "data": completed[:limit],
        }
        return _json(body)


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")


@dataclass
class Vendors:
    shopify: ShopifyStandIn
    stripe: StripeStandIn


@pytest.fixture
def not_bought(httpserver, settings) -> Iterator[Vendors]:
    """Shopify and Stripe answer on 127.0.0.1: no order, every session expired (add to change)."""
    shopify = ShopifyStandIn(restore_rate=5000)
    settings.SHOPIFY_ADMIN_URL = shopify.install(httpserver)
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    stripe = StripeStandIn()
    settings.STRIPE_API_URL = stripe.install(httpserver)
    settings.STRIPE_API_KEY = STRIPE_KEY
    yield Vendors(shopify, stripe)
    httpserver.check_handler_errors()
