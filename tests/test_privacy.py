"""Shopify's mandatory privacy topics, and masked addresses."""

import pytest

from automation.models import CheckoutState, DataRequest, Delivery, ReminderDecision
from automation.privacy import mask_email
from tests.signing import SHOP, post_shopify
from tests.test_checkouts import checkout_body

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reminded(client, run_worker):
    post_shopify(client, checkout_body(), topic="checkouts/update")
    post_shopify(
        client, checkout_body(email="other@example.com", token="t-2"), topic="checkouts/update"
    )
    run_worker()
    assert ReminderDecision.objects.count() == 2


def test_customer_redact_deletes_checkouts_decisions_and_raw_bodies(client, run_worker, reminded):
    body = {
        "shop_domain": SHOP,
        "customer": {"id": 1, "email": "Kundin@example.com"},
        "orders_to_redact": [],
    }
    post_shopify(client, body, topic="customers/redact")
    run_worker()

    assert list(CheckoutState.objects.values_list("email", flat=True)) == ["other@example.com"]
    assert ReminderDecision.objects.count() == 1
    checkout_deliveries = Delivery.objects.filter(topic="checkouts/update").order_by("pk")
    assert [d.body is None for d in checkout_deliveries] == [True, False]
    redact = Delivery.objects.get(topic="customers/redact")
    assert redact.status == Delivery.Status.DONE
    assert redact.body is None
    assert "kundin" not in redact.last_error


def test_shop_redact_deletes_everything_of_the_shop(client, run_worker, reminded):
    post_shopify(client, {"shop_id": 1, "shop_domain": SHOP}, topic="shop/redact")
    run_worker()
    assert not CheckoutState.objects.exists()
    assert not ReminderDecision.objects.exists()
    assert list(Delivery.objects.values_list("topic", flat=True)) == ["shop/redact"]


def test_data_request_is_recorded_for_the_merchant(client, run_worker):
    body = {
        "shop_domain": SHOP,
        "customer": {"id": 191167, "email": "kundin@example.com"},
        "orders_requested": [299938, 280263],
    }
    post_shopify(client, body, topic="customers/data_request")
    run_worker()
    request = DataRequest.objects.get()
    assert (request.customer_email, request.customer_id) == ("kundin@example.com", 191167)
    assert request.orders_requested == [299938, 280263]
    assert Delivery.objects.get().status == Delivery.Status.DONE


def test_customer_redact_without_email_is_invalid(client, run_worker):
    post_shopify(client, {"customer": {"id": 1}}, topic="customers/redact")
    run_worker()
    assert Delivery.objects.get().status == Delivery.Status.INVALID


@pytest.mark.parametrize(
    ("email", "masked"),
    [("kundin@example.com", "k***@example.com"), ("", "***"), ("no-at-sign", "***")],
)
def test_mask_email(email, masked):
    assert mask_email(email) == masked
