"""Hostile input end to end: handlers never crash on signed junk, replays change nothing,
and a database outage answers 503 without partial state."""

import json

import pytest
from django.db import close_old_connections, connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automation.intake import inbox
from automation.models import AdGroupAction, CheckoutState, Delivery, StockLevel, WatchedProduct
from tests.support.postgres import kill_django_connection
from tests.support.signing import SECRET, post_shopify, shopify_headers
from tests.support.watching import watch

pytestmark = pytest.mark.django_db(transaction=True)

ITEM = 808950810
PRODUCT = 632910392
TOPICS = [
    ("shopify", "inventory_levels/update"),
    ("shopify", "inventory_levels/disconnect"),
    ("shopify", "products/create"),
    ("shopify", "products/update"),
    ("shopify", "products/delete"),
    ("shopify", "checkouts/create"),
    ("shopify", "checkouts/update"),
    ("shopify", "orders/create"),
    ("shopify", "customers/redact"),
    ("shopify", "customers/data_request"),
    ("stripe", "checkout.session.expired"),
    ("stripe", "checkout.session.completed"),
]
KEYS = [
    "inventory_item_id",
    "location_id",
    "available",
    "updated_at",
    "token",
    "email",
    "buyer_accepts_marketing",
    "completed_at",
    "abandoned_checkout_url",
    "total_price",
    "currency",
    "line_items",
    "checkout_token",
    "created_at",
    "customer",
    "orders_requested",
    "data",
    "object",
    "consent",
    "promotions",
    "customer_details",
    "amount_total",
    "id",
    "status",
    "quantity",
    "price",
    "variant_id",
    "product_id",
    "sku",
    "vendor",
    "title",
    "after_expiration",
    "variants",
    "inventory_policy",
    "inventory_management",
    "position",
    "admin_graphql_api_id",
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(["2026-11-26T16:10:00+01:00", "2026-11-26T16:10:00", "40.00", "opt_in", "-1"])
    | st.sampled_from([ITEM, PRODUCT, "active", "archived", "deny", "continue", "shopify"])
    # text no database or mail can take: it must end `invalid` where it is kept, never `dead`
    | st.sampled_from(["Kerze\x00", "\ud800", "kundin\udfff@example.com"])
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS), children, max_size=6)
    ),
    max_leaves=20,
)
payloads = st.dictionaries(st.sampled_from(KEYS), values, max_size=12)

FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(payload=payloads, route=st.sampled_from(TOPICS))
def test_handlers_end_every_signed_body_with_a_status_never_a_crash(queue, payload, route):
    if not WatchedProduct.objects.exists():
        watch(ITEM, "555", label="W", customer_id="1234567890", product_id=PRODUCT)
    source, topic = route
    try:
        body = json.dumps(payload, allow_nan=True).encode()
    except ValueError:
        return
    delivery = Delivery.objects.create(
        source=source,
        topic=topic,
        webhook_id="x",
        body=body,
        event_id=str(Delivery.objects.count()),
    )
    status = inbox.process(delivery.pk, final_attempt=True)
    delivery.refresh_from_db()
    assert status == delivery.status
    assert delivery.status in {"done", "ignored", "stale", "invalid"}, delivery.last_error
    if delivery.status == "invalid":
        assert delivery.last_error
    Delivery.objects.filter(pk=delivery.pk).delete()


def test_a_captured_delivery_resent_a_week_later_changes_nothing(client, run_worker):
    watch(ITEM, "555", customer_id="1234567890")
    body = json.dumps(
        {
            "inventory_item_id": 808950810,
            "location_id": 1,
            "available": 0,
            "updated_at": "2026-11-23T10:00:00+01:00",
        }
    ).encode()
    captured = shopify_headers(body, "inventory_levels/update")
    client.post("/webhooks/shopify/", data=body, content_type="application/json", **captured)
    run_worker()
    newer = {
        "inventory_item_id": 808950810,
        "location_id": 1,
        "available": 9,
        "updated_at": "2026-11-29T10:00:00+01:00",
    }
    post_shopify(client, newer, topic="inventory_levels/update")
    run_worker()
    actions = AdGroupAction.objects.count()

    # a week later an attacker (or a confused proxy) replays the captured request verbatim
    replay = client.post(
        "/webhooks/shopify/", data=body, content_type="application/json", **captured
    )
    run_worker()
    assert replay.status_code == 200
    assert replay.json() == {"status": "duplicate"}
    assert Delivery.objects.count() == 2
    assert StockLevel.objects.get().available == 9
    assert AdGroupAction.objects.count() == actions
    # even with a fresh webhook id, the stale guard keeps the old level from winning
    post_shopify(client, json.loads(body), topic="inventory_levels/update")
    run_worker()
    assert Delivery.objects.order_by("-pk").first().status == "stale"
    assert StockLevel.objects.get().available == 9


@pytest.mark.postgres(reason="a database server that stops answering on its port")
def test_database_unreachable_during_intake_is_503_and_leaves_nothing(
    client, queue, requires_postgres
):
    body = json.dumps({"token": "t"}).encode()
    headers = shopify_headers(body, "checkouts/update", secret=SECRET)
    real_port = connection.settings_dict["PORT"]
    real_host = connection.settings_dict["HOST"]
    connection.close()
    connection.settings_dict["HOST"], connection.settings_dict["PORT"] = "127.0.0.1", "1"
    try:
        response = client.post(
            "/webhooks/shopify/", data=body, content_type="application/json", **headers
        )
    finally:
        connection.close()
        connection.settings_dict["HOST"], connection.settings_dict["PORT"] = real_host, real_port
    assert response.status_code == 503
    assert response.json() == {"error": "storage unavailable, retry later"}
    assert queue.count == 0
    assert not Delivery.objects.exists()
    assert not CheckoutState.objects.exists()
    # Shopify's retry then goes through
    retry = client.post("/webhooks/shopify/", data=body, content_type="application/json", **headers)
    assert retry.status_code == 200


@pytest.mark.postgres(reason="a server-side connection killed (pg_terminate_backend)")
def test_a_killed_database_connection_answers_503_once_then_reconnects(
    client, queue, requires_postgres
):
    """The INSERT on psycopg's own cursor still turns a dead connection into Django's error."""
    body = json.dumps({"token": "t"}).encode()

    def post(webhook_id: str):
        headers = shopify_headers(body, "checkouts/update", HTTP_X_SHOPIFY_WEBHOOK_ID=webhook_id)
        return client.post("/webhooks/shopify/", body, content_type="application/json", **headers)

    first = post("before")
    assert first.status_code == 200
    kill_django_connection()
    refused = post("after")
    assert refused.status_code == 503
    close_old_connections()  # what Django does after every served request; the test client doesn't
    assert list(Delivery.objects.values_list("webhook_id", flat=True)) == ["before"]
    retry = post("after")
    assert retry.status_code == 200
    assert sorted(Delivery.objects.values_list("webhook_id", flat=True)) == ["after", "before"]
