"""An order is attributed only to decisions about checkouts of its own shop.

Two shops may deliver to one installation (SHOPIFY_SHOP_DOMAINS); a buyer who shops at both
with one address must not turn shop B's order into a success of shop A's reminder, and a
checkout token shop B reports must not complete shop A's checkout.
"""

import json

import pytest
from django.core import mail
from django.utils import timezone

from automation.models import CheckoutState, Delivery, ReminderDecision
from tests.reminders.test_checkouts import SAMPLES, checkout_body, shop  # noqa: F401 (the `shop` fixture)
from tests.support.signing import SHOP, post_shopify

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]

OTHER_SHOP = "kerzenwerk.myshopify.com"


@pytest.fixture
def reminded(client, run_worker, shop, settings) -> ReminderDecision:  # noqa: F811
    """Two shops deliver here; shop A's buyer got a reminder."""
    settings.SHOPIFY_SHOP_DOMAINS = [SHOP, OTHER_SHOP]
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()
    (decision,) = ReminderDecision.objects.all()
    assert decision.sent_at is not None and len(mail.outbox) == 1
    return decision


def order(**changes) -> dict:
    """Shopify's sample order, placed now (after the reminder)."""
    body = json.loads((SAMPLES / "shopify/orders_create.json").read_text())
    body.update(created_at=timezone.now().isoformat(), **changes)
    return body


def last_note() -> str:
    return Delivery.objects.filter(topic="orders/create").latest("pk").result


def test_an_order_of_another_shop_from_the_same_address_is_not_attributed(
    client, run_worker, reminded
):
    other = order(id=1, checkout_token="kerzenwerk-checkout")
    post_shopify(client, other, topic="orders/create", HTTP_X_SHOPIFY_SHOP_DOMAIN=OTHER_SHOP)
    run_worker()

    reminded.refresh_from_db()
    assert (reminded.converted_at, reminded.order_ref) == (None, "")
    assert "no reminder decision to attribute" in last_note()

    # the same order taken by shop A is its reminder's result
    post_shopify(client, order(id=2, checkout_token="kerzenwerk-checkout"), topic="orders/create")
    run_worker()
    reminded.refresh_from_db()
    assert reminded.order_ref == "shopify:order:2"
    assert reminded.attributed_by == "address"


def test_another_shops_order_with_the_same_checkout_token_neither_completes_nor_converts(
    client, run_worker, reminded
):
    post_shopify(client, order(), topic="orders/create", HTTP_X_SHOPIFY_SHOP_DOMAIN=OTHER_SHOP)
    run_worker()

    reminded.refresh_from_db()
    assert reminded.converted_at is None
    assert CheckoutState.objects.get(shop_domain=SHOP).completed_at is None
