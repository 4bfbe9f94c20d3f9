"""A signed order body re-sent as a checkout is no checkout.

Shopify signs the body only, so a captured `orders/create` body can be re-sent with
`X-Shopify-Topic: checkouts/create` or `checkouts/update` and a new webhook id. An order has a
`token` and an `updated_at` like a checkout, and was stored as a bogus checkout (whose
evaluation could then mail its buyer). The checkout parser now refuses a body without the
checkout's shape: `invalid`, "not a checkout body: ...", nothing stored.
"""

import json

import pytest

from automation.intake.sources.shopify_checkouts import CHECKOUT_ONLY_KEY, ORDER_ONLY_KEYS
from automation.models import CheckoutState, Delivery, ReminderDecision
from tests.intake.test_replayed_bodies import replay, snapshot
from tests.reminders.test_checkouts import SAMPLES, checkout_body
from tests.support.signing import post_shopify

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]


def real_order() -> dict:
    """Our order sample with the fields Shopify's order has besides (its own `token`, the
    order's number and payment state, the checkout it completed): the example order 450789469
    of https://shopify.dev/docs/api/admin-rest/latest/resources/order."""
    order = json.loads((SAMPLES / "shopify/orders_create.json").read_text())
    order.update(
        token="b1946ac92492d2347c6235b4d2611184",
        order_number=1001,
        name="#1001",
        financial_status="paid",
        fulfillment_status=None,
        confirmation_number="XPAV284CT",
        checkout_id=901414060,
        checkout_token="a-checkout-we-never-saw",
        processed_at=order["created_at"],
    )
    return order


@pytest.fixture
def shop_with_an_order(client, run_worker):
    """A checkout decided, and an order (of another checkout) completed."""
    post_shopify(client, checkout_body(), topic="checkouts/create")
    post_shopify(client, real_order(), topic="orders/create")
    run_worker()
    assert ReminderDecision.objects.count() == 1
    assert Delivery.objects.get(topic="orders/create").status == Delivery.Status.DONE


@pytest.mark.parametrize("topic", ["checkouts/create", "checkouts/update"])
def test_an_order_body_replayed_as_a_checkout_is_invalid_and_stores_nothing(
    client, run_worker, shop_with_an_order, topic
):
    """Fails before: the order was stored as checkout `b1946ac9…` and its evaluation scheduled."""
    before = snapshot()
    order = Delivery.objects.get(topic="orders/create")

    replayed = replay(client, order, topic)
    run_worker()

    replayed.refresh_from_db()
    assert replayed.status == Delivery.Status.INVALID, replayed.last_error
    assert replayed.last_error.startswith("not a checkout body: it has ")
    assert "order_number" in replayed.last_error
    after = snapshot()
    after["deliveries"].remove(replayed.pk)
    after["bodies"] -= 1
    assert after == before
    assert not CheckoutState.objects.filter(token=real_order()["token"]).exists()


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        # an order stripped of every order-only key still names itself
        (
            {"admin_graphql_api_id": "gid://shopify/Order/820982911946154508"},
            "not a checkout body: admin_graphql_api_id names 'gid://shopify/Order/",
        ),
        # and without that, it lacks the key every checkout has
        ({}, f"not a checkout body: no {CHECKOUT_ONLY_KEY}"),
    ],
    ids=["order-gid", "no-recovery-url-key"],
)
def test_an_order_without_order_only_keys_is_still_no_checkout(client, run_worker, changes, reason):
    """Fails before: with `token` and `updated_at` it was stored as a checkout."""
    order = {k: v for k, v in real_order().items() if k not in ORDER_ONLY_KEYS}
    order.pop("admin_graphql_api_id")
    order.update(changes)
    post_shopify(client, order, topic="checkouts/update")
    run_worker()

    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID, delivery.last_error
    assert delivery.last_error.startswith(reason)
    assert not CheckoutState.objects.exists()


def test_a_checkout_without_a_recovery_link_is_still_a_checkout(client, run_worker):
    """The key is what counts: Shopify may send it null (no link, so no reminder)."""
    post_shopify(client, checkout_body(abandoned_checkout_url=None), topic="checkouts/update")
    run_worker()

    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DONE, delivery.last_error
    assert CheckoutState.objects.get().recovery_url == ""
