"""Privacy topics with two allowed shops: each request touches, and is confirmed by, its own shop.

Shopify sends `shop/redact` 48 hours after an uninstall and `customers/redact` for the data of
one shop's customer (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance).
Our Admin API credentials open one shop only (tests/support/admin_shop.py serves it), so a second
shop's `shop/redact` cannot be confirmed and is refused, whatever the first shop answers.
"""

import json

import pytest

from automation.models import CheckoutState, Delivery, ReminderDecision
from automation.platform.pseudonyms import customer_id_ref, phone_ref
from tests.privacy.test_privacy_topics import KUNDIN, order_body
from tests.reminders.test_checkouts import checkout_body
from tests.support.admin_shop import SHOP_REDACT, serve_admin_shop
from tests.support.signing import SHOP, post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

SHOP_B = "zweitladen.myshopify.com"
SHOP_B_REDACT = {"shop_id": 7654321, "shop_domain": SHOP_B}


@pytest.fixture
def two_shops(settings):
    settings.SHOPIFY_SHOP_DOMAINS = [SHOP, SHOP_B]
    settings.ALERT_EMAILS = ["inhaber@elbkerzen.example"]


def post_to(client, shop: str, body: dict, topic: str):
    return post_shopify(client, body, topic=topic, HTTP_X_SHOPIFY_SHOP_DOMAIN=shop)


@pytest.fixture
def customer_in_both_shops(client, run_worker, two_shops):
    """The same customer (id, e-mail, phone) has a checkout and an order in each shop."""
    for shop, token, order_id in ((SHOP, "t-a", 450789469), (SHOP_B, "t-b", 450789470)):
        body = checkout_body(token=token, email=KUNDIN["email"], customer=dict(KUNDIN))
        post_to(client, shop, body, "checkouts/update")
        run_worker()
        post_to(client, shop, order_body(KUNDIN, order_id, token), "orders/create")
        run_worker()
    assert ReminderDecision.objects.count() == 2
    assert Delivery.objects.filter(body__isnull=False).count() == 4


def kept_of(shop: str) -> dict:
    """What a shop's rows still hold: checkouts with address and phone, decisions, bodies."""
    deliveries = Delivery.objects.filter(shop_domain=shop).exclude(topic__contains="redact")
    return {
        "checkouts": list(
            CheckoutState.objects.filter(shop_domain=shop).values_list(
                "token", "email", "phone_ref", "customer_id_ref"
            )
        ),
        "decisions": list(
            ReminderDecision.objects.filter(checkout__shop_domain=shop).values_list(
                "email", flat=True
            )
        ),
        "bodies": sorted(
            str(json.loads(bytes(d.body))["id"]) if d.topic == "orders/create" else d.topic
            for d in deliveries
            if d.body is not None
        ),
    }


def test_customer_redact_of_one_shop_leaves_the_other_shops_rows(
    client, run_worker, customer_in_both_shops
):
    """Fails before: shop A's request dropped shop B's bodies of the same id, address, phone."""
    shop_b = kept_of(SHOP_B)
    assert shop_b["checkouts"] == [
        ("t-b", KUNDIN["email"], phone_ref(KUNDIN["phone"]), customer_id_ref(KUNDIN["id"]))
    ]
    # When shop A forwards its customer's erasure, naming id, e-mail and phone
    body = {"shop_id": 954889, "shop_domain": SHOP, "customer": KUNDIN, "orders_to_redact": []}
    post_to(client, SHOP, body, "customers/redact")
    run_worker()
    # Then shop A keeps nothing of her, and shop B everything
    redact = Delivery.objects.get(topic="customers/redact")
    assert redact.status == Delivery.Status.DONE, redact.last_error
    assert "2 bodies dropped" in redact.result
    assert kept_of(SHOP) == {"checkouts": [], "decisions": [], "bodies": []}
    assert kept_of(SHOP_B) == shop_b
    assert shop_b["bodies"] == ["450789470", "checkouts/update"]
    assert shop_b["decisions"] == [KUNDIN["email"]]


@pytest.fixture
def first_shop_uninstalled(httpserver, settings, two_shops):
    """Our Admin API credentials are shop A's, and A uninstalled us: its API answers 401."""
    shop = serve_admin_shop(httpserver, settings)
    shop.uninstall()
    return shop


@pytest.fixture
def second_shop_has_data(client, run_worker, two_shops):
    post_to(client, SHOP_B, checkout_body(token="t-b"), "checkouts/update")
    run_worker()
    assert CheckoutState.objects.filter(shop_domain=SHOP_B).count() == 1


def test_second_shops_redact_is_refused_however_the_first_shop_answers(
    client, run_worker, second_shop_has_data, first_shop_uninstalled
):
    """Fails before: shop A's 401 was taken as shop B's uninstall, and B was wiped."""
    kept = kept_of(SHOP_B)
    post_to(client, SHOP_B, SHOP_B_REDACT, "shop/redact")
    run_worker()
    redact = Delivery.objects.get(topic="shop/redact")
    assert redact.status == Delivery.Status.REFUSED, redact.result
    assert f"no Admin API credentials for the shop {SHOP_B}" in redact.result
    assert f"belong to {SHOP}" in redact.result
    assert kept_of(SHOP_B) == kept
    # shop A was never asked on B's behalf
    assert first_shop_uninstalled.requests == []
    assert first_shop_uninstalled.token_requests == []


def test_first_shops_own_redact_still_deletes_only_its_rows(
    client, run_worker, second_shop_has_data, first_shop_uninstalled
):
    post_to(client, SHOP, checkout_body(token="t-a"), "checkouts/update")
    run_worker()
    kept = kept_of(SHOP_B)
    post_to(client, SHOP, SHOP_REDACT, "shop/redact")
    run_worker()
    redact = Delivery.objects.get(topic="shop/redact")
    assert redact.status == Delivery.Status.DONE, redact.last_error
    assert "HTTP 401" in redact.result
    assert kept_of(SHOP) == {"checkouts": [], "decisions": [], "bodies": []}
    assert kept_of(SHOP_B) == kept


@pytest.mark.parametrize(
    ("client_credentials", "answers", "reason"),
    [
        (False, (403,), "HTTP 403, which does not confirm an uninstall"),
        (False, (404,), "HTTP 404, which does not confirm an uninstall"),
        (True, (401, 401), "refused a token Shopify had just issued (HTTP 401)"),
    ],
    ids=["missing-scope-403", "not-found-404", "fresh-client-credentials-token-401"],
)
def test_an_answer_that_proves_no_uninstall_refuses_the_shop_redact(
    client, run_worker, httpserver, settings, client_credentials, answers, reason, redis
):
    """Fails before: a 403, or a 401 right after the grant issued a token, wiped the shop."""
    shop = serve_admin_shop(httpserver, settings, client_credentials=client_credentials)
    settings.ALERT_EMAILS = ["inhaber@elbkerzen.example"]
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()
    kept = kept_of(SHOP)
    shop.script(*answers)
    post_shopify(client, SHOP_REDACT, topic="shop/redact")
    run_worker()
    redact = Delivery.objects.get(topic="shop/redact")
    assert redact.status == Delivery.Status.REFUSED, redact.result + redact.last_error
    assert reason in redact.result
    assert kept_of(SHOP) == kept
