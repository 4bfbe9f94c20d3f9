"""Stripe's Checkout Sessions API, read-only: the only module that speaks Stripe HTTP.

`GET /v1/checkout/sessions/{id}` retrieves a session; its `status` is `open` ("The checkout
session is still in progress"), `complete` ("The checkout session is complete. Payment
processing may still be in progress") or `expired` ("The checkout session has expired. No
further processing will occur"), and `payment_status` is `paid`, `unpaid` or
`no_payment_required` (https://docs.stripe.com/api/checkout/sessions/retrieve,
https://docs.stripe.com/api/checkout/sessions/object#checkout_session_object-status). Requests
authenticate with the secret key as a Bearer token (https://docs.stripe.com/api/authentication).
`GET /v1/checkout/sessions?limit=1` lists at most one session ("a list of Checkout Sessions",
https://docs.stripe.com/api/checkout/sessions/list): the set-up page's harmless question whether
the key opens the account (an answer is a list object, `{"object": "list", "data": [...]}`).

Plain values in and out; no Django here.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import requests

API_BASE = "https://api.stripe.com"
COMPLETE = "complete"


class StripeError(Exception):
    """Stripe could not be asked, or did not answer as documented."""


@dataclass(frozen=True)
class SessionStatus:
    """What Stripe says about one Checkout Session now."""

    status: str
    """`open`, `complete` or `expired`."""
    payment_status: str

    @property
    def complete(self) -> bool:
        """The buyer finished the session: an order exists, whatever the payment's progress."""
        return self.status == COMPLETE


def retrieve_session(
    session_id: str,
    secret_key: str,
    *,
    base_url: str = API_BASE,
    timeout: float,
    session: requests.Session | None = None,
) -> SessionStatus:
    """The session's status; StripeError when Stripe cannot answer within `timeout` seconds."""
    url = f"{base_url.rstrip('/')}/v1/checkout/sessions/{quote(session_id, safe='')}"
    body = _get_object(url, secret_key, timeout=timeout, session=session)
    status = body.get("status")
    if body.get("id") != session_id or status not in ("open", COMPLETE, "expired"):
        raise StripeError("Stripe's answer is not this Checkout Session")
    return SessionStatus(status=status, payment_status=str(body.get("payment_status") or ""))


class StripeKeyRefused(StripeError):
    """Stripe refused the key: 401 (invalid key) or 403 (a restricted key without the right)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"Stripe refused the API key: HTTP {status}")
        self.status = status


def check_key(
    secret_key: str,
    *,
    base_url: str = API_BASE,
    timeout: float,
    session: requests.Session | None = None,
) -> int:
    """Whether the key may read Checkout Sessions: lists one; the number listed (0 or 1).
    StripeKeyRefused for a refused key, StripeError when Stripe cannot answer in `timeout`."""
    url = f"{base_url.rstrip('/')}/v1/checkout/sessions"
    body = _get_object(
        url, secret_key, timeout=timeout, session=session, params={"limit": 1}, key_check=True
    )
    if body.get("object") != "list" or not isinstance(body.get("data"), list):
        raise StripeError("Stripe's answer is not a list of Checkout Sessions")
    return len(body["data"])


def _get_object(
    url: str,
    secret_key: str,
    *,
    timeout: float,
    session: requests.Session | None,
    params: dict | None = None,
    key_check: bool = False,
) -> dict:
    """GET a Stripe JSON object with the key as Bearer token; StripeError for anything else.

    `key_check`: a 401 or 403 is the answer asked for (StripeKeyRefused), not just an error.
    """
    http = session or requests
    try:
        response = http.get(
            url, params=params, headers={"Authorization": f"Bearer {secret_key}"}, timeout=timeout
        )
    except requests.RequestException as err:
        raise StripeError(f"Stripe unreachable: {type(err).__name__}") from err
    if key_check and response.status_code in (401, 403):
        raise StripeKeyRefused(response.status_code)
    if response.status_code != 200:
        raise StripeError(f"Stripe answered HTTP {response.status_code}")
    try:
        body = response.json()
    except ValueError as err:
        raise StripeError("Stripe answered without JSON") from err
    if not isinstance(body, dict):
        raise StripeError("Stripe answered with JSON that is not an object")
    return body
