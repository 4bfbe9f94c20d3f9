"""\"Connect with Google\": the OAuth web flow end to end against a local token endpoint.

Given the OAuth client entered on the set-up page, when the merchant presses "Connect with
Google", then the browser goes to Google's consent page asking offline access to the Ads scope
with a state bound to the session; when Google sends them back, a callback with another state
is refused without asking Google, and the right one exchanges the code (with its PKCE
verifier) at GOOGLE_OAUTH_TOKEN_URI and stores the refresh token sealed, never shown.

The token endpoint's answer is Google's documented one
(https://developers.google.com/identity/protocols/oauth2/web-server#exchange-authorization-code):
JSON with access_token, expires_in, refresh_token (only for access_type=offline), scope,
token_type; a refused code answers 400 {"error": "invalid_grant"}.
"""

from __future__ import annotations

import json
import logging
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from werkzeug import Request, Response

from automation.google_ads.oauth import ADS_SCOPE
from automation.platform import connections
from tests.platform.test_connections import stored_column
from tests.support.hanging import hanging_server
from tests.ui.test_setup import EN, page, section

pytestmark = pytest.mark.django_db

PUBLIC = "https://automation.elbkerzen.example"
CALLBACK = f"{PUBLIC}/admin/setup/google/callback/"
AUTH_URI = "https://accounts.google.example/o/oauth2/auth"
CLIENT_ID = "1234-standin.apps.googleusercontent.com"
CLIENT_SECRET = "GOCSPX-standin-client-secret"
REFRESH_TOKEN = "1//standin-refresh-token-not-to-be-shown"
ACCESS_TOKEN = "ya29.standin-access-token"


class TokenEndpoint:
    """Google's token endpoint as documented: records each exchange, answers as scripted."""

    def __init__(self) -> None:
        self.forms: list[dict[str, str]] = []
        self.answer: dict = {
            "access_token": ACCESS_TOKEN,
            "expires_in": 3599,
            "refresh_token": REFRESH_TOKEN,
            "scope": ADS_SCOPE,
            "token_type": "Bearer",
        }
        self.status = 200

    def __call__(self, request: Request) -> Response:
        self.forms.append({k: v for k, v in request.form.items()})
        return Response(
            json.dumps(self.answer), status=self.status, content_type="application/json"
        )


@pytest.fixture
def google(httpserver, settings, monkeypatch):
    endpoint = TokenEndpoint()
    httpserver.expect_request("/token", method="POST").respond_with_handler(endpoint)
    settings.GOOGLE_OAUTH_TOKEN_URI = httpserver.url_for("/token")
    settings.GOOGLE_OAUTH_AUTH_URI = AUTH_URI
    settings.PUBLIC_BASE_URL = PUBLIC
    for field in connections.FIELDS.values():
        if field.name.startswith("google_ads"):
            setattr(settings, field.env_name, "")
    # oauthlib refuses a token endpoint without TLS unless told; the stand-in speaks plain HTTP
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")
    connections.store(google_ads_client_id=CLIENT_ID, google_ads_client_secret=CLIENT_SECRET)
    yield endpoint
    httpserver.check_handler_errors()


def start(client) -> dict[str, str]:
    response = client.post("/admin/setup/", {"action": "google_connect"}, **EN)
    assert response.status_code == 302
    url = urlsplit(response["Location"])
    assert f"{url.scheme}://{url.netloc}{url.path}" == AUTH_URI
    return {key: values[0] for key, values in parse_qs(url.query).items()}


def back(client, **params):
    response = client.get("/admin/setup/google/callback/", params, **EN)
    assert response.status_code == 302 and response["Location"].startswith("/admin/setup/")
    return page(client)


def test_the_consent_page_asks_offline_access_to_ads_with_a_state(admin_client, google):
    asked = start(admin_client)

    assert asked["scope"] == ADS_SCOPE
    assert asked["access_type"] == "offline" and asked["prompt"] == "consent"
    assert asked["redirect_uri"] == CALLBACK and asked["client_id"] == CLIENT_ID
    assert asked["response_type"] == "code" and asked["code_challenge_method"] == "S256"
    assert len(asked["state"]) >= 20
    assert google.forms == []


def test_the_whole_sign_in_stores_the_refresh_token_sealed(admin_client, google, caplog):
    caplog.set_level(logging.DEBUG)
    asked = start(admin_client)

    html = back(admin_client, state=asked["state"], code="4/standin-code")

    (exchange,) = google.forms
    assert exchange["grant_type"] == "authorization_code"
    assert exchange["code"] == "4/standin-code" and exchange["redirect_uri"] == CALLBACK
    assert len(exchange["code_verifier"]) >= 43
    token = connections.current().google_ads_refresh_token
    assert token.value == REFRESH_TOKEN and token.source is connections.Source.DATABASE
    assert REFRESH_TOKEN not in stored_column("google_ads_refresh_token_sealed")
    assert "Connected with Google" in section(html, "google_ads")
    for secret in (REFRESH_TOKEN, CLIENT_SECRET, ACCESS_TOKEN):
        assert secret not in html and secret not in caplog.text


def test_a_callback_with_another_state_is_refused_without_asking_google(admin_client, google):
    asked = start(admin_client)

    html = back(admin_client, state="forged-state", code="4/attacker-code")

    assert google.forms == []
    assert not connections.current().google_ads_refresh_token
    assert "could not be matched to this session" in section(html, "google_ads")
    # the merchant's own sign-in is still open
    back(admin_client, state=asked["state"], code="4/standin-code")
    assert connections.current().google_ads_refresh_token.value == REFRESH_TOKEN


def test_a_callback_without_a_sign_in_started_is_refused(admin_client, google):
    html = back(admin_client, state="anything", code="4/standin-code")

    assert google.forms == [] and "could not be matched" in section(html, "google_ads")


def test_a_state_is_used_once(admin_client, google):
    asked = start(admin_client)
    back(admin_client, state=asked["state"], code="4/standin-code")

    html = back(admin_client, state=asked["state"], code="4/standin-code")

    assert len(google.forms) == 1 and "could not be matched" in section(html, "google_ads")


def test_a_refusal_at_google_is_shown_in_words(admin_client, google):
    asked = start(admin_client)

    html = back(admin_client, state=asked["state"], error="access_denied")

    assert google.forms == [] and "access_denied" in section(html, "google_ads")


def test_a_refused_code_is_shown_in_words(admin_client, google):
    google.status, google.answer = 400, {"error": "invalid_grant"}
    asked = start(admin_client)

    html = back(admin_client, state=asked["state"], code="4/stale-code")

    assert "Google refused the sign-in" in section(html, "google_ads")
    assert not connections.current().google_ads_refresh_token


def test_an_answer_without_a_refresh_token_is_not_stored(admin_client, google):
    del google.answer["refresh_token"]
    asked = start(admin_client)

    html = back(admin_client, state=asked["state"], code="4/standin-code")

    assert "no refresh token" in section(html, "google_ads")
    assert not connections.current().google_ads_refresh_token


def test_a_slow_token_endpoint_is_given_up_on_within_the_page_deadline(
    admin_client, google, settings
):
    with hanging_server() as (url, held):
        settings.GOOGLE_OAUTH_TOKEN_URI = url + "/token"
        settings.VENDOR_INTERACTIVE_TIMEOUT = 0.5
        asked = start(admin_client)
        started = time.monotonic()
        html = back(admin_client, state=asked["state"], code="4/standin-code")
        took = time.monotonic() - started

    assert took < 0.5 + 1.0 and len(held) == 1
    assert "did not answer in time" in section(html, "google_ads")
    assert not connections.current().google_ads_refresh_token


def test_without_the_oauth_client_the_button_says_what_is_missing(admin_client, settings):
    for field in connections.FIELDS.values():
        setattr(settings, field.env_name, "")

    html = page(admin_client, action="google_connect")

    assert "Enter the OAuth client id and client secret first." in section(html, "google_ads")


def test_a_refresh_token_from_the_environment_wins_and_no_sign_in_starts(
    admin_client, google, settings
):
    settings.GOOGLE_ADS_REFRESH_TOKEN = "1//from-the-environment"

    html = page(admin_client, action="google_connect")

    assert "GOOGLE_ADS_REFRESH_TOKEN is set in the environment" in section(html, "google_ads")


# --- choosing the account ----------------------------------------------------------------------

MANAGER, SHOP_ACCOUNT, OTHER_SHOP, DIRECT = "1112223334", "5556667778", "9990001112", "4445556667"


@pytest.fixture
def accounts(google_ads):
    """The sign-in reaches a manager (with the shop's account and another) and one account
    directly."""
    google_ads.accessible = [MANAGER, DIRECT]
    google_ads.add_account(MANAGER, "Agentur MCC", manager=True, clients=(SHOP_ACCOUNT, OTHER_SHOP))
    google_ads.add_account(SHOP_ACCOUNT, "Elbkerzen Shop")
    google_ads.add_account(OTHER_SHOP, "Anderer Laden")
    google_ads.add_account(DIRECT, "Elbkerzen Test")
    yield google_ads
    google_ads.reset_search()


def test_after_signing_in_the_reachable_accounts_are_offered(admin_client, google, accounts):
    asked = start(admin_client)

    ads = section(back(admin_client, state=asked["state"], code="4/standin-code"), "google_ads")

    assert "Connected with Google" in ads
    assert f'value="{SHOP_ACCOUNT}:{MANAGER}"' in ads and f'value="{OTHER_SHOP}:{MANAGER}"' in ads
    assert f'value="{DIRECT}:"' in ads
    assert f'value="{MANAGER}:' not in ads  # a manager has no ad groups of its own
    (listing,) = accounts.accessible_calls
    assert "login-customer-id" not in listing.metadata
    logins = {call.metadata.get("login-customer-id") for call in accounts.searches}
    assert logins == {MANAGER, DIRECT}


def test_choosing_an_account_stores_it_with_its_manager(admin_client, google, accounts):
    html = page(admin_client, action="google_ads_account", account=f"{SHOP_ACCOUNT}:{MANAGER}")

    assert "Elbkerzen Shop" in section(html, "google_ads")
    values = connections.current()
    assert values.google_ads_customer_id.value == SHOP_ACCOUNT
    assert values.google_ads_login_customer_id.value == MANAGER


def test_an_account_reached_directly_is_stored_without_a_manager(admin_client, google, accounts):
    connections.store(google_ads_login_customer_id=MANAGER)

    page(admin_client, action="google_ads_account", account=f"{DIRECT}:")

    values = connections.current()
    assert values.google_ads_customer_id.value == DIRECT
    assert not values.google_ads_login_customer_id


NOT_REACHED = "This account is not among those your Google sign-in reaches."
NOT_AN_ACCOUNT = "Choose one of the accounts listed."


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (f"{MANAGER}:", NOT_REACHED),  # a manager has no ad groups of its own
        (f"{SHOP_ACCOUNT}:{DIRECT}", NOT_REACHED),  # DIRECT manages nothing
        ("1234567890:", NOT_REACHED),
        ("x", NOT_AN_ACCOUNT),
        (f"{SHOP_ACCOUNT}", NOT_AN_ACCOUNT),  # no colon: not a value the list offers
    ],
)
def test_an_account_the_sign_in_does_not_reach_is_refused(
    admin_client, google, accounts, value, said
):
    html = page(admin_client, action="google_ads_account", account=value)

    assert not connections.current().google_ads_customer_id
    ads = section(html, "google_ads")
    assert said in ads
    assert (NOT_AN_ACCOUNT if said == NOT_REACHED else NOT_REACHED) not in ads


def test_a_customer_id_from_the_environment_is_not_replaced(
    admin_client, google, accounts, settings
):
    settings.GOOGLE_ADS_CUSTOMER_ID = "1231231234"

    html = page(admin_client, action="google_ads_account", account=f"{DIRECT}:")

    assert "GOOGLE_ADS_CUSTOMER_ID is set in the environment" in section(html, "google_ads")
    assert connections.current().google_ads_customer_id.value == "1231231234"


def test_a_failing_listing_is_shown_in_words(admin_client, google, accounts):
    accounts.search_behaviour = "permanent"

    html = page(admin_client, action="google_ads_accounts")

    ads = section(html, "google_ads")
    assert 'name="account"' not in ads and "setup-result failed" in ads
