"""Thirty days of demo history for a fresh shop, made through the real paths.

The history is made as the shop would make it: sample bodies (automation/samples/shopify) are
signed, verified and recorded by the inbox and processed by their handlers right away; the
reminders are decided by the real evaluation. Only then are the timestamps moved back to when
each event "happened". The rows carry demo.py's marks, so its removal finds them.

Nothing leaves the process while the history is made: the Ads backend is the dry run and mail
goes to Django's in-memory backend. Afterwards the demo's watched items are switched off, so
no reconciliation or later save ever touches their invented ad groups. It builds requests with
Django's RequestFactory and contains the settings with override_settings, and is kept apart from
demo.py (marks, removal, the dashboard's button) because only `manage.py demo_setup` needs it.
"""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.test import RequestFactory, override_settings
from django.urls import reverse
from django.utils import timezone
from redis.exceptions import RedisError
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job

from automation.intake import inbox
from automation.intake.sources import load_body, shopify
from automation.models import (
    AdGroupAction,
    CheckoutState,
    Delivery,
    ReminderDecision,
    ReminderSettings,
    StockLevel,
    WatchedProduct,
)
from automation.platform import claims, scheduling
from automation.platform.queues import default_queue, redis_client
from automation.reminders import checkouts
from automation.ui.dashboard.demo import (
    DEMO_DAYS,
    DEMO_DISCOUNT_CODE,
    DEMO_IMPRINT,
    DEMO_ITEMS,
    DEMO_LOCATION_ID,
    DEMO_MARKER,
    DEMO_MARKER_TTL,
    DEMO_PRODUCT_IDS,
    DEMO_SHOP,
    DEMO_SIGNING_SECRET,
    DemoItem,
    create_demo_products,
    demo_present,
)

logger = logging.getLogger(__name__)

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "shopify"


# --- what happened, in order ----------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One thing that happens in the demo shop at `at`: a webhook, or a reminder evaluation."""

    at: datetime
    kind: str
    """`inventory`, `checkout`, `evaluate` or `order`."""
    data: dict


def _level_events(item: DemoItem, start: datetime, end: datetime) -> list[Event]:
    """Sales every few hours; a sell-out waits a day or two for its restock."""
    rng = random.Random(f"demo-stock-{item.inventory_item_id}")  # noqa: S311 (not security)
    at, stock = start, rng.randint(12, 20)
    events = [Event(at, "inventory", {"item": item, "available": stock})]
    while True:
        if stock <= item.pause_at:
            at = _shop_hours(at + timedelta(hours=rng.uniform(18, 56)), rng)
            stock = rng.randint(12, 24)
        else:
            at = _shop_hours(at + timedelta(hours=rng.uniform(3, 12)), rng)
            stock = max(stock - rng.randint(1, 4), 0)
        if at >= end:
            return events
        events.append(Event(at, "inventory", {"item": item, "available": stock}))


def _shop_hours(at: datetime, rng: random.Random) -> datetime:
    """People buy candles between 8:00 and 23:00: a sale drawn for the night moves to morning."""
    local = timezone.localtime(at)
    if 8 <= local.hour < 23:
        return at
    morning = local.replace(hour=8, minute=0, second=0, microsecond=0)
    if local.hour >= 23:
        morning += timedelta(days=1)
    return morning + timedelta(minutes=rng.uniform(0, 150))


def _checkout_events(start: datetime, end: datetime, delay: timedelta) -> list[Event]:
    """About one abandoned checkout a day: without consent, for a plain reminder or a discount;
    a share of those reminded buy after the mail, one buys before it, one buys under another
    checkout from the same address."""
    rng = random.Random("demo-checkouts")  # noqa: S311 (not security)
    zone = timezone.get_current_timezone()
    events: list[Event] = []
    number = 0
    day = timezone.localdate(start, zone)
    groups = ["no_consent", "plain", "discount", "plain", "discount", "plain"]
    while True:
        day += timedelta(days=1)
        for _checkout in range(rng.choice((0, 1, 1, 2))):
            number += 1
            at = datetime.combine(day, time(rng.randint(9, 21), rng.randint(0, 59)), zone)
            if at + delay * 2 >= end:
                return events
            group = groups[number % len(groups)]
            token = f"demo{number:04d}{rng.getrandbits(64):016x}"
            email = f"demo-kunde-{number:03d}@example.com"
            lines = [
                (item, rng.randint(1, 2)) for item in rng.sample(DEMO_ITEMS, rng.randint(1, 2))
            ]
            checkout = {"token": token, "email": email, "lines": lines, "group": group}
            events.append(Event(at, "checkout", checkout))
            due = at + delay
            events.append(Event(due, "evaluate", checkout))
            if number % 11 == 5:  # bought before the reminder was due
                events.append(Event(at + delay / 3, "order", {**checkout, "number": number}))
            elif group != "no_consent" and number % 4 == 1:  # recovered after the reminder
                later = due + timedelta(hours=rng.uniform(2, 30))
                events.append(Event(later, "order", {**checkout, "number": number}))
            elif group != "no_consent" and number % 9 == 3:  # back through another checkout
                later = due + timedelta(days=rng.uniform(1, 5))
                other = {**checkout, "token": f"{token}b", "number": number + 5000}
                events.append(Event(later, "order", other))


# --- bodies from the samples ------------------------------------------------------------------


def _sample(topic: str) -> dict:
    return load_body((SAMPLES / f"{topic.replace('/', '_')}.json").read_bytes())


def _stamp(at: datetime) -> str:
    return timezone.localtime(at).isoformat(timespec="seconds")


def _line_items(lines: list[tuple[DemoItem, int]]) -> list[dict]:
    return [
        {
            "key": f"k{index}",
            "product_id": item.inventory_item_id + 1000,
            "variant_id": item.inventory_item_id + 2000,
            "sku": f"DEMO-{item.name[:3].upper()}",
            "title": item.name,
            "variant_title": "",
            "vendor": "Elbkerzen",
            "quantity": quantity,
            "price": f"{item.price:.2f}",
            "line_price": f"{item.price * quantity:.2f}",
        }
        for index, (item, quantity) in enumerate(lines, start=1)
    ]


def _total(lines: list[tuple[DemoItem, int]]) -> str:
    return f"{sum(item.price * quantity for item, quantity in lines):.2f}"


def _level_body(event: Event) -> dict:
    body = _sample("inventory_levels/update")
    item = event.data["item"]
    body.update(
        inventory_item_id=item.inventory_item_id,
        location_id=DEMO_LOCATION_ID,
        available=event.data["available"],
        updated_at=_stamp(event.at),
        admin_graphql_api_id=(
            f"gid://shopify/InventoryLevel/{DEMO_LOCATION_ID}"
            f"?inventory_item_id={item.inventory_item_id}"
        ),
    )
    return body


def _checkout_body(event: Event) -> dict:
    body = _sample("checkouts/create")
    data = event.data
    body.update(
        token=data["token"],
        cart_token=f"cart-{data['token']}",
        email=data["email"],
        buyer_accepts_marketing=data["group"] != "no_consent",
        created_at=_stamp(event.at),
        updated_at=_stamp(event.at),
        abandoned_checkout_url=(
            f"https://{DEMO_SHOP}/1/checkouts/ac/{data['token']}/recover?key=demo"
        ),
        total_price=_total(data["lines"]),
        subtotal_price=_total(data["lines"]),
        total_tax="0.00",
        line_items=_line_items(data["lines"]),
        customer={"email": data["email"], "first_name": "Demo"},
    )
    return body


def _order_body(event: Event) -> dict:
    body = _sample("orders/create")
    data = event.data
    order_id = 990000000000 + data["number"]
    body.update(
        id=order_id,
        admin_graphql_api_id=f"gid://shopify/Order/{order_id}",
        email=data["email"],
        customer={"email": data["email"]},
        cart_token=f"cart-{data['token']}",
        checkout_token=data["token"],
        total_price=_total(data["lines"]),
        created_at=_stamp(event.at),
        updated_at=_stamp(event.at),
        line_items=[
            {key: line[key] for key in ("product_id", "variant_id", "sku", "title", "vendor")}
            | {"id": 990000000 + index, "quantity": line["quantity"], "price": line["price"]}
            for index, line in enumerate(_line_items(data["lines"]), start=1)
        ],
    )
    return body


# --- recording and processing -----------------------------------------------------------------


@contextmanager
def _contained() -> Iterator[None]:
    """While the history is made: the demo shop and its key are accepted, the Ads calls are the
    dry run and mail stays in memory, whatever this installation is configured for."""
    with override_settings(
        SHOPIFY_WEBHOOK_SECRETS=[DEMO_SIGNING_SECRET],
        SHOPIFY_SHOP_DOMAINS=[*settings.SHOPIFY_SHOP_DOMAINS, DEMO_SHOP],
        ADS_BACKEND="dryrun",
        EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
        EMAIL_REQUIRE_SERVER=False,
        ALERT_EMAILS=[],
        # The demo shop does not exist at Shopify, and every one of its orders has passed
        # through the inbox before its reminder is decided: our records are its whole truth.
        REMINDER_PAID_CHECK="stored",
    ):
        yield


def _deliver(topic: str, body: dict, webhook_id: str, triggered_at: datetime) -> int:
    """Sign the body like Shopify, verify and record it, and process it now; the delivery's id."""
    raw = json.dumps(body).encode()
    request = RequestFactory().post(
        reverse("shopify-webhook"),
        data=raw,
        content_type="application/json",
        headers={
            "X-Shopify-Topic": topic,
            "X-Shopify-Hmac-Sha256": shopify.sign(raw, DEMO_SIGNING_SECRET),
            "X-Shopify-Shop-Domain": DEMO_SHOP,
            "X-Shopify-Webhook-Id": webhook_id,
            "X-Shopify-Event-Id": f"{webhook_id}-event",
            "X-Shopify-Triggered-At": triggered_at.isoformat(),
            "X-Shopify-API-Version": "2026-07",
        },
    )
    recorded = inbox.record(shopify.verify(request))  # enqueues its job once committed
    if recorded is None:
        raise RuntimeError(f"demo delivery {webhook_id} is already stored")
    status = inbox.process(recorded.pk, final_attempt=False)
    if status not in (Delivery.Status.DONE, Delivery.Status.IGNORED):
        raise RuntimeError(f"demo delivery {webhook_id} ended {status}")
    return recorded.pk


@dataclass(frozen=True)
class Timing:
    """Seconds after the event: the delivery arrives, is claimed, its Ads call is sent and
    answered, and the delivery is done (Shopify's webhook path, seconds end to end)."""

    received: float
    started: float
    requested: float
    applied: float
    processed: float

    @classmethod
    def draw(cls, rng: random.Random) -> Timing:
        received = rng.uniform(0.4, 1.8)
        started = received + rng.uniform(0.02, 0.3)
        requested = started + rng.uniform(0.03, 0.15)
        applied = requested + rng.uniform(0.2, 1.4)
        return cls(received, started, requested, applied, applied + rng.uniform(0.01, 0.05))

    def at(self, event: datetime, step: str) -> datetime:
        return event + timedelta(seconds=getattr(self, step))


def _backdate_delivery(pk: int, at: datetime, timing: Timing) -> datetime:
    """The delivery was triggered at `at` and handled as `timing` says; returns when it ended."""
    processed = timing.at(at, "processed")
    Delivery.objects.filter(pk=pk).update(
        triggered_at=at,
        received_at=timing.at(at, "received"),
        processing_started_at=timing.at(at, "started"),
        processed_at=processed,
    )
    return processed


def _cancel_evaluation(checkout: CheckoutState) -> None:
    """The demo decides its reminders itself: drop the evaluation its checkout scheduled."""
    try:
        job = Job.fetch(scheduling.evaluation_job_id(checkout), connection=redis_client())
    except NoSuchJobError:
        return
    default_queue().scheduled_job_registry.remove(job)
    job.delete()


def _drop_delivery_jobs(delivery_ids: list[int]) -> None:
    """Take the demo deliveries' jobs off the queue again: each was processed already, and a
    worker would only find it done.

    Only a job still waiting in the queue is deleted: LREM takes it out atomically, so no
    worker can start it afterwards. A job a worker took meanwhile is left to that worker (it
    finds its delivery done), and one whose hash vanished since is skipped: RQ's `Job.delete`
    reads the job's status first and raises InvalidJobOperation when the hash has no status
    any more (rq 3.0, rq/job.py: `_remove_from_registries` calls `_fetch_status`), which is
    what a job that finished with `result_ttl=0` leaves behind.
    """
    queue = default_queue()
    connection = queue.connection
    try:
        for pk in delivery_ids:
            job_id = scheduling.job_id_for(pk)
            if not connection.lrem(queue.key, 0, job_id):
                continue  # a worker has it, or it is gone: nothing of ours to remove
            try:
                Job.fetch(job_id, connection=connection).delete(remove_from_queue=False)
            except (NoSuchJobError, InvalidJobOperation):
                continue  # its hash is gone already: nothing left to delete
    except RedisError as err:  # a left-over job finds its delivery done and does nothing
        logger.warning("demo delivery jobs left on the queue: %s", err)


class _Maker:
    """Plays the events in order and moves each row's timestamps back to its event."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self.rng = random.Random("demo-timing")  # noqa: S311 (not security)
        self.config = ReminderSettings.load()
        self.original_code = self.config.discount_code
        # No reminder is sent without an imprint: the demo's, while it plays, if there is none.
        self.original_imprint = self.config.mail_imprint
        if not self.original_imprint.strip():
            ReminderSettings.objects.filter(pk=self.config.pk).update(mail_imprint=DEMO_IMPRINT)
        self.count: Counter[str] = Counter()
        self.deliveries: list[int] = []

    def play(self, event: Event) -> None:
        handler: Callable[[Event], None] = getattr(self, f"_{event.kind}")
        handler(event)
        self.count[event.kind] += 1

    def _inventory(self, event: Event) -> None:
        timing = Timing.draw(self.rng)
        # Triggered as many seconds ago as the demo's reaction takes, so the reaction metric
        # this process observes is the demo's, not the days since the event; backdated below.
        pk = _deliver(
            "inventory_levels/update",
            _level_body(event),
            f"demo-inventory-{self.count['inventory']:05d}",
            timezone.now() - timedelta(seconds=timing.requested),
        )
        self.deliveries.append(pk)
        processed = _backdate_delivery(pk, event.at, timing)
        AdGroupAction.objects.filter(delivery_id=pk).update(
            requested_at=timing.at(event.at, "requested"),
            applied_at=timing.at(event.at, "applied"),
        )
        StockLevel.objects.filter(
            inventory_item_id=event.data["item"].inventory_item_id, location_id=DEMO_LOCATION_ID
        ).update(recorded_at=processed)

    def _checkout(self, event: Event) -> None:
        pk = _deliver(
            "checkouts/create",
            _checkout_body(event),
            f"demo-checkout-{event.data['token']}",
            event.at,
        )
        self.deliveries.append(pk)
        processed = _backdate_delivery(pk, event.at, Timing.draw(self.rng))
        checkout = CheckoutState.objects.get(
            source=CheckoutState.Source.SHOPIFY, token=event.data["token"]
        )
        _cancel_evaluation(checkout)
        CheckoutState.objects.filter(pk=checkout.pk).update(recorded_at=processed)

    def _evaluate(self, event: Event) -> None:
        checkout = CheckoutState.objects.get(
            source=CheckoutState.Source.SHOPIFY, token=event.data["token"]
        )
        code = DEMO_DISCOUNT_CODE if event.data["group"] == "discount" else ""
        ReminderSettings.objects.filter(pk=self.config.pk).update(discount_code=code)
        checkouts.evaluate(checkout.pk, checkout.updated_at)
        decided = event.at + timedelta(seconds=self.rng.uniform(0.3, 2.5))
        decisions = ReminderDecision.objects.filter(checkout=checkout)
        decisions.update(decided_at=decided)
        decisions.filter(sent_at__isnull=False).update(
            sent_at=decided + timedelta(seconds=self.rng.uniform(0.8, 2.5))
        )

    def _order(self, event: Event) -> None:
        pk = _deliver(
            "orders/create",
            _order_body(event),
            f"demo-order-{event.data['number']:05d}",
            event.at,
        )
        self.deliveries.append(pk)
        processed = _backdate_delivery(pk, event.at, Timing.draw(self.rng))
        CheckoutState.objects.filter(
            source=CheckoutState.Source.SHOPIFY, token=event.data["token"]
        ).update(recorded_at=processed)

    def finish(self) -> None:
        ReminderSettings.objects.filter(pk=self.config.pk).update(
            discount_code=self.original_code, mail_imprint=self.original_imprint
        )


def _events(now: datetime) -> list[Event]:
    end = now - timedelta(minutes=10)
    start = now - timedelta(days=DEMO_DAYS) + timedelta(hours=2)  # inside "the last 30 days"
    delay = timedelta(minutes=ReminderSettings.load().reminder_delay_minutes)
    events = [e for item in DEMO_ITEMS for e in _level_events(item, start, end)]
    events += _checkout_events(start, end, delay)
    return sorted(events, key=lambda e: (e.at, e.kind != "checkout"))


def create_demo(*, now: datetime | None = None) -> Counter[str] | None:
    """Make the 30 days of demo history; None when it exists already (nothing is changed).

    One transaction: a failure leaves nothing behind, and the marker's unique key lets only
    one of two concurrent runs make it. Needs Redis only to drop the reminder evaluations the
    demo checkouts schedule (the demo decides them itself).
    """
    now = now or timezone.now()
    redis_client().ping()  # fail before anything is written, not halfway
    with _contained(), transaction.atomic():
        if demo_present() or not claims.claim_once(DEMO_MARKER, DEMO_MARKER_TTL):
            return None
        create_demo_products()
        maker = _Maker(now)
        try:
            for event in _events(now):
                maker.play(event)
        finally:
            maker.finish()
        WatchedProduct.objects.filter(product_id__in=DEMO_PRODUCT_IDS).update(enabled=False)
        # Registered last, so it runs after the inbox's enqueues: the deliveries are done.
        transaction.on_commit(lambda: _drop_delivery_jobs(maker.deliveries))
    return maker.count
