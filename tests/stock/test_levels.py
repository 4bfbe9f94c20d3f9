"""Stock levels pause and enable ad groups, never on stale data."""

import json
import random
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.core import mail
from django.db import connection, transaction

import automation
from automation.intake.sources.shopify_inventory import LevelUpdate, parse_level
from automation.models import AdGroupAction, Delivery, StockLevel, WatchedProduct
from automation.stock import apply, facts, levels
from tests.support.signing import post_shopify
from tests.support.watching import watch

pytestmark = pytest.mark.django_db(transaction=True)

ITEM = 808950810
STORE = 24826418
WAREHOUSE = 24826419
CUSTOMER = "1234567890"
AD_GROUP = "555"
TOPIC = "inventory_levels/update"


@pytest.fixture
def winterzauber():
    return watch(ITEM, AD_GROUP, customer_id=CUSTOMER)


def apply_level(update: LevelUpdate, *, source: str) -> str:
    """One level through the stock's path in its own transaction; the delivery status it
    would give."""
    with transaction.atomic():
        applied = apply.apply_levels([update], source=source)
    if not applied.watched:
        return Delivery.Status.IGNORED
    return Delivery.Status.DONE if applied.written[0] else Delivery.Status.STALE


def stock() -> int | None:
    return WatchedProduct.objects.get(label="Winterzauber").stock


def level(available, updated_at: str, location: int = STORE, item: int = ITEM) -> dict:
    return {
        "inventory_item_id": item,
        "location_id": location,
        "available": available,
        "updated_at": updated_at,
    }


def send(client, body: dict, **headers):
    return post_shopify(client, body, topic=TOPIC, **headers)


def statuses() -> list[str]:
    return list(AdGroupAction.objects.order_by("pk").values_list("desired_status", flat=True))


def test_restock_race_newer_level_first_then_stale_then_retry(client, run_worker, winterzauber):
    """Thursday: "0 at 16:10" and "12 at 16:12" are sent; the 16:12 one arrives first."""
    sold_out = level(0, "2026-11-26T16:10:00+01:00")
    restocked = level(12, "2026-11-26T16:12:00+01:00")

    send(client, restocked)
    run_worker()
    assert statuses() == ["ENABLED"]

    send(client, sold_out)
    run_worker()
    late = Delivery.objects.order_by("-pk").first()
    assert late.status == Delivery.Status.STALE
    assert statuses() == ["ENABLED"]  # no Ads call for the stale message
    assert StockLevel.objects.get().available == 12

    send(client, restocked)  # the 16:12 message again (a retry with a new webhook id)
    run_worker()
    retried = Delivery.objects.order_by("-pk").first()
    assert retried.status == Delivery.Status.DONE
    assert statuses() == ["ENABLED"]  # Ads already has ENABLED: no second call
    assert retried.result == "total available 12; ad group 555 ENABLED unchanged"
    assert AdGroupAction.objects.first().reason == "Winterzauber: 12 available > 0"


def test_two_locations_enable_until_both_are_empty(client, run_worker, winterzauber):
    send(client, level(0, "2026-11-26T10:00:00+01:00", STORE))
    send(client, level(5, "2026-11-26T10:01:00+01:00", WAREHOUSE))
    run_worker()
    assert statuses()[-1] == "ENABLED"
    assert stock() == 5

    send(client, level(0, "2026-11-26T11:00:00+01:00", WAREHOUSE))
    run_worker()
    assert statuses()[-1] == "PAUSED"
    assert AdGroupAction.objects.first().reason == "Winterzauber: 0 available ≤ 0"


def test_threshold_pauses_before_the_last_unit(client, run_worker, winterzauber):
    winterzauber.pause_at = 2
    winterzauber.save()
    send(client, level(2, "2026-11-26T10:00:00+01:00"))
    run_worker()
    assert statuses() == ["PAUSED"]


def test_untracked_stock_is_stored_without_action(client, run_worker, winterzauber):
    send(client, level(None, "2026-11-26T10:00:00+01:00"))
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.IGNORED
    assert "not tracked" in delivery.result
    assert StockLevel.objects.get().available is None
    assert not AdGroupAction.objects.exists()


def test_unwatched_item_is_ignored(client, run_worker, winterzauber):
    send(client, level(0, "2026-11-26T10:00:00+01:00", item=999))
    run_worker()
    assert Delivery.objects.get().status == Delivery.Status.IGNORED
    assert not StockLevel.objects.exists()
    assert not AdGroupAction.objects.exists()


def test_disabled_watch_is_ignored(client, run_worker, winterzauber):
    WatchedProduct.objects.update(enabled=False)
    send(client, level(0, "2026-11-26T10:00:00+01:00"))
    run_worker()
    assert Delivery.objects.get().status == Delivery.Status.IGNORED


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            {"location_id": STORE, "available": 0, "updated_at": "2026-11-26T10:00:00Z"},
            "inventory_item_id",
        ),
        (
            level(0, "2026-11-26T10:00:00Z") | {"inventory_item_id": "808950810"},
            "inventory_item_id",
        ),
        (level(0, "2026-11-26T10:00:00Z") | {"location_id": 1.5}, "location_id"),
        (level(0, "2026-11-26T10:00:00Z") | {"inventory_item_id": 2**70}, "inventory_item_id"),
        (level("0", "2026-11-26T10:00:00Z"), "available"),
        (level(True, "2026-11-26T10:00:00Z"), "available"),
        (level(0, "2026-11-26T10:00:00"), "updated_at"),
        (level(0, "yesterday"), "updated_at"),
        (
            {k: v for k, v in level(0, "2026-11-26T10:00:00Z").items() if k != "available"},
            "available",
        ),
    ],
    ids=[
        "no-item",
        "item-string",
        "location-float",
        "item-huge",
        "available-string",
        "available-bool",
        "no-offset",
        "not-a-date",
        "no-available",
    ],
)
def test_malformed_body_ends_invalid_with_the_reason(
    client, run_worker, winterzauber, body, reason
):
    send(client, body)
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID
    assert reason in delivery.last_error
    assert not AdGroupAction.objects.exists()
    assert not mail.outbox


def test_guard_takes_newer_and_equal_but_not_older():
    t = datetime.fromisoformat("2026-11-26T16:10:00+01:00")
    assert levels.store_levels([LevelUpdate(ITEM, STORE, 3, t)]) == [True]
    assert levels.store_levels([LevelUpdate(ITEM, STORE, 3, t)]) == [True]  # equal: a retry
    assert levels.store_levels([LevelUpdate(ITEM, STORE, 9, t - timedelta(microseconds=1))]) == [
        False
    ]
    assert levels.store_levels([LevelUpdate(ITEM, STORE, 1, t + timedelta(seconds=1))]) == [True]
    assert StockLevel.objects.get().available == 1


def test_the_product_counts_its_variant_over_its_locations(winterzauber):
    t = datetime.fromisoformat("2026-11-26T16:10:00+01:00")
    levels.store_levels(
        [
            LevelUpdate(ITEM, STORE, 3, t),
            LevelUpdate(ITEM, WAREHOUSE, None, t),  # untracked counts 0
            LevelUpdate(ITEM + 1, STORE, 50, t),  # another item: not this product's
            LevelUpdate(ITEM, WAREHOUSE, 4, t + timedelta(seconds=1)),
            LevelUpdate(ITEM, STORE, 0, t + timedelta(seconds=1)),
        ]
    )
    with transaction.atomic():
        apply.evaluate(apply.lock_products([winterzauber.pk]))
    assert stock() == 4


@pytest.mark.postgres(reason="concurrent writers, serialised by PostgreSQL's row locks")
def test_concurrent_shuffled_stream_ends_at_the_newest_message(requires_postgres, winterzauber):
    start = datetime.fromisoformat("2026-11-26T09:00:00+01:00")
    rng = random.Random(7)
    stream = [
        LevelUpdate(ITEM, STORE, rng.choice([0, 0, 1, 4, 9]), start + timedelta(minutes=i))
        for i in range(40)
    ]
    newest = stream[-1]
    messages = stream + rng.sample(stream, 15)  # duplicates
    rng.shuffle(messages)
    chunks = [messages[i::4] for i in range(4)]
    errors: list[BaseException] = []

    def apply(chunk):
        try:
            for update in chunk:
                apply_level(update, source="webhook")
        except BaseException as err:  # pragma: no cover - surfaced below
            errors.append(err)
        finally:
            connection.close()

    threads = [threading.Thread(target=apply, args=(chunk,)) for chunk in chunks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors
    stored = StockLevel.objects.get()
    assert (stored.available, stored.updated_at) == (newest.available, newest.updated_at)
    expected = "PAUSED" if newest.available <= 0 else "ENABLED"
    assert AdGroupAction.objects.order_by("-requested_at", "-pk").first().desired_status == expected


@pytest.mark.postgres(reason="a second transaction waiting on a row lock (SELECT ... FOR UPDATE)")
def test_a_message_waits_while_another_holds_the_products_lock(requires_postgres, winterzauber):
    """The lock that makes the last Ads call the newest one: a second message for the item
    waits for the first transaction instead of deciding on levels that are about to change."""
    locked, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def holder():
        try:
            with transaction.atomic():
                assert apply.lock_products(facts.watching([ITEM]))
                locked.set()
                release.wait(5)
        finally:
            connection.close()

    def second():
        try:
            update = LevelUpdate(
                ITEM, STORE, 3, datetime.fromisoformat("2026-11-26T16:10:00+01:00")
            )
            finished.append(apply_level(update, source="webhook"))
        finally:
            connection.close()

    first = threading.Thread(target=holder)
    first.start()
    assert locked.wait(5)
    waiting = threading.Thread(target=second)
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive() and not finished  # blocked on the watched product
    assert not StockLevel.objects.exists()
    release.set()
    first.join(5)
    waiting.join(5)
    assert finished == [Delivery.Status.DONE]
    assert statuses() == ["ENABLED"]


def test_one_item_drives_several_ad_groups(client, run_worker, winterzauber):
    watch(ITEM, "556", label="Winterzauber (Brand)", customer_id=CUSTOMER)
    send(client, level(0, "2026-11-26T10:00:00+01:00"))
    run_worker()
    assert sorted(AdGroupAction.objects.values_list("ad_group_id", "desired_status")) == [
        ("555", "PAUSED"),
        ("556", "PAUSED"),
    ]


def test_dryrun_backend_records_the_action(client, run_worker, winterzauber):
    send(client, level(0, "2026-11-26T10:00:00+01:00"))
    run_worker()
    action = AdGroupAction.objects.get()
    assert action.result == AdGroupAction.Result.DRY_RUN
    assert action.source == AdGroupAction.Source.WEBHOOK
    assert action.delivery == Delivery.objects.get()
    assert (action.customer_id, action.ad_group_id) == (CUSTOMER, AD_GROUP)
    assert action.applied_at >= action.requested_at


def test_parse_level_accepts_the_shopify_sample():
    sample = Path(automation.__file__).parent / "samples/shopify/inventory_levels_update.json"
    update = parse_level(json.loads(sample.read_text()))
    assert update == LevelUpdate(
        808950810, 24826418, 0, datetime.fromisoformat("2026-11-26T16:10:00+01:00")
    )
