"""Admin API access for both kinds of app, the token shared through Redis, and who owns webhooks."""

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from automation.shopify import access as shopify_access
from automation.shopify.tokens import TOKEN_RENEW_MARGIN, ClientCredentialsTokens
from automation.shopify.transport import ShopifyCredentialsError
from automation.ui.dashboard import selectors
from tests.support import shopify_admin
from tests.support.shopify_standin import CLIENT_ID, TOKEN

# Which way we reach the shop is read through automation.platform.connections, which asks the
# database.
pytestmark = pytest.mark.django_db

SECRET = shopify_admin.CLIENT_SECRET
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def dev_shop(httpserver, settings, redis):
    """A Dev Dashboard app: client id and secret, no static token anywhere."""
    standin = shopify_admin.dev_app_shop(httpserver, settings)
    standin.add_item(1, (11, 4, "2026-11-28T15:10:00Z"))
    yield standin
    httpserver.check_handler_errors()


def levels() -> int:
    """One read through a freshly built client, as another process would build it."""
    return len(list(shopify_access.admin_client().fetch_levels([1])))


# --- which way ---------------------------------------------------------------------------------


def test_the_static_token_wins_when_both_are_set(settings):
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    settings.SHOPIFY_CLIENT_ID = CLIENT_ID
    settings.SHOPIFY_CLIENT_SECRET = SECRET

    assert shopify_access.access() is shopify_access.Access.STATIC
    assert shopify_access.token_source().current() == TOKEN


def test_client_credentials_without_a_static_token(settings):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = CLIENT_ID
    settings.SHOPIFY_CLIENT_SECRET = SECRET

    assert shopify_access.access() is shopify_access.Access.CLIENT_CREDENTIALS
    assert isinstance(shopify_access.token_source(), ClientCredentialsTokens)
    assert shopify_access.missing_settings() == ""


def test_neither_way_is_not_configured_and_says_what_to_set(settings):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = ""

    assert shopify_access.access() is None
    assert shopify_access.token_source() is None
    assert shopify_access.admin_client() is None
    hint = shopify_access.missing_settings()
    assert "SHOPIFY_CLIENT_ID" in hint and "SHOPIFY_ADMIN_TOKEN" in hint


def test_a_client_id_without_any_secret_names_the_secret(settings):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = CLIENT_ID
    settings.SHOPIFY_CLIENT_SECRET = ""

    assert not shopify_access.is_configured()
    assert shopify_access.missing_settings().startswith("SHOPIFY_CLIENT_SECRET")


def settings_in_subprocess(expression: str, **env: str) -> subprocess.CompletedProcess:
    """Import the settings module in a fresh interpreter: its defaults come from the environment."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SHOPIFY_CLIENT", "SHOPIFY_WEBHOOK"))
    }
    environment.update(SECRET_KEY="x", **env)
    code = f"import elbkerzen.settings as s; print({expression})"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_client_secret_defaults_to_the_first_webhook_secret():
    result = settings_in_subprocess(
        "s.SHOPIFY_CLIENT_SECRET, s.SHOPIFY_WEBHOOKS_MANAGED_BY",
        SHOPIFY_WEBHOOK_SECRETS="shpss_current,shpss_old",
    )
    assert result.stdout.split() == ["shpss_current", "api"], result.stderr


def test_an_unknown_webhooks_owner_is_refused_at_start():
    result = settings_in_subprocess("1", SHOPIFY_WEBHOOKS_MANAGED_BY="partners")

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "SHOPIFY_WEBHOOKS_MANAGED_BY" in result.stderr


def test_an_unknown_webhooks_owner_set_at_run_time_is_refused_too(settings):
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "partners"

    with pytest.raises(ImproperlyConfigured, match="SHOPIFY_WEBHOOKS_MANAGED_BY"):
        shopify_access.webhooks_managed_by()


# --- one token for all processes ------------------------------------------------------------


def test_the_token_is_fetched_once_and_shared_through_redis(dev_shop, redis, settings):
    assert levels() == 1
    assert levels() == 1  # a second client, as in another worker: no second fetch

    assert len(dev_shop.token_requests) == 1
    key = shopify_access.token_cache_key()
    stored = redis.get(key).decode()
    assert stored in dev_shop.issued
    assert {r.headers["X-Shopify-Access-Token"] for r in dev_shop.requests} == {stored}
    # kept until 5 minutes before Shopify's 86399 seconds run out
    assert 86399 - TOKEN_RENEW_MARGIN - 5 <= redis.ttl(key) <= 86399 - TOKEN_RENEW_MARGIN
    assert key.endswith(f"{settings.SHOPIFY_ADMIN_URL.split('//')[1]}:{CLIENT_ID}")


def test_a_token_with_five_minutes_left_is_replaced(dev_shop):
    dev_shop.token_lifetime = TOKEN_RENEW_MARGIN + 1  # kept for one second only
    levels()
    time.sleep(1.1)  # the token has 299 s left at Shopify: still valid, but we stop using it

    levels()

    assert len(dev_shop.token_requests) == 2
    assert "401" not in [r.answer for r in dev_shop.requests]


def test_a_401_replaces_the_shared_token_for_every_process(dev_shop, redis):
    levels()
    old = redis.get(shopify_access.token_cache_key()).decode()
    dev_shop.expire_tokens()  # Shopify no longer takes it, though our cache still holds it

    levels()
    new = redis.get(shopify_access.token_cache_key()).decode()
    levels()  # another process: uses the renewed token straight away

    assert new != old
    assert [r.answer for r in dev_shop.requests] == ["ok", "401", "ok", "ok"]
    assert len(dev_shop.token_requests) == 2


def test_the_token_is_never_logged(dev_shop, caplog):
    with caplog.at_level(logging.DEBUG):
        levels()

    (token,) = dev_shop.issued
    assert "fetched a Shopify Admin API access token" in caplog.text
    assert token not in caplog.text
    assert SECRET not in caplog.text


def test_without_redis_each_process_keeps_its_own_token(dev_shop, settings, caplog):
    settings.REDIS_URL = "redis://127.0.0.1:1/12"  # nothing listens there
    tokens = shopify_access.token_source()

    first = tokens.current()
    assert tokens.current() == first

    assert len(dev_shop.token_requests) == 1
    assert "token cache unavailable" in caplog.text


def test_a_wrong_secret_names_the_settings(dev_shop, settings):
    settings.SHOPIFY_CLIENT_SECRET = "shpss_wrong"

    with pytest.raises(
        ShopifyCredentialsError, match="SHOPIFY_CLIENT_ID and SHOPIFY_CLIENT_SECRET"
    ) as caught:
        levels()

    assert "invalid_client" in str(caught.value)
    assert "shpss_wrong" not in str(caught.value)


# --- who owns the webhook subscriptions, as the merchant sees it ------------------------------


def test_dashboard_and_admin_say_the_app_configuration_owns_the_subscriptions(
    settings, admin_client
):
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "toml"
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN

    health = selectors.webhook_subscriptions(None)
    page = admin_client.get(reverse("dashboard")).content.decode()
    runs = admin_client.get("/admin/automation/reconcilerun/").content.decode()

    assert health.state == "app_config"
    assert "shopify.app.toml" in health.message
    assert "app configuration" in page and "shopify.app.toml" in page
    assert "neither checks nor creates" in runs


def test_the_admin_names_both_ways_when_nothing_is_configured(settings, admin_client):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = ""

    page = admin_client.get("/admin/automation/reconcilerun/").content.decode()
    health = selectors.webhook_subscriptions(None)

    assert "SHOPIFY_CLIENT_ID" in page and "SHOPIFY_ADMIN_TOKEN" in page
    assert health.state == "not_configured"
    assert "SHOPIFY_CLIENT_ID" in health.message


def test_client_credentials_alone_count_as_configured_on_the_dashboard(settings):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = CLIENT_ID
    settings.SHOPIFY_CLIENT_SECRET = SECRET

    assert selectors.webhook_subscriptions(None).state == "unknown"  # configured, no run yet


@pytest.mark.django_db
def test_a_picker_waits_one_short_try_for_a_hanging_token_endpoint(settings, redis):
    """A Dev Dashboard app's token is fetched while the page waits: one try of the page's
    deadline, not the nightly run's three of 10 s."""
    from automation.ui.setup import pickers
    from tests.support.hanging import hanging_server

    with hanging_server() as (url, held):
        settings.SHOPIFY_ADMIN_URL = url
        settings.SHOPIFY_ADMIN_TOKEN = ""
        settings.SHOPIFY_CLIENT_ID = CLIENT_ID
        settings.SHOPIFY_CLIENT_SECRET = "dev-dashboard-secret"  # noqa: S105 (a test's)
        settings.VENDOR_INTERACTIVE_TIMEOUT = 0.5

        started = time.monotonic()
        found = pickers.products("Nordlicht")
        took = time.monotonic() - started

        assert took < 1.5
        assert found.results == []
        assert found.hint == "Shopify did not answer within 0.5 seconds: try again in a minute."
        assert len(held) == 1  # sent once
