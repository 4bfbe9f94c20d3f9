"""A captured body re-sent under another topic changes nothing.

Shopify's HMAC covers the body only: `X-Shopify-Topic` and `X-Shopify-Webhook-Id` are free for
whoever holds a signed body ("Each webhook request includes a base64-encoded X-Shopify-Hmac-SHA256
header, which is generated using the app's client secret along with the data sent in the
request": https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook).
So every handler checks that the body has its topic's shape; a mismatch ends `invalid` with the
reason. Stripe signs `t.body`, and the topic is the body's own `type`: nothing to re-label.
"""

import json
import uuid

import pytest

from automation.models import (
    AdGroupAction,
    CheckoutState,
    DataRequest,
    Delivery,
    ReminderDecision,
    StockLevel,
)
from tests.reminders.test_checkouts import SAMPLES, checkout_body
from tests.support.admin_shop import serve_admin_shop
from tests.support.signing import (
    STRIPE_SECRET,
    post_shopify,
    post_stripe,
    shopify_headers,
    stripe_header,
)
from tests.support.watching import watch

pytestmark = pytest.mark.django_db(transaction=True)

LEVEL = {
    "inventory_item_id": 808950810,
    "location_id": 905684977,
    "available": 6,
    "updated_at": "2026-11-26T16:10:00+01:00",
    "admin_graphql_api_id": "gid://shopify/InventoryLevel/905684977?inventory_item_id=808950810",
}


def replay(client, delivery: Delivery, topic: str):
    """Re-send a stored delivery's exact signed body under another topic and a new webhook id."""
    body = bytes(delivery.body)
    headers = shopify_headers(body, topic, HTTP_X_SHOPIFY_WEBHOOK_ID=str(uuid.uuid4()))
    response = client.post(
        "/webhooks/shopify/", data=body, content_type="application/json", **headers
    )
    assert response.status_code == 200, response.content
    return Delivery.objects.filter(topic=topic).latest("pk")


@pytest.fixture
def busy_shop(client, run_worker):
    """A shop day: stock levels, two checkouts with decisions, an order."""
    watch(LEVEL["inventory_item_id"], "555", customer_id="1234567890", pause_at=0)
    post_shopify(client, LEVEL, topic="inventory_levels/update")
    post_shopify(client, checkout_body(), topic="checkouts/create")
    post_shopify(
        client, checkout_body(email="other@example.com", token="t-2"), topic="checkouts/update"
    )
    order = json.loads((SAMPLES / "shopify/orders_create.json").read_text())
    order["checkout_token"] = "a-checkout-we-never-saw"
    post_shopify(client, order, topic="orders/create")
    run_worker()
    assert ReminderDecision.objects.count() == 2
    assert StockLevel.objects.count() == 1


@pytest.fixture
def admin_shop(httpserver, settings):
    return serve_admin_shop(httpserver, settings)


def snapshot() -> dict:
    """Everything a replay could change."""
    return {
        "deliveries": sorted(Delivery.objects.values_list("pk", flat=True)),
        "bodies": Delivery.objects.filter(body__isnull=False).count(),
        "checkouts": sorted(
            CheckoutState.objects.values_list("token", "email", "completed_at", "updated_at")
        ),
        "decisions": ReminderDecision.objects.count(),
        "levels": sorted(StockLevel.objects.values_list("location_id", "available")),
        "actions": AdGroupAction.objects.count(),
        "data_requests": DataRequest.objects.count(),
    }


def test_an_inventory_body_replayed_as_shop_redact_deletes_nothing(
    client, run_worker, busy_shop, admin_shop
):
    """Fails before: it deleted every delivery, checkout and decision of the shop."""
    # Even with the app uninstalled (the Admin API refuses us): the body is no shop/redact
    admin_shop.uninstall()
    before = snapshot()
    level = Delivery.objects.get(topic="inventory_levels/update")

    redact = replay(client, level, "shop/redact")
    run_worker()

    redact.refresh_from_db()
    assert redact.status == Delivery.Status.INVALID
    assert "not a shop/redact body: shop_id" in redact.last_error
    after = snapshot()
    after["deliveries"].remove(redact.pk)
    after["bodies"] -= 1
    assert after == before
    assert not admin_shop.requests  # the shape decided; the Admin API was not even asked


def test_a_checkout_body_replayed_as_customers_redact_deletes_nothing(
    client, run_worker, busy_shop
):
    """Fails before: it deleted that customer's checkouts and decisions."""
    before = snapshot()
    checkout = Delivery.objects.get(topic="checkouts/create")

    redact = replay(client, checkout, "customers/redact")
    run_worker()

    redact.refresh_from_db()
    assert redact.status == Delivery.Status.INVALID
    assert "customers/redact needs" in redact.last_error
    after = snapshot()
    after["deliveries"].remove(redact.pk)
    after["bodies"] -= 1
    assert after == before


@pytest.mark.parametrize(
    ("captured", "topic", "reason"),
    [
        ("checkouts/create", "customers/data_request", "not a customers/data_request body"),
        ("inventory_levels/update", "customers/data_request", "shop_domain"),
        ("checkouts/create", "inventory_levels/update", "inventory_item_id"),
        ("orders/create", "inventory_levels/update", "inventory_item_id"),
        ("inventory_levels/update", "orders/create", "not an orders/create body: id"),
        ("inventory_levels/update", "checkouts/update", "token"),
        ("orders/create", "shop/redact", "not a shop/redact body"),
        ("orders/create", "customers/redact", "customers/redact needs"),
        # the destructive catalogue topics: a level or an order must not remove anything
        (
            "inventory_levels/update",
            "inventory_levels/disconnect",
            "not an inventory_levels/disconnect body: it has admin_graphql_api_id, available",
        ),
        ("orders/create", "products/delete", "not a products/delete body: it has"),
        ("inventory_levels/update", "products/update", "id must be a positive integer"),
        ("orders/create", "products/update", "not a product body: admin_graphql_api_id"),
    ],
)
def test_a_body_replayed_under_another_topic_is_invalid_and_changes_nothing(
    client, run_worker, busy_shop, captured, topic, reason
):
    """Fail before: both bodies were recorded as data requests, the inventory body as an order
    ended `ignored`, the order body as shop/redact wiped the shop. The other four are guards
    that already held (the inventory and checkout parsers checked their shapes)."""
    before = snapshot()
    original = Delivery.objects.filter(topic=captured).earliest("pk")

    replayed = replay(client, original, topic)
    run_worker()

    replayed.refresh_from_db()
    assert replayed.status == Delivery.Status.INVALID, replayed.last_error
    assert reason in replayed.last_error
    after = snapshot()
    after["deliveries"].remove(replayed.pk)
    after["bodies"] -= 1
    assert after == before


def test_an_order_body_of_another_kind_of_object_is_not_an_order(client, run_worker):
    """A body whose admin_graphql_api_id names another object is no order."""
    body = json.loads((SAMPLES / "shopify/orders_create.json").read_text())
    body["admin_graphql_api_id"] = "gid://shopify/Checkout/820982911946154508"
    post_shopify(client, body, topic="orders/create")
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID
    assert "gid://shopify/Checkout/" in delivery.last_error
    assert not CheckoutState.objects.exists()


def stripe_event(kind: str = "checkout.session.expired") -> dict:
    session = json.loads((SAMPLES / "stripe/checkout_session_expired.json").read_text())
    session["id"] = f"evt_{uuid.uuid4().hex}"
    session["type"] = kind
    return session


def test_stripe_routes_by_the_signed_type_so_a_relabelled_event_is_refused(client, queue):
    """Guard: Stripe's signature covers `t.` + the whole body, `type` included
    (https://docs.stripe.com/webhooks#verify-manually); there is no topic header to change."""
    event = stripe_event()
    body = json.dumps(event).encode()
    signature = stripe_header(body, [STRIPE_SECRET])
    # A topic-like header is not read at all: the stored topic is the body's type
    response = client.post(
        "/webhooks/stripe/",
        data=body,
        content_type="application/json",
        HTTP_STRIPE_SIGNATURE=signature,
        HTTP_X_SHOPIFY_TOPIC="checkout.session.completed",
    )
    assert response.status_code == 200
    assert Delivery.objects.get().topic == "checkout.session.expired"
    # Re-labelling the type inside the body breaks the signature
    relabelled = json.dumps(event | {"type": "checkout.session.completed"}).encode()
    refused = client.post(
        "/webhooks/stripe/",
        data=relabelled,
        content_type="application/json",
        HTTP_STRIPE_SIGNATURE=signature,
    )
    assert refused.status_code == 400
    assert Delivery.objects.count() == 1
    # While a correctly signed event of another type is its own delivery
    assert post_stripe(client, stripe_event("checkout.session.completed")).status_code == 200
    assert Delivery.objects.filter(topic="checkout.session.completed").count() == 1
