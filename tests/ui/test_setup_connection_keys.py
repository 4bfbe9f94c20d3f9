"""The Shopify Admin API token, the Stripe API key and the Stripe signing secret, entered on the
set-up page: stored sealed, checked by their shape, read through connections.current() by every
caller, the environment winning, and never in the page, the log or the API.

Given a merchant who pastes the three keys into the page, when the page is saved, then the
database holds them sealed, the page says only "set", the shop and Stripe are reached with
them, and a Stripe event signed with the stored secret is accepted. "Test connection" in the
Stripe section lists one Checkout Session at the Stripe stand-in
(https://docs.stripe.com/api/checkout/sessions/list) and answers in words, never a 500.
"""

from __future__ import annotations

import logging

import pytest
from django.utils import timezone

from automation.models import CheckoutState, ConnectionSettings
from automation.platform import connections, masking
from automation.reminders import paid_check
from automation.shopify import access as shopify_access
from tests.platform.test_connections import stored_column
from tests.support import people
from tests.support.hanging import hanging_server
from tests.support.shopify_standin import TOKEN, ShopifyStandIn
from tests.support.signing import post_stripe
from tests.support.vendors import STRIPE_KEY, StripeStandIn
from tests.ui.test_setup import EN, page, section

pytestmark = pytest.mark.django_db

SIGNING_SECRET = "whsec_entered_on_the_page_not_to_be_shown"
WRONG_KEY = "sk_test_revoked_not_to_be_shown"
COLUMNS = {
    "shopify_admin_token": ("shopify_admin_token_sealed", TOKEN),
    "stripe_api_key": ("stripe_api_key_sealed", STRIPE_KEY),
    "stripe_webhook_secret": ("stripe_webhook_secret_sealed", SIGNING_SECRET),
}


@pytest.fixture
def nothing_in_the_environment(settings):
    settings.SHOPIFY_WEBHOOK_SECRETS = []
    settings.STRIPE_WEBHOOK_SECRETS = []
    for field in connections.FIELDS.values():
        if field.env_name != "STRIPE_WEBHOOK_SECRETS":  # a list, emptied above
            setattr(settings, field.env_name, "")


@pytest.fixture
def vendors(httpserver, settings, nothing_in_the_environment):
    """A shop with a static token and Stripe, both on 127.0.0.1; no key in the environment."""
    shop = ShopifyStandIn(restore_rate=5000)
    settings.SHOPIFY_ADMIN_URL = shop.install(httpserver)
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "toml"
    stripe = StripeStandIn()
    settings.STRIPE_API_URL = stripe.install(httpserver)
    settings.VENDOR_INTERACTIVE_TIMEOUT = 0.5
    yield shop, stripe
    httpserver.check_handler_errors()


def enter_everything(client) -> tuple[str, str]:
    shopify = page(client, action="shopify_save", shopify_admin_token=TOKEN)
    stripe = page(
        client,
        action="stripe_save",
        stripe_api_key=STRIPE_KEY,
        stripe_webhook_secret=SIGNING_SECRET,
    )
    return shopify, stripe


def plain_values() -> list[str]:
    return [plain for _column, plain in COLUMNS.values()]


# --- stored sealed, never shown --------------------------------------------------------------


def test_the_keys_entered_are_stored_sealed_and_never_shown(admin_client, vendors, caplog):
    caplog.set_level(logging.DEBUG)

    saved_shopify, saved_stripe = enter_everything(admin_client)
    shown = page(admin_client)

    assert "Saved." in section(saved_shopify, "shopify")
    assert "Saved." in section(saved_stripe, "stripe")
    values = connections.current()
    for name, (column, plain) in COLUMNS.items():
        stored = stored_column(column)
        assert stored and plain not in stored, name
        assert getattr(values, name).value == plain
        assert getattr(values, name).source is connections.Source.DATABASE
    for text in (saved_shopify, saved_stripe, shown, caplog.text):
        for plain in plain_values():
            assert plain not in text
    stripe = section(shown, "stripe")
    assert 'type="password" name="stripe_api_key"' in stripe
    assert 'type="password" name="stripe_webhook_secret"' in stripe
    assert 'type="password" name="shopify_admin_token"' in section(shown, "shopify")
    assert stripe.count("currently: set") == 2


def test_the_api_never_answers_a_stored_key(admin_client, nothing_in_the_environment):
    connections.store(
        shopify_admin_token=TOKEN, stripe_api_key=STRIPE_KEY, stripe_webhook_secret=SIGNING_SECRET
    )
    root = admin_client.get("/api/", HTTP_ACCEPT="application/json").json()

    for url in ["/api/", "/api/schema/", *root.values()]:
        body = admin_client.get(url, HTTP_ACCEPT="application/json").content.decode()
        for plain in plain_values():
            assert plain not in body, url


def test_stored_keys_are_masked_in_log_text(nothing_in_the_environment, settings):
    connections.store(stripe_api_key="sk_live_stored", stripe_webhook_secret="whsec_stored_x")
    settings.STRIPE_API_KEY = "a-key-of-no-known-shape"

    text = masking.mask_secrets("echo: sk_live_stored whsec_stored_x a-key-of-no-known-shape")

    assert "stored" not in text and "no-known-shape" not in text


def test_an_empty_input_keeps_the_stored_key(admin_client, vendors):
    enter_everything(admin_client)

    result = page(admin_client, action="stripe_save", stripe_api_key="", stripe_webhook_secret="")

    assert "Nothing changed." in section(result, "stripe")
    assert connections.current().stripe_api_key.value == STRIPE_KEY
    assert connections.current().stripe_webhook_secret.value == SIGNING_SECRET


# --- checked by their shape -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "name", "typed", "why"),
    [
        ("stripe_save", "stripe_api_key", "pk_live_publishable", "This is the publishable key"),
        ("stripe_save", "stripe_api_key", "whsec_in_the_wrong_box", "starts with sk_"),
        ("stripe_save", "stripe_webhook_secret", "sk_test_in_the_wrong_box", "starts with whsec_"),
        ("shopify_save", "shopify_admin_token", "shpss_a_client_secret", "starts with shpat_"),
    ],
)
def test_a_key_of_the_wrong_shape_is_refused_with_the_reason(
    admin_client, vendors, action, name, typed, why
):
    result = section(page(admin_client, action=action, **{name: typed}), action.split("_")[0])

    assert "Not saved." in result and why in result
    assert typed not in result
    assert not ConnectionSettings.objects.exists()


def test_a_restricted_key_is_accepted(admin_client, vendors):
    page(admin_client, action="stripe_save", stripe_api_key="rk_live_restricted")

    assert connections.current().stripe_api_key.value == "rk_live_restricted"


# --- the environment wins -----------------------------------------------------------------------


def test_keys_from_the_environment_win_and_the_page_says_so(admin_client, vendors, settings):
    connections.store(stripe_api_key="sk_test_stored", shopify_admin_token="shpat_stored")
    settings.STRIPE_API_KEY = STRIPE_KEY
    settings.STRIPE_WEBHOOK_SECRETS = ["whsec_from_the_environment", "whsec_the_old_one"]
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN

    html = page(admin_client)

    values = connections.current()
    assert values.stripe_api_key.value == STRIPE_KEY and values.stripe_api_key.from_environment
    assert values.shopify_admin_token.value == TOKEN
    assert values.stripe_webhook_secret.value == "whsec_from_the_environment"
    stripe, shopify = section(html, "stripe"), section(html, "shopify")
    assert "from the environment (STRIPE_API_KEY)" in stripe
    assert "from the environment (STRIPE_WEBHOOK_SECRETS)" in stripe
    assert 'name="stripe_api_key"' not in stripe and 'name="stripe_webhook_secret"' not in stripe
    assert "from the environment (SHOPIFY_ADMIN_TOKEN)" in shopify
    for plain in (STRIPE_KEY, "whsec_from_the_environment", TOKEN):
        assert plain not in html
    page(admin_client, action="stripe_save", stripe_api_key="sk_test_typed_anyway")
    assert connections.current().stripe_api_key.value == STRIPE_KEY


def test_signing_secrets_from_the_environment_win(client, queue, settings, vendors):
    connections.store(stripe_webhook_secret=SIGNING_SECRET)
    settings.STRIPE_WEBHOOK_SECRETS = ["whsec_from_the_environment"]

    refused = post_stripe(client, {"id": "evt_1"}, secrets=[SIGNING_SECRET])

    assert refused.status_code == 400 and "no signature matches" in refused.json()["error"]


# --- every reader uses what was entered ---------------------------------------------------------


def test_a_stripe_event_signed_with_the_stored_secret_is_accepted(client, queue, vendors):
    connections.store(stripe_webhook_secret=SIGNING_SECRET)

    accepted = post_stripe(client, {"id": "evt_1"}, secrets=[SIGNING_SECRET])
    refused = post_stripe(client, {"id": "evt_2"}, secrets=["whsec_some_other_secret"])

    assert accepted.status_code == 200 and refused.status_code == 400


def test_the_stored_admin_token_reaches_the_shop(admin_client, vendors, caplog):
    caplog.set_level(logging.DEBUG)
    connections.store(shopify_admin_token=TOKEN)

    shopify = section(page(admin_client, action="shopify_test"), "shopify")

    assert shopify_access.access() is shopify_access.Access.STATIC
    assert "Connected to the shop" in shopify
    assert TOKEN not in shopify and TOKEN not in caplog.text


def test_the_paid_check_asks_stripe_with_the_stored_key(vendors):
    _shop, stripe = vendors
    connections.store(stripe_api_key=STRIPE_KEY)
    stripe.complete("cs_test_paid")
    checkout = CheckoutState(
        source=CheckoutState.Source.STRIPE, token="cs_test_paid", updated_at=timezone.now()
    )

    assert paid_check.ask(checkout).paid is paid_check.Paid.YES
    assert stripe.requests == ["cs_test_paid"]


def test_without_a_key_the_stripe_section_says_what_is_missing(admin_client, vendors):
    connections.store(stripe_webhook_secret=SIGNING_SECRET)

    stripe = section(page(admin_client), "stripe")

    assert "The Stripe API key is missing" in stripe and "light-yellow" in stripe


# --- "Test connection" at Stripe -----------------------------------------------------------------


def test_the_stripe_test_lists_one_session_with_the_stored_key(admin_client, vendors, caplog):
    caplog.set_level(logging.DEBUG)
    _shop, stripe = vendors
    connections.store(stripe_api_key=STRIPE_KEY)

    result = section(page(admin_client, action="stripe_test"), "stripe")

    assert "Connected to Stripe" in result and 'class="setup-result ok"' in result
    assert stripe.requests == ["/v1/checkout/sessions?limit=1"]
    assert STRIPE_KEY not in result and STRIPE_KEY not in caplog.text


def test_a_refused_key_fails_in_words(admin_client, vendors, caplog):
    caplog.set_level(logging.DEBUG)
    connections.store(stripe_api_key=WRONG_KEY)

    result = section(page(admin_client, action="stripe_test"), "stripe")

    assert "Stripe refused the API key" in result and "failed" in result
    assert WRONG_KEY not in result and WRONG_KEY not in caplog.text


def test_a_stripe_error_fails_in_words(admin_client, vendors):
    _shop, stripe = vendors
    connections.store(stripe_api_key=STRIPE_KEY)
    stripe.script.append(500)

    result = section(page(admin_client, action="stripe_test"), "stripe")

    assert "Stripe could not be reached or answered with an error" in result


def test_a_restricted_key_without_the_right_is_named(admin_client, vendors):
    _shop, stripe = vendors
    connections.store(stripe_api_key="rk_test_without_checkout_read")
    stripe.script.append(403)

    result = section(page(admin_client, action="stripe_test"), "stripe")

    assert "it may not read Checkout Sessions" in result
    assert "“Checkout Sessions: Read”" in result


def test_an_answer_that_is_no_list_of_sessions_fails_in_words(admin_client, vendors, httpserver):
    connections.store(stripe_api_key=STRIPE_KEY)
    httpserver.clear()  # another server on the path: it answers a session, not a list
    httpserver.expect_request("/v1/checkout/sessions").respond_with_json({"object": "checkout"})

    result = section(page(admin_client, action="stripe_test"), "stripe")

    assert "Stripe could not be reached or answered with an error" in result


def test_the_help_says_where_the_stripe_values_come_from(admin_client, vendors, settings):
    settings.PUBLIC_BASE_URL = "https://automation.elbkerzen.example"

    html = page(admin_client)

    stripe = section(html, "stripe")
    assert "https://dashboard.stripe.com/apikeys" in stripe
    assert "https://dashboard.stripe.com/webhooks" in stripe
    assert "https://automation.elbkerzen.example/webhooks/stripe/" in stripe
    assert "Admin API access token" in section(html, "shopify")


def test_a_stripe_that_does_not_answer_fails_in_time(admin_client, vendors, settings):
    connections.store(stripe_api_key=STRIPE_KEY)
    with hanging_server() as (url, _held):
        settings.STRIPE_API_URL = url
        result = section(page(admin_client, action="stripe_test"), "stripe")

    assert "Stripe did not answer within 0.5 seconds" in result


def test_the_stripe_test_without_a_key_says_so(admin_client, vendors):
    _shop, stripe = vendors

    result = section(page(admin_client, action="stripe_test"), "stripe")

    assert "No Stripe API key is set" in result
    assert stripe.requests == []


def test_the_stripe_buttons_need_their_permissions(client, vendors):
    client.force_login(people.staff("view_delivery"))

    shown = client.get("/admin/setup/", **EN).content.decode()
    saved = client.post("/admin/setup/", {"action": "stripe_save", "stripe_api_key": STRIPE_KEY})
    tested = client.post("/admin/setup/", {"action": "stripe_test"})

    assert 'value="stripe_test"' not in shown and 'name="stripe_api_key"' not in shown
    assert saved.status_code == 403 and tested.status_code == 403
    assert not ConnectionSettings.objects.exists()
