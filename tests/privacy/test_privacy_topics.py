"""Shopify's mandatory privacy topics, and masked addresses."""

import json

import pytest
from django.core import mail

from automation.intake import inbox
from automation.models import CheckoutState, DataRequest, Delivery, ReminderDecision
from automation.platform.pseudonyms import customer_id_ref, email_ref, mask_email, phone_ref
from automation.privacy.redaction import REFUSED_ALERT_EVERY
from tests.reminders.test_checkouts import SAMPLES, checkout_body
from tests.support.admin_shop import SHOP_REDACT, serve_admin_shop
from tests.support.signing import SHOP, post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

ALERTS_TO = ["inhaber@elbkerzen.example"]


@pytest.fixture
def admin_shop(httpserver, settings):
    """The shop's Admin API (static token), installed; alerts go to the merchant."""
    settings.ALERT_EMAILS = ALERTS_TO
    return serve_admin_shop(httpserver, settings)


@pytest.fixture
def dev_admin_shop(httpserver, settings, redis):
    """The shop's Admin API reached by client credentials (a Dev Dashboard app), installed."""
    settings.ALERT_EMAILS = ALERTS_TO
    return serve_admin_shop(httpserver, settings, client_credentials=True)


def alerts_sent() -> list:
    return [message for message in mail.outbox if message.to == ALERTS_TO]


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
    assert "kundin" not in redact.result + redact.last_error


def shop_kept() -> tuple[int, int, int]:
    """(checkouts, decisions, deliveries other than shop/redact) still stored."""
    return (
        CheckoutState.objects.count(),
        ReminderDecision.objects.count(),
        Delivery.objects.exclude(topic="shop/redact").count(),
    )


# --- shop/redact: only after the Admin API confirms the uninstall -----------------------------


def test_shop_redact_deletes_everything_once_the_admin_api_refuses_us(
    client, run_worker, reminded, admin_shop
):
    refusal = 401
    # Given the app was uninstalled: the shop's Admin API refuses our (revoked) token
    admin_shop.uninstall()
    # When Shopify's shop/redact arrives
    post_shopify(client, SHOP_REDACT, topic="shop/redact")
    run_worker()
    # Then everything of the shop is gone
    assert not CheckoutState.objects.exists()
    assert not ReminderDecision.objects.exists()
    redact = Delivery.objects.get()
    assert redact.topic == "shop/redact"
    assert redact.status == Delivery.Status.DONE, redact.last_error
    assert f"HTTP {refusal}" in redact.result
    assert not alerts_sent()


def test_shop_redact_with_client_credentials_of_an_uninstalled_app_deletes(
    client, run_worker, reminded, dev_admin_shop
):
    dev_admin_shop.uninstall()
    post_shopify(client, SHOP_REDACT, topic="shop/redact")
    run_worker()
    redact = Delivery.objects.get()
    assert redact.status == Delivery.Status.DONE, redact.last_error
    assert "no longer installed" in redact.result
    assert shop_kept() == (0, 0, 0)


def test_shop_redact_while_the_shop_still_answers_is_refused_and_the_merchant_alerted(
    client, run_worker, reminded, admin_shop
):
    """Fails before: the body alone wiped the shop."""
    kept = shop_kept()
    # Given the shop still answers our Admin API token (the app is installed)
    # When a shop/redact arrives, and a copy under a fresh webhook id
    post_shopify(client, SHOP_REDACT, topic="shop/redact")
    post_shopify(client, SHOP_REDACT, topic="shop/redact")
    run_worker()
    # Then both are refused, nothing is deleted, and the merchant gets one alert
    redacts = Delivery.objects.filter(topic="shop/redact")
    assert [r.status for r in redacts] == [Delivery.Status.REFUSED] * 2
    assert all("still accepts our access" in r.result for r in redacts)
    assert shop_kept() == kept
    (alert,) = alerts_sent()
    assert SHOP in alert.subject and "refused" in alert.subject
    assert "nothing was deleted" in alert.body
    assert any(r.answer == "ok" and "shop" in r.query for r in admin_shop.requests)
    assert REFUSED_ALERT_EVERY.total_seconds() >= 3600


def test_shop_redact_with_client_credentials_while_installed_is_refused(
    client, run_worker, reminded, dev_admin_shop
):
    kept = shop_kept()
    post_shopify(client, SHOP_REDACT, topic="shop/redact")
    run_worker()
    assert Delivery.objects.get(topic="shop/redact").status == Delivery.Status.REFUSED
    assert shop_kept() == kept
    assert len(alerts_sent()) == 1


def test_shop_redact_without_admin_api_access_is_refused_saying_what_to_set(
    client, run_worker, reminded, settings
):
    """Fails before: wiped without asking."""
    kept = shop_kept()
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = ""
    settings.ALERT_EMAILS = ALERTS_TO
    post_shopify(client, SHOP_REDACT, topic="shop/redact")
    run_worker()
    redact = Delivery.objects.get(topic="shop/redact")
    assert redact.status == Delivery.Status.REFUSED
    assert "not configured" in redact.result and "SHOPIFY_CLIENT_ID" in redact.result
    assert shop_kept() == kept
    (alert,) = alerts_sent()
    assert "not configured" in alert.body
    assert f"/admin/automation/delivery/{redact.pk}/change/" in alert.body


def test_a_refused_shop_redact_replayed_once_the_uninstall_is_confirmed_deletes(
    client, run_worker, reminded, httpserver, settings
):
    # Given a shop/redact refused because no Admin API access was configured
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = ""
    post_shopify(client, SHOP_REDACT, topic="shop/redact")
    run_worker()
    redact = Delivery.objects.get(topic="shop/redact")
    assert redact.status == Delivery.Status.REFUSED
    # When the merchant sets up access (the app is gone: it refuses us) and replays it
    serve_admin_shop(httpserver, settings).uninstall()
    assert inbox.replay([redact.pk]) == 1
    run_worker()
    # Then the uninstall is confirmed and the shop's data deleted
    redact.refresh_from_db()
    assert redact.status == Delivery.Status.DONE, redact.last_error
    assert shop_kept() == (0, 0, 0)


def test_shop_redact_while_the_admin_api_fails_is_retried_not_carried_out(
    client, run_worker, reminded, admin_shop, settings, queue
):
    """Fails before: wiped at once. A 503 is no answer: retry, then the uninstall is confirmed."""
    settings.DELIVERY_RETRY_INTERVALS = [600]  # never due while the worker drains the queue
    kept = shop_kept()
    admin_shop.script(503, 503, 503)  # the adapter's own three tries all fail
    post_shopify(client, SHOP_REDACT, topic="shop/redact")
    run_worker()
    redact = Delivery.objects.get(topic="shop/redact")
    assert redact.status == Delivery.Status.FAILED
    assert "HTTP 503" in redact.last_error
    assert shop_kept() == kept
    assert not alerts_sent()
    assert queue.scheduled_job_registry.get_job_ids() == [f"delivery-{redact.pk}"]

    # When the retry comes (its wait cut short), the Admin API refuses us: the uninstall is real
    admin_shop.uninstall()
    queue.scheduled_job_registry.requeue(f"delivery-{redact.pk}")
    run_worker()
    redact.refresh_from_db()
    assert redact.status == Delivery.Status.DONE, redact.last_error
    assert redact.attempts == 2
    assert shop_kept() == (0, 0, 0)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"shop_domain": SHOP}, "shop_id"),
        ({"shop_id": "954889", "shop_domain": SHOP}, "shop_id"),
        ({"shop_id": 954889}, "shop_domain"),
        (
            {"shop_id": 954889, "shop_domain": "andere.myshopify.com"},
            f"shop/redact body names shop 'andere.myshopify.com', header '{SHOP}'",
        ),
    ],
)
def test_shop_redact_of_the_wrong_shape_or_shop_is_invalid_and_deletes_nothing(
    client, run_worker, reminded, admin_shop, body, reason
):
    """Fails before: any body under the shop/redact topic wiped the shop."""
    admin_shop.uninstall()  # even then: the body must be a shop/redact for this shop
    kept = shop_kept()
    post_shopify(client, body, topic="shop/redact")
    run_worker()
    redact = Delivery.objects.get(topic="shop/redact")
    assert redact.status == Delivery.Status.INVALID
    assert reason in redact.last_error
    assert shop_kept() == kept


def test_customer_redact_naming_another_shop_is_invalid(client, run_worker, reminded):
    """Fails before: a body from another shop redacted our customer of the same address."""
    body = {
        "shop_id": 1,
        "shop_domain": "andere.myshopify.com",
        "customer": {"id": 1, "email": "kundin@example.com"},
        "orders_to_redact": [],
    }
    post_shopify(client, body, topic="customers/redact")
    run_worker()
    redact = Delivery.objects.get(topic="customers/redact")
    assert redact.status == Delivery.Status.INVALID
    assert "names shop 'andere.myshopify.com'" in redact.last_error
    assert CheckoutState.objects.count() == 2


# --- customers/data_request -----------------------------------------------------------------

DATA_REQUEST = {
    "shop_id": 954889,
    "shop_domain": SHOP,
    "orders_requested": [299938, 280263],
    "customer": {"id": 191167, "email": "kundin@example.com", "phone": "555-625-1199"},
    "data_request": {"id": 9999},
}


def test_data_request_is_recorded_for_the_merchant(client, run_worker):
    post_shopify(client, DATA_REQUEST, topic="customers/data_request")
    run_worker()
    request = DataRequest.objects.get()
    assert (request.customer_email, request.customer_id) == ("kundin@example.com", 191167)
    assert request.orders_requested == [299938, 280263]
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DONE
    assert "data request 9999" in delivery.result


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"shop_domain": None}, "shop_domain"),
        ({"shop_domain": "andere.myshopify.com"}, "names shop 'andere.myshopify.com'"),
        ({"customer": {"email": "kundin@example.com"}}, "customer.id"),
        ({"data_request": None}, "data_request.id"),
        ({"data_request": {"id": "9999"}}, "data_request.id"),
        ({"orders_requested": "299938"}, "orders_requested"),
    ],
)
def test_data_request_of_the_wrong_shape_or_shop_is_invalid(client, run_worker, change, reason):
    """Fails before: any body with a customer object was recorded as a request."""
    body = {key: value for key, value in (DATA_REQUEST | change).items() if value is not None}
    post_shopify(client, body, topic="customers/data_request")
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID
    assert reason in delivery.last_error
    assert not DataRequest.objects.exists()


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
    notes = redact.result + redact.last_error
    assert "kundin" not in notes.lower() and "1234567" not in notes
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
    with_customer = checkout_body(minutes_ago=1, customer=dict(KUNDIN))
    guest_later = checkout_body(minutes_ago=3, customer=None)
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
    assert "0 rows deleted" in delivery.result


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
