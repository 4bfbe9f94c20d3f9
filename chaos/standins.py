"""The outside world of the run: Google Ads, Shopify's Admin API and a mail server, all local.

The Google Ads stand-in is the tests' gRPC server (the real GoogleAdsClient talks to it over
TLS), here holding the account's ad groups (one of them removed), failing transiently for a
share of calls, and able to hold one call so a worker can be killed in the middle of a job. It
remembers the status each ad group really has (`statuses`) and the last one a successful call
set (`final`). The mail sink is a real SMTP server that keeps every message.
"""

from __future__ import annotations

import contextlib
import email
import email.policy
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
from aiosmtpd.controller import Controller

from chaos import shop
from tests.support.ads_standin import FAILURE_KEY, AdsStandIn, _failure, ads_errors
from tests.support.shopify_standin import TOKEN, ShopifyStandIn
from tests.support.vendors import STRIPE_KEY, StripeStandIn

STATUS_NAMES = {2: "ENABLED", 3: "PAUSED"}  # AdGroupStatusEnum values
# The transient answers of tests/support/ads_standin.py, each with its source there:
# UNAVAILABLE/TRANSIENT_ERROR, INTERNAL_ERROR, RESOURCE_TEMPORARILY_EXHAUSTED (no delay named),
# DatabaseError.CONCURRENT_MODIFICATION ("Retry the request"), and QuotaError.RESOURCE_EXHAUSTED
# without a retry_delay (retried in Google's examples/error_handling/handle_rate_exceeded_error.py;
# the adapter leaves it to the job's RQ retries).
TRANSIENT_KINDS = (
    "transient",
    "transient",
    "internal",
    "rate_limited",
    "concurrent_modification",
    "rate_exceeded",
)
LONG_RETRY_DELAY = 2  # seconds: longer than the run's ADS_BACKOFF_CAP, so no in-job retry
HOLD_TIMEOUT = 30.0


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ChaosAds(AdsStandIn):
    """AdGroupService with transient failures for a share of calls; a removed ad group fails
    every call as Google does (the stand-in's own answer).

    Transient failures are the kinds the adapter retries inside the job (a rate limit here
    names no retry delay), besides RESOURCE_EXHAUSTED, which it leaves to the job's RQ retries.
    `long_rate_limit_rate` adds RESOURCE_TEMPORARILY_EXHAUSTED answers whose retry delay
    exceeds the backoff cap: the adapter then stops at once and leaves the retry to whoever
    called it.
    """

    def __init__(self, transient_rate: float, long_rate_limit_rate: float, seed: int) -> None:
        super().__init__(retry_delay=0.0)
        self.transient_rate = transient_rate
        self.long_rate_limit_rate = long_rate_limit_rate
        self._rng = random.Random(seed)
        self.injected: Counter[str] = Counter()
        self.final: dict[str, str] = {}
        self.applied_calls = 0  # successful calls (a failed one changed nothing)
        self.changes = 0  # successful calls that changed the ad group's status
        self.held: tuple[str, float] | None = None
        self._hold_for: frozenset[str] = frozenset()
        self._held_event = threading.Event()
        self._release = threading.Event()
        self._chosen = threading.local()

    def _choose(self, request: Any) -> tuple[str, int]:
        """A removed ad group always fails; any other call fails by chance. The answer and
        the index of the operation it is about, as the stand-in's `_next_behaviour` gives."""
        behaviour, index = super()._next_behaviour(request)
        with self._lock:
            if behaviour == "ok":
                draw = self._rng.random()
                if draw < self.transient_rate:
                    behaviour = self._rng.choice(TRANSIENT_KINDS)
                elif draw < self.transient_rate + self.long_rate_limit_rate:
                    behaviour = "long_rate_limited"
            self.injected[behaviour] += 1
        return behaviour, index

    def _next_behaviour(self, request: Any) -> tuple[str, int]:
        return getattr(self._chosen, "behaviour", None) or self._choose(request)

    def _mutate(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Hold the call if asked to, answer, and remember what a successful call set."""
        if self._take_hold(request):
            self._release.wait(HOLD_TIMEOUT)
            context.abort(grpc.StatusCode.UNAVAILABLE, "caller went away")
        behaviour, index = self._choose(request)
        if behaviour == "long_rate_limited":
            self._rate_limit(context)
        self._chosen.behaviour = (behaviour, index)
        try:
            response = super()._mutate(request, context)
        finally:
            self._chosen.behaviour = None
        with self._lock:
            self.applied_calls += 1
            for op in request.operations:
                ad_group_id = op.update.resource_name.rsplit("/", 1)[-1]
                status = STATUS_NAMES.get(op.update.status, str(op.update.status))
                if self.final.get(ad_group_id) != status:
                    self.changes += 1  # the first status an ad group gets counts as a change
                self.final[ad_group_id] = status
        return response

    def _rate_limit(self, context: grpc.ServicerContext) -> None:
        """Answer as Google does when it wants us to wait LONG_RETRY_DELAY seconds."""
        message = f"Too many requests. Retry in {LONG_RETRY_DELAY} seconds."
        failure = _failure(
            "quota_error", "RESOURCE_TEMPORARILY_EXHAUSTED", message, LONG_RETRY_DELAY
        )
        context.set_trailing_metadata(
            (
                (FAILURE_KEY, ads_errors.GoogleAdsFailure.serialize(failure)),
                ("request-id", "chaos-rate-limit"),
            )
        )
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)

    def real_statuses(self) -> dict[str, str]:
        """What Google Ads holds for each ad group now (REMOVED for the removed one)."""
        with self._lock:
            return dict(self.statuses)

    # --- holding one call so its worker can be killed mid-job ---------------------------------

    def hold_next(self, ad_group_ids: set[str]) -> None:
        """Block the next call touching one of these ad groups until `release`."""
        with self._lock:
            self._hold_for = frozenset(ad_group_ids)
            self._held_event.clear()
            self._release.clear()

    def wait_held(self, timeout: float) -> tuple[str, float] | None:
        """The held call's ad group and when it arrived, or None if none came in time."""
        if not self._held_event.wait(timeout):
            with self._lock:
                self._hold_for = frozenset()
            return None
        return self.held

    def release(self) -> None:
        self._release.set()

    def _take_hold(self, request: Any) -> bool:
        with self._lock:
            if not self._hold_for:
                return False
            for op in request.operations:
                ad_group_id = op.update.resource_name.rsplit("/", 1)[-1]
                if ad_group_id in self._hold_for:
                    self._hold_for = frozenset()
                    self.held = (ad_group_id, time.time())
                    self._held_event.set()
                    return True
            return False


@dataclass(frozen=True)
class Mail:
    """One message as the SMTP server received it."""

    recipients: tuple[str, ...]
    subject: str
    text: str


class MailSink:
    """A local SMTP server keeping every message, so mails are counted where they arrive."""

    def __init__(self) -> None:
        self.mails: list[Mail] = []
        self.port = free_port()
        self._lock = threading.Lock()
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        message = email.message_from_bytes(
            envelope.original_content or envelope.content, policy=email.policy.default
        )
        part = message.get_body(preferencelist=("plain",))
        text = part.get_content() if part is not None else ""
        # A folded non-ASCII subject ("Subject:" then encoded words on the next line) parses
        # with the fold's leading space: what a mail client shows is without it.
        subject = str(message["subject"] or "").strip()
        mail = Mail(tuple(envelope.rcpt_tos), subject, text)
        with self._lock:
            self.mails.append(mail)
        return "250 Message accepted for delivery"

    def start(self) -> None:
        self._controller.start()

    def stop(self) -> None:
        self._controller.stop()

    def snapshot(self) -> list[Mail]:
        with self._lock:
            return list(self.mails)


@contextlib.contextmanager
def shopify_admin() -> Iterator[ShopifyStandIn]:
    """Shopify's Admin API with our webhook subscriptions in place and an empty shop.

    It serves no stock until the day is over: the nightly run rqcron starts at boot then
    finds nothing to change, and the reconciliation at the end reads the day's true stock.
    """
    standin = ShopifyStandIn(maximum_available=10_000, restore_rate=5_000)
    callback = f"{shop.PUBLIC_BASE_URL}/webhooks/shopify/"
    standin.subscriptions = [
        {"id": f"gid://shopify/WebhookSubscription/{n}", "topic": topic, "uri": callback}
        for n, topic in enumerate(
            ["INVENTORY_LEVELS_UPDATE", "CHECKOUTS_CREATE", "CHECKOUTS_UPDATE", "ORDERS_CREATE"],
            start=1,
        )
    ]
    with standin.serve() as base_url:
        standin.base_url = base_url
        yield standin


SHOPIFY_TOKEN = TOKEN
STRIPE_API_KEY = STRIPE_KEY


@contextlib.contextmanager
def stripe_api() -> Iterator[tuple[StripeStandIn, str]]:
    """Stripe's Checkout Sessions API: every session expired (the day's completed sessions
    never fall due for a reminder, so no reminder asks about them)."""
    standin = StripeStandIn()
    with standin.serve() as base_url:
        yield standin, base_url
