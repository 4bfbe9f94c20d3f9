"""Shopify's mandatory privacy topics, and masked addresses."""

import json

import pytest

from automation.models import CheckoutState, DataRequest, Delivery, ReminderDecision
from automation.privacy import customer_id_ref, email_ref, mask_email, phone_ref
from tests.signing import SHOP, post_shopify
from tests.test_checkouts import SAMPLES, checkout_body

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


# --- customers/redact by id, e-mail or phone ------------------------------------------------
# Shopify's payload: shop_id, shop_domain, customer {id, email, phone}, orders_to_redact
# (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance, "customers/redact").

KUNDIN = {"id": 603851970716743426, "email": "kundin@example.com", "phone": "+49 40 1234567"}
OTHER = {"id": 207119551, "email": "other@example.com", "phone": "+49 30 7654321"}
UNKNOWN_ID = 115310627314723954  # an id we never saw: only the other identifier can match


def order_body(customer: dict, order_id: int, token: str) -> dict:
    order = json.loads((SAMPLES / "shopify/orders_create.json").read_text())
    order.update(
        id=order_id,
        checkout_token=token,
        email=customer["email"],
        phone=None,
        customer=dict(customer),
    )
    return order


@pytest.fixture
def two_customers(client, run_worker):
    """Each has a checkout (decided, reminded) and then an order completing it."""
    for customer, token in ((KUNDIN, "t-kundin"), (OTHER, "t-other")):
        body = checkout_body(token=token, email=customer["email"], customer=dict(customer))
        post_shopify(client, body, topic="checkouts/update")
    run_worker()
    assert ReminderDecision.objects.count() == 2
    post_shopify(client, order_body(KUNDIN, 450789469, "t-kundin"), topic="orders/create")
    post_shopify(client, order_body(OTHER, 450789470, "t-other"), topic="orders/create")
    run_worker()
    assert Delivery.objects.filter(body__isnull=False).count() == 4


def redact_body(**customer) -> dict:
    return {
        "shop_id": 954889,
        "shop_domain": SHOP,
        "customer": customer,
        "orders_to_redact": [450789469],
    }


@pytest.mark.parametrize(
    "customer",
    [
        {"id": KUNDIN["id"]},
        {"id": UNKNOWN_ID, "phone": "+4940 123 4567"},
        {"id": UNKNOWN_ID, "email": "Kundin@Example.com"},
        {"id": UNKNOWN_ID, "email": None, "phone": "0049-40-1234567"},
    ],
    ids=["id-only", "phone-only", "email", "phone-with-prefix-00"],
)
def test_customer_redact_by_id_phone_or_email_removes_orders_checkouts_and_decisions(
    client, run_worker, two_customers, customer
):
    """Fails before: id-only and phone-only ended `invalid`; the order body was never linked."""
    post_shopify(client, redact_body(**customer), topic="customers/redact")
    run_worker()

    redact = Delivery.objects.get(topic="customers/redact")
    assert redact.status == Delivery.Status.DONE, redact.last_error
    assert redact.body is None
    assert "kundin" not in redact.last_error.lower() and "1234567" not in redact.last_error
    assert list(CheckoutState.objects.values_list("token", flat=True)) == ["t-other"]
    assert list(ReminderDecision.objects.values_list("email", flat=True)) == [OTHER["email"]]
    kept = Delivery.objects.filter(body__isnull=False).exclude(topic="customers/redact")
    bodies = [json.loads(bytes(delivery.body)) for delivery in kept]
    assert sorted(body.get("token") or body["checkout_token"] for body in bodies) == [
        "t-other",
        "t-other",
    ]
    assert [body["customer"]["id"] for body in bodies] == [OTHER["id"], OTHER["id"]]


def test_order_delivery_carries_the_customers_pseudonyms(client, run_worker):
    post_shopify(client, order_body(KUNDIN, 450789469, "t-kundin"), topic="orders/create")
    run_worker()
    order = Delivery.objects.get()
    assert order.customer_ref == email_ref(KUNDIN["email"])
    assert order.customer_id_ref == customer_id_ref(KUNDIN["id"])
    assert order.phone_ref == phone_ref(KUNDIN["phone"])
    assert KUNDIN["email"] not in str(order.customer_ref)


def test_order_without_checkout_token_is_ignored_but_still_linked(client, run_worker):
    order = order_body(KUNDIN, 450789469, "t")
    del order["checkout_token"]
    post_shopify(client, order, topic="orders/create")
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.IGNORED
    assert delivery.customer_id_ref == customer_id_ref(KUNDIN["id"])


def test_a_later_checkout_version_without_customer_keeps_its_pseudonyms(client, run_worker):
    with_customer = checkout_body(minutes_ago=-30, customer=dict(KUNDIN))
    guest_later = checkout_body(minutes_ago=-20, customer=None)
    post_shopify(client, with_customer, topic="checkouts/update")
    post_shopify(client, guest_later, topic="checkouts/update")
    run_worker()
    checkout = CheckoutState.objects.get()
    assert checkout.customer_id_ref == customer_id_ref(KUNDIN["id"])
    assert checkout.phone_ref == phone_ref(KUNDIN["phone"])


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"customer": {"id": 1}, "orders_to_redact": []}, "shop_domain"),
        ({"shop_domain": SHOP, "orders_to_redact": []}, "customer object"),
        ({"shop_domain": SHOP, "customer": "1", "orders_to_redact": []}, "customer object"),
        ({"shop_domain": SHOP, "customer": {"email": "a@b.de"}, "orders_to_redact": []}, "id"),
        ({"shop_domain": SHOP, "customer": {"id": -4}, "orders_to_redact": []}, "id"),
        ({"shop_domain": SHOP, "customer": {"id": 1}}, "orders_to_redact"),
        ({"shop_domain": SHOP, "customer": {"id": 1}, "orders_to_redact": "1"}, "orders_to_redact"),
    ],
)
def test_customer_redact_of_the_wrong_shape_is_invalid_with_the_reason(
    client, run_worker, body, reason
):
    post_shopify(client, body, topic="customers/redact")
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID
    assert reason in delivery.last_error


def test_customer_redact_that_matches_nothing_is_done(client, run_worker):
    post_shopify(client, redact_body(id=UNKNOWN_ID), topic="customers/redact")
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DONE
    assert "0 rows deleted" in delivery.last_error


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        ("+49 40 1234567", "+49401234567", True),
        ("+49 40 1234567", "0049 (40) 123-4567", True),
        ("+49 40 1234567", "+49 40 1234568", False),
        ("040 1234567", "+49 40 1234567", False),  # no country to expand a national number
    ],
)
def test_phone_pseudonym_ignores_formatting(one, other, same):
    assert (phone_ref(one) == phone_ref(other)) is same


@pytest.mark.parametrize("phone", ["", "12345", "n/a", "+"])
def test_too_short_phone_numbers_are_no_key(phone):
    assert phone_ref(phone) == ""


@pytest.mark.parametrize(
    ("email", "masked"),
    [("kundin@example.com", "k***@example.com"), ("", "***"), ("no-at-sign", "***")],
)
def test_mask_email(email, masked):
    assert mask_email(email) == masked
