"""A sender timestamp far ahead of our clock (or before Shopify existed) is refused as
`invalid` with the reason: the stale guards keep the newest timestamp seen, so one from the
future would make every real later message `stale` and freeze its item."""

import importlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone

from automation.intake.sources import events
from automation.intake.sources.fields import EARLIEST_INSTANT
from automation.intake.sources.stripe_checkouts import parse_stripe_session
from automation.models import AdGroupAction, CheckoutState, Delivery, Product, StockLevel
from automation.platform.exceptions import InvalidPayload
from tests.support.signing import SHOP, post_shopify
from tests.support.watching import watch

ITEM = 808950810
STORE = 24826418
SAMPLES = Path(__file__).resolve().parents[2] / "automation" / "samples" / "shopify"
FAR_FUTURE = "9999-12-31T23:59:59-12:00"
Status = Delivery.Status


def level(updated_at: str, available: int) -> dict:
    return {
        "inventory_item_id": ITEM,
        "location_id": STORE,
        "available": available,
        "updated_at": updated_at,
    }


def ahead(seconds: float) -> str:
    return (timezone.now() + timedelta(seconds=seconds)).isoformat()


def parse(topic: str, body: dict):
    return events.parse_event("shopify", topic, json.dumps(body).encode(), SHOP)


@pytest.mark.django_db(transaction=True)
def test_a_level_from_year_9999_is_invalid_and_the_next_real_sell_out_pauses(client, run_worker):
    watch(ITEM, "555", customer_id="1234567890")
    post_shopify(client, level(FAR_FUTURE, 12), topic="inventory_levels/update")
    run_worker()
    refused = Delivery.objects.get()
    assert refused.status == Status.INVALID
    assert refused.last_error == (
        "updated_at 9999-12-31T23:59:59-12:00 lies more than 300 seconds in the future"
    )
    assert not StockLevel.objects.exists()

    post_shopify(client, level(ahead(-60), 0), topic="inventory_levels/update")
    run_worker()
    sold_out = Delivery.objects.order_by("-pk").first()
    assert sold_out.status == Status.DONE
    assert AdGroupAction.objects.get().desired_status == "PAUSED"


def test_the_bound_leaves_room_for_clock_skew(settings):
    parse("inventory_levels/update", level(ahead(settings.WEBHOOK_MAX_FUTURE_SECONDS - 30), 1))
    with pytest.raises(InvalidPayload, match="in the future"):
        parse("inventory_levels/update", level(ahead(settings.WEBHOOK_MAX_FUTURE_SECONDS + 30), 1))


def test_a_timestamp_before_shopify_existed_is_invalid():
    early = (EARLIEST_INSTANT - timedelta(seconds=1)).isoformat()
    with pytest.raises(InvalidPayload, match="lies before 2006-01-01"):
        parse("inventory_levels/update", level(early, 1))
    with pytest.raises(InvalidPayload, match="lies before"):
        parse("inventory_levels/update", level("0001-01-01T00:00:00+14:00", 1))


@pytest.mark.parametrize(
    ("topic", "sample", "field"),
    [
        ("products/update", "products_update.json", "updated_at"),
        ("checkouts/update", "checkouts_update.json", "updated_at"),
        ("checkouts/update", "checkouts_update.json", "completed_at"),
        ("orders/create", "orders_create.json", "created_at"),
    ],
)
def test_every_guarded_shopify_timestamp_refuses_the_far_future(topic, sample, field):
    body = json.loads((SAMPLES / sample).read_text())
    body[field] = FAR_FUTURE
    with pytest.raises(InvalidPayload, match=f"{field} .* in the future"):
        parse(topic, body)


def stripe_event(created: int) -> dict:
    fixture = Path(__file__).parent.parent / "fixtures" / "stripe" / "checkout_session.json"
    session = json.loads(fixture.read_text())
    return {
        "id": "evt_1",
        "type": "checkout.session.expired",
        "created": created,
        "data": {"object": session},
    }


@pytest.mark.parametrize("created", [int(datetime(2099, 1, 1, tzinfo=UTC).timestamp()), 2**40 - 1])
def test_a_stripe_event_created_in_the_future_is_invalid_not_an_error(created):
    with pytest.raises(InvalidPayload, match="created .* in the future"):
        parse_stripe_session(stripe_event(created))


def test_a_recent_stripe_event_still_parses():
    created = int(timezone.now().timestamp()) - 60
    assert parse_stripe_session(stripe_event(created)).updated_at == datetime.fromtimestamp(
        created, tz=UTC
    )


@pytest.mark.django_db(transaction=True)
def test_an_absurd_triggered_at_header_is_dropped_and_the_delivery_kept(client, queue):
    post_shopify(client, {"n": 1}, HTTP_X_SHOPIFY_TRIGGERED_AT=FAR_FUTURE)
    assert Delivery.objects.get().triggered_at is None


# --- what was stored before the parsers refused it ------------------------------------------


@pytest.mark.django_db
@pytest.mark.postgres(
    reason="stores a time past year 9999 in UTC, which PostgreSQL's timestamptz holds"
)
def test_the_migration_unfreezes_stored_future_timestamps(admin_client):
    """Stored as the review found it: year 9999 at -12:00, past what Python can load."""
    watch(ITEM, "555", customer_id="1234567890")
    StockLevel.objects.create(
        inventory_item_id=ITEM, location_id=STORE, available=12, updated_at=timezone.now()
    )
    Product.objects.filter(product_id__isnull=False).update(updated_at=timezone.now())
    checkout = CheckoutState.objects.create(
        source="shopify", token="t1", updated_at=timezone.now(), shop_domain=SHOP
    )
    real = timezone.now() - timedelta(minutes=5)
    CheckoutState.objects.create(source="shopify", token="t2", updated_at=real, shop_domain=SHOP)
    with connection.cursor() as cursor:
        for table in ("automation_stocklevel", "automation_checkoutstate"):
            cursor.execute(
                f"UPDATE {table} SET updated_at = %s::timestamptz "  # noqa: S608
                "WHERE updated_at > now() - interval '1 minute'",
                [FAR_FUTURE],
            )

    migration = importlib.import_module("automation.migrations.0010_unfreeze_future_timestamps")
    migration.unfreeze(apps, None)

    stored = StockLevel.objects.get()
    assert stored.updated_at == stored.recorded_at
    checkout = CheckoutState.objects.get(pk=checkout.pk)
    assert checkout.updated_at == checkout.recorded_at
    assert CheckoutState.objects.get(token="t2").updated_at == real
    assert admin_client.get("/admin/automation/stocklevel/").status_code == 200


@pytest.mark.django_db
@pytest.mark.postgres(
    reason="stores a time past year 9999 in UTC, which PostgreSQL's timestamptz holds"
)
def test_the_stock_list_shows_a_level_stored_from_beyond_year_9999(admin_client):
    StockLevel.objects.create(
        inventory_item_id=ITEM, location_id=STORE, available=12, updated_at=timezone.now()
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE automation_stocklevel SET updated_at = %s::timestamptz", [FAR_FUTURE]
        )
    response = admin_client.get("/admin/automation/stocklevel/")
    assert response.status_code == 200
    assert str(ITEM) in response.content.decode()
