"""Connection settings entered on the set-up page: stored sealed, read through one accessor,
the environment winning, and the secrets never in the page, the log or the API.

Given a merchant who enters the Shopify app's client id and secret on the page, when the page
is saved, then the database holds the secret sealed (not the plain text, still readable after a
SECRET_KEY rotation with the old key in SECRET_KEY_FALLBACKS), the page says only "set", and
"Test connection" reaches the Shopify stand-in with the stored client id and secret.
"""

from __future__ import annotations

import json
import logging

import pytest
from django.db import connection

from automation.models import ConnectionSettings, Delivery
from automation.platform import connections, masking, secret_box
from automation.shopify import access as shopify_access
from tests.support import people
from tests.support.shopify_standin import CLIENT_ID, ShopifyStandIn
from tests.support.signing import post_shopify
from tests.ui.test_setup import EN, page, section

pytestmark = pytest.mark.django_db

SECRET = "shpss_entered_on_the_page_not_to_be_shown"
DEVELOPER_TOKEN = "developer-token-not-to-be-shown"
OAUTH_SECRET = "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"


@pytest.fixture
def nothing_in_the_environment(settings):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = ""
    settings.SHOPIFY_CLIENT_SECRET = ""
    settings.SHOPIFY_WEBHOOK_SECRETS = []
    settings.STRIPE_WEBHOOK_SECRETS = []
    for name in connections.FIELDS.values():
        if name.env_name != "STRIPE_WEBHOOK_SECRETS":  # a list
            setattr(settings, name.env_name, "")


@pytest.fixture
def dev_shop(httpserver, settings, redis, nothing_in_the_environment):
    """A Dev Dashboard app at the stand-in; its credentials are nowhere in the environment."""
    standin = ShopifyStandIn(restore_rate=5000, token="", client_id=CLIENT_ID, client_secret=SECRET)
    settings.SHOPIFY_ADMIN_URL = standin.install(httpserver)
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "api"
    settings.PUBLIC_BASE_URL = "https://automation.elbkerzen.example"
    yield standin
    httpserver.check_handler_errors()


def stored_column(column: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM automation_connectionsettings WHERE id = 1")  # noqa: S608
        return cursor.fetchone()[0]


# --- stored sealed ---------------------------------------------------------------------------


def test_the_stored_secret_is_not_the_plain_text(nothing_in_the_environment):
    connections.store(shopify_client_id=CLIENT_ID, shopify_client_secret=SECRET)

    column = stored_column("shopify_client_secret_sealed")
    assert column and SECRET not in column
    assert stored_column("shopify_client_id") == CLIENT_ID
    value = connections.current().shopify_client_secret
    assert value.value == SECRET and value.source is connections.Source.DATABASE


def test_a_secret_keeps_after_a_secret_key_rotation_with_the_old_key_kept(
    settings, nothing_in_the_environment
):
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "the-old-key", []
    connections.store(shopify_client_secret=SECRET)

    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "the-new-key", ["the-old-key"]
    connections.forget()
    assert connections.current().shopify_client_secret.value == SECRET

    settings.SECRET_KEY_FALLBACKS = []
    connections.forget()
    lost = connections.current().shopify_client_secret
    assert lost.value == "" and lost.unreadable


def test_a_new_save_is_sealed_with_the_current_key(settings):
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "the-new-key", ["the-old-key"]
    sealed = secret_box.seal(SECRET)
    settings.SECRET_KEY_FALLBACKS = []
    assert secret_box.reveal(sealed) == SECRET


def test_reading_never_creates_the_row(nothing_in_the_environment):
    values = connections.current()

    assert not values.shopify_client_id and values.shopify_client_id.source == "unset"
    assert not ConnectionSettings.objects.exists()


def test_the_environment_wins(settings, nothing_in_the_environment):
    connections.store(shopify_client_id="stored-id", shopify_client_secret=SECRET)
    settings.SHOPIFY_CLIENT_ID = "environment-id"

    values = connections.current()

    assert values.shopify_client_id.value == "environment-id"
    assert values.shopify_client_id.source is connections.Source.ENVIRONMENT
    assert values.shopify_client_secret.source is connections.Source.DATABASE


def test_stored_secrets_are_masked_in_log_text(nothing_in_the_environment):
    connections.store(google_ads_developer_token=DEVELOPER_TOKEN)

    assert DEVELOPER_TOKEN not in masking.mask_secrets(f"refused: token {DEVELOPER_TOKEN}")


# --- the page --------------------------------------------------------------------------------


def test_entering_the_app_on_the_page_stores_it_and_never_shows_the_secret(
    admin_client, dev_shop, caplog
):
    caplog.set_level(logging.DEBUG)

    saved = page(
        admin_client,
        action="shopify_save",
        shopify_client_id=CLIENT_ID,
        shopify_client_secret=SECRET,
    )
    shown = page(admin_client)

    assert "Saved." in section(saved, "shopify")
    values = connections.current()
    assert values.shopify_client_id.value == CLIENT_ID
    assert values.shopify_client_secret.value == SECRET
    for html in (saved, shown):
        assert SECRET not in html
        assert 'type="password" name="shopify_client_secret"' in html
    assert f'value="{CLIENT_ID}"' in section(shown, "shopify")
    assert SECRET not in caplog.text


def test_an_empty_secret_keeps_the_stored_one(admin_client, dev_shop):
    connections.store(shopify_client_id=CLIENT_ID, shopify_client_secret=SECRET)

    page(admin_client, action="shopify_save", shopify_client_id="new-id", shopify_client_secret="")

    values = connections.current()
    assert values.shopify_client_id.value == "new-id"
    assert values.shopify_client_secret.value == SECRET


def test_a_value_from_the_environment_is_shown_read_only(admin_client, dev_shop, settings):
    settings.SHOPIFY_CLIENT_ID = "environment-id"

    shopify = section(page(admin_client), "shopify")

    assert "from the environment (SHOPIFY_CLIENT_ID)" in shopify
    assert 'name="shopify_client_id"' not in shopify
    assert 'name="shopify_client_secret"' in shopify

    page(admin_client, action="shopify_save", shopify_client_id="typed-anyway")
    assert not ConnectionSettings.objects.filter(shopify_client_id="typed-anyway").exists()


def test_the_connection_test_uses_the_stored_client_id_and_secret(admin_client, dev_shop, caplog):
    caplog.set_level(logging.DEBUG)
    connections.store(shopify_client_id=CLIENT_ID, shopify_client_secret=SECRET)

    shopify = section(page(admin_client, action="shopify_test"), "shopify")

    assert shopify_access.access() is shopify_access.Access.CLIENT_CREDENTIALS
    assert "Connected to the shop" in shopify
    (grant,) = dev_shop.token_requests
    assert grant.answer == "ok" and grant.form["client_id"] == CLIENT_ID
    assert SECRET not in shopify and SECRET not in caplog.text


def test_the_connection_test_with_a_wrong_stored_secret_fails_in_words(admin_client, dev_shop):
    connections.store(shopify_client_id=CLIENT_ID, shopify_client_secret="shpss_wrong_secret")

    shopify = section(page(admin_client, action="shopify_test"), "shopify")

    assert "Connected to the shop" not in shopify and "failed" in shopify
    assert "shpss_wrong_secret" not in shopify


def test_the_webhook_address_is_built_from_the_public_url(admin_client, dev_shop, settings):
    settings.PUBLIC_BASE_URL = "https://automation.kerzen.example"

    shopify = section(page(admin_client), "shopify")

    assert "https://automation.kerzen.example/webhooks/shopify/" in shopify
    assert "127.0.0.1" not in shopify


def test_saving_needs_the_change_permission(client, dev_shop):
    client.force_login(people.staff("view_delivery", "change_delivery"))

    response = client.post(
        "/admin/setup/",
        {"action": "shopify_save", "shopify_client_secret": SECRET},
        **EN,
    )

    assert response.status_code == 403
    assert not ConnectionSettings.objects.exists()
    shown = client.get("/admin/setup/", **EN).content.decode()
    assert 'name="shopify_client_secret"' not in shown


def test_the_api_never_answers_a_stored_secret(admin_client, nothing_in_the_environment):
    connections.store(
        shopify_client_secret=SECRET,
        google_ads_developer_token=DEVELOPER_TOKEN,
        google_ads_client_secret=OAUTH_SECRET,
    )
    root = admin_client.get("/api/", HTTP_ACCEPT="application/json").json()
    urls = ["/api/", "/api/schema/", "/api/reminder-results/", *root.values()]

    for url in urls:
        response = admin_client.get(url, HTTP_ACCEPT="application/json")
        body = response.content.decode()
        assert response.status_code == 200, url
        assert SECRET not in body and DEVELOPER_TOKEN not in body and OAUTH_SECRET not in body
    assert len(urls) > 5


# --- the help -------------------------------------------------------------------------------


def test_the_help_says_where_each_value_comes_from(admin_client, dev_shop):
    html = page(admin_client)

    shopify, ads = section(html, "shopify"), section(html, "google_ads")
    assert "https://dev.shopify.com/dashboard" in shopify
    for scope in ("read_products", "read_inventory", "read_orders"):
        assert scope in shopify
    assert "protected customer data at level 2" in shopify
    assert "https://automation.elbkerzen.example/webhooks/shopify/" in shopify
    assert "https://ads.google.com/aw/apicenter" in ads
    assert "https://console.cloud.google.com/apis/credentials" in ads
    assert "https://automation.elbkerzen.example/admin/setup/google/callback/" in ads


def test_a_local_public_url_is_named_as_unreachable(admin_client, dev_shop, settings):
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"

    shopify = section(page(admin_client), "shopify")

    assert "PUBLIC_BASE_URL is a local address (http://127.0.0.1:8000)" in shopify


def test_the_google_ads_credentials_entered_are_never_shown(admin_client, dev_shop, caplog):
    caplog.set_level(logging.DEBUG)

    saved = page(
        admin_client,
        action="google_ads_save",
        google_ads_developer_token=DEVELOPER_TOKEN,
        google_ads_client_id="1234-shop.apps.googleusercontent.com",
        google_ads_client_secret=OAUTH_SECRET,
    )
    shown = page(admin_client)

    values = connections.current()
    assert values.google_ads_developer_token.value == DEVELOPER_TOKEN
    assert values.google_ads_client_secret.value == OAUTH_SECRET
    assert DEVELOPER_TOKEN not in stored_column("google_ads_developer_token_sealed")
    for text in (saved, shown, caplog.text):
        assert DEVELOPER_TOKEN not in text and OAUTH_SECRET not in text
    assert 'value="1234-shop.apps.googleusercontent.com"' in section(shown, "google_ads")


def test_a_secret_sealed_under_a_lost_key_asks_to_be_entered_again(
    admin_client, dev_shop, settings
):
    current_key = settings.SECRET_KEY  # the admin's session is signed with it
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "the-lost-key", []
    connections.store(shopify_client_id=CLIENT_ID, shopify_client_secret=SECRET)
    settings.SECRET_KEY = current_key
    connections.forget()

    shopify = section(page(admin_client), "shopify")

    assert "not readable with this SECRET_KEY: enter it again" in shopify
    assert shopify_access.access() is None


# --- webhooks signed with the secret entered ---------------------------------------------------


def stored_ids() -> list[int]:
    return [json.loads(bytes(d.body))["id"] for d in Delivery.objects.order_by("pk")]


def test_a_webhook_signed_with_the_client_secret_entered_is_accepted(
    client, queue, nothing_in_the_environment
):
    connections.store(shopify_client_id=CLIENT_ID, shopify_client_secret=SECRET)

    accepted = post_shopify(client, {"id": 1}, secret=SECRET)
    refused = post_shopify(client, {"id": 2}, secret="shpss_some_other_secret")

    assert accepted.status_code == 200 and refused.status_code == 401
    assert stored_ids() == [1]  # the refused one left no row


def test_webhook_secrets_from_the_environment_win(
    client, queue, settings, nothing_in_the_environment
):
    connections.store(shopify_client_secret=SECRET)
    settings.SHOPIFY_WEBHOOK_SECRETS = ["shpss_from_the_environment"]

    assert post_shopify(client, {"id": 1}, secret=SECRET).status_code == 401
    assert not Delivery.objects.exists()
    assert post_shopify(client, {"id": 2}, secret="shpss_from_the_environment").status_code == 200
    assert stored_ids() == [2]
