"""A vendor's failure on a staff page: our own sentence per kind, the vendor's text only in the
log, with secrets masked.

Given a Shopify stand-in whose error repeats the request's access token (and a Google Ads
stand-in whose error repeats the developer token), when the set-up buttons and the pickers
meet it, then neither the page nor the JSON holds the token or the vendor's words, and the log
record holds the vendor's text with the token masked.
"""

import html as html_text
import logging
import smtplib
from datetime import timedelta

import grpc
import pytest
import requests
from django.utils import timezone
from rest_framework.test import APIClient

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import BrakeEpisode, HeldChange, ReconcileRun
from automation.platform.exceptions import AdGroupMissing, PermanentAdsError, TransientAdsError
from automation.platform.log_context import MaskSecretsFilter
from automation.platform.masking import MASK, mask_secrets
from automation.shopify.transport import (
    ShopifyAdminError,
    ShopifyCredentialsError,
    ShopifyThrottled,
)
from automation.ui.setup import failures
from automation.ui.setup.failures import Kind
from tests.support import ads_standin, people
from tests.support.levels import apply_level
from tests.support.shopify_standin import TOKEN
from tests.support.watching import watch
from tests.ui.test_setup import CUSTOMER, EN, account, page, section, shop  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

LOGGER = "automation.ui.setup.failures"
VENDOR_WORDS = "Request with access token"
OUR_SHOPIFY_SENTENCE = (
    "Shopify could not be reached or answered with an error; the details are in the service's log."
)


def failure_records(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == LOGGER]


def assert_logged_masked(caplog, secret: str) -> None:
    [logged] = failure_records(caplog)
    assert MASK in logged and VENDOR_WORDS in logged
    assert all(secret not in record.getMessage() for record in caplog.records)


# --- Shopify echoes the token ---------------------------------------------------------------


@pytest.mark.parametrize("status", [200, 400, 422], ids=["graphql error", "400", "422"])
@pytest.mark.parametrize("action", ["shopify_test", "shopify_webhooks"])
def test_the_set_up_page_never_shows_an_echoed_token(
    admin_client,
    shop,  # noqa: F811
    caplog,
    status,
    action,
):
    shop.script(("echo", status))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        html = section(page(admin_client, action=action), "shopify")

    assert shop.requests[0].answer == f"echo {status}"
    assert TOKEN not in html and VENDOR_WORDS not in html
    assert "setup-result failed" in html and OUR_SHOPIFY_SENTENCE in html_text.unescape(html)
    assert_logged_masked(caplog, TOKEN)


def test_the_product_picker_never_answers_an_echoed_token(admin_client, shop, caplog):  # noqa: F811
    shop.script(("echo", 400))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        response = admin_client.get("/admin/setup/pick/products/", {"q": "winter"}, **EN)

    assert TOKEN not in response.content.decode()
    assert response.json() == {"results": [], "hint": OUR_SHOPIFY_SENTENCE}
    assert_logged_masked(caplog, TOKEN)


# --- Google Ads echoes the developer token --------------------------------------------------


@pytest.fixture
def echoing_ads(account, monkeypatch, settings):  # noqa: F811
    """Every search fails with a message repeating the (configured) developer token."""
    settings.GOOGLE_ADS_SECRETS = [ads_standin.DEVELOPER_TOKEN]
    monkeypatch.setitem(
        ads_standin.BEHAVIOURS,
        "echo",
        (
            grpc.StatusCode.INVALID_ARGUMENT,
            "request_error",
            "RESOURCE_NAME_MALFORMED",
            f"{VENDOR_WORDS} {ads_standin.DEVELOPER_TOKEN} failed",
        ),
    )
    account.search_behaviour = "echo"
    return account


def test_the_google_ads_test_and_picker_never_show_the_echoed_token(
    admin_client, echoing_ads, caplog
):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        html = section(page(admin_client, action="google_ads_test"), "google_ads")
        found = admin_client.get("/admin/setup/pick/ad-groups/", {"q": "winter"}, **EN)

    sentence = "Google Ads refused the request; the details are in the service's log."
    for shown in (html, found.content.decode()):
        assert ads_standin.DEVELOPER_TOKEN not in shown and VENDOR_WORDS not in shown
    assert sentence in html_text.unescape(html) and found.json()["hint"] == sentence
    logged = failure_records(caplog)
    assert len(logged) == 2 and all(MASK in line and VENDOR_WORDS in line for line in logged)
    assert all(
        ads_standin.DEVELOPER_TOKEN not in r.getMessage()
        for r in caplog.records
        if r.name == LOGGER
    )


# --- one sentence per kind ------------------------------------------------------------------


SECRET = "shpat_0123456789abcdef"


def _timed_out() -> ShopifyAdminError:
    try:
        raise ShopifyAdminError(f"Shopify Admin API unreachable: ReadTimeout {SECRET}") from (
            requests.ReadTimeout()
        )
    except ShopifyAdminError as err:
        return err


def _greeting_never_came() -> smtplib.SMTPServerDisconnected:
    """What smtplib raises when the server's greeting times out (raised while handling it)."""
    err = smtplib.SMTPServerDisconnected(f"Connection unexpectedly closed: timed out {SECRET}")
    err.__context__ = TimeoutError("timed out")
    return err


KINDS = [
    (ShopifyAdminError(f"HTTP 401 {SECRET}", status=401), Kind.UNAUTHORISED, "Shopify refused"),
    (
        ShopifyCredentialsError(f"refused {SECRET}", status=400),
        Kind.UNAUTHORISED,
        "Shopify refused",
    ),
    (ShopifyAdminError(f"HTTP 403 {SECRET}", status=403), Kind.UNAUTHORISED, "The app lacks"),
    (ShopifyAdminError(f"HTTP 404 {SECRET}", status=404), Kind.NOT_FOUND, "No Shopify Admin API"),
    (_timed_out(), Kind.TIMEOUT, "Shopify did not answer within"),
    (ShopifyThrottled(f"throttled {SECRET}"), Kind.RATE_LIMITED, "Shopify is slowing us down"),
    (ShopifyAdminError(f"HTTP 429 {SECRET}", status=429), Kind.RATE_LIMITED, "Shopify is slowing"),
    (ShopifyAdminError(f"HTTP 400 {SECRET}", status=400), Kind.OTHER, "Shopify could not be"),
    (
        PermanentAdsError(f"USER_PERMISSION_DENIED: {SECRET}"),
        Kind.UNAUTHORISED,
        "Google Ads refuses access",
    ),
    (
        PermanentAdsError(f"CONFIGURATION_ERROR: {SECRET}"),
        Kind.UNAUTHORISED,
        "The Google Ads credentials",
    ),
    (
        AdGroupMissing(f"RESOURCE_NOT_FOUND: {SECRET}", kind=AdGroupMissing.NOT_FOUND),
        Kind.NOT_FOUND,
        "Google Ads does not know",
    ),
    (
        TransientAdsError(f"DEADLINE_EXCEEDED: {SECRET}"),
        Kind.TIMEOUT,
        "Google Ads cannot be reached right now: it did not answer",
    ),
    (
        TransientAdsError(f"RESOURCE_TEMPORARILY_EXHAUSTED: {SECRET}"),
        Kind.RATE_LIMITED,
        "Google Ads is slowing us down",
    ),
    (
        TransientAdsError(f"TRANSIENT_ERROR: {SECRET}"),
        Kind.OTHER,
        "Google Ads cannot be reached right now: try again later.",
    ),
    (PermanentAdsError(f"RESOURCE_NAME_MALFORMED: {SECRET}"), Kind.OTHER, "Google Ads refused"),
    (
        smtplib.SMTPAuthenticationError(535, f"bad {SECRET}".encode()),
        Kind.UNAUTHORISED,
        "The mail server refused the user name",
    ),
    (TimeoutError(f"timed out {SECRET}"), Kind.TIMEOUT, "The mail server did not answer"),
    (_greeting_never_came(), Kind.TIMEOUT, "The mail server did not answer"),
    (ConnectionRefusedError(111, SECRET), Kind.OTHER, "The mail server refused or could not"),
]


@pytest.mark.parametrize(("err", "kind", "sentence"), KINDS, ids=lambda v: getattr(v, "value", ""))
def test_each_kind_of_failure_has_our_sentence_and_a_masked_log_line(err, kind, sentence, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        said = failures.explain(err)

    assert said.startswith(sentence)
    assert SECRET not in said
    [logged] = failure_records(caplog)
    assert f"({kind.value})" in logged and MASK in logged and SECRET not in logged


def test_an_unexpected_error_is_named_by_type_and_logged_masked(caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        said = failures.explain(KeyError(SECRET))

    assert said == "Unexpected error (KeyError); the details are in the service's log."
    [logged] = failure_records(caplog)
    # the error was never raised, so it has no traceback: the log names its type, masked
    assert logged == f"a call from a staff page failed unexpectedly: KeyError: '{MASK}'\n"
    assert SECRET not in logged


# --- the masking ------------------------------------------------------------------------------


def test_configured_secrets_and_credential_shapes_are_masked(settings):
    settings.SHOPIFY_ADMIN_TOKEN = "static-admin-token-1"
    settings.SHOPIFY_CLIENT_SECRET = "the-client-secret"
    settings.GOOGLE_ADS_SECRETS = ["dev-token-22-characters", "refresh-value-x"]
    settings.EMAIL_HOST_PASSWORD = "smtp-password"
    text = (
        "token static-admin-token-1, secret the-client-secret, developer dev-token-22-characters, "
        "refresh refresh-value-x, smtp smtp-password; shaped: shpat_abc123 shpss_def_456 "
        "whsec_xyz sk_live_123 ya29.a0AfH6 1//0gAbC-dEf GOCSPX-aBc_dEf; kept: shop elbkerzen, "
        "HTTP 400"
    )

    masked = mask_secrets(text)

    for secret in (
        "static-admin-token-1",
        "the-client-secret",
        "dev-token-22-characters",
        "refresh-value-x",
        "smtp-password",
        "shpat_abc123",
        "shpss_def_456",
        "whsec_xyz",
        "sk_live_123",
        "ya29.a0AfH6",
        "1//0gAbC-dEf",
        "GOCSPX-aBc_dEf",
    ):
        assert secret not in masked
    assert masked.count(MASK) == 12
    assert masked.endswith("kept: shop elbkerzen, HTTP 400")


def test_the_log_handler_masks_what_a_library_logs(settings):
    """The Google Ads client logs each fault message itself; the console handler masks it."""
    settings.GOOGLE_ADS_SECRETS = [ads_standin.DEVELOPER_TOKEN]
    record = logging.LogRecord(
        "google.ads.googleads.client", logging.WARNING, __file__, 1,
        "Request made: FaultMessage: %s", (f"{VENDOR_WORDS} {ads_standin.DEVELOPER_TOKEN}",), None,
    )  # fmt: skip

    assert MaskSecretsFilter().filter(record)

    assert record.getMessage() == f"Request made: FaultMessage: {VENDOR_WORDS} {MASK}"
    console = logging.getLogger().handlers
    assert any(isinstance(f, MaskSecretsFilter) for handler in console for f in handler.filters)


# --- a held change Google Ads refused -------------------------------------------------------


@pytest.fixture
def held_pause(echoing_ads, google_ads):
    """An open held pause of a sold-out product whose ad group Google Ads refuses to change,
    with an error repeating the developer token."""
    now = timezone.now()
    watch(808950810, "555", label="Winterzauber", customer_id=CUSTOMER)
    # in stock and running, as Google Ads confirmed; sold out while the brake is engaged
    apply_level(LevelUpdate(808950810, 1, 5, now - timedelta(minutes=1)), source="webhook")
    BrakeEpisode.objects.create(started_at=now, reason="–")
    apply_level(LevelUpdate(808950810, 1, 0, now), source="webhook")
    assert HeldChange.objects.filter(ad_group_id="555", resolution="open").exists()
    google_ads.script(["echo"], default="echo")
    return google_ads


def test_applying_a_refused_held_change_says_our_sentence(admin_client, held_pause, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        shown_pks = [str(pk) for pk in HeldChange.objects.values_list("pk", flat=True)]
        response = admin_client.post(
            "/admin/automation/heldchange/apply-all/",
            {"confirm": "yes", "change": shown_pks},
            follow=True,
            **EN,
        )

    shown = response.content.decode()
    assert held_pause.requests, "the change was sent to Google Ads"
    assert ads_standin.DEVELOPER_TOKEN not in shown and VENDOR_WORDS not in shown
    assert "Ad group 555: Google Ads refused the request" in html_text.unescape(shown)
    assert any(MASK in line and VENDOR_WORDS in line for line in failure_records(caplog))


def test_the_api_s_apply_all_answers_our_sentence(held_pause, caplog):
    api = APIClient()
    api.force_authenticate(people.superuser())

    answer = api.post("/api/held-changes/apply-all/", HTTP_ACCEPT_LANGUAGE="en").json()

    assert answer["decided"] == 0
    assert answer["errors"] == [
        "Ad group 555: Google Ads refused the request; the details are in the service's log."
    ]


def test_the_dashboard_shows_a_run_s_stored_errors_masked(admin_client, settings):
    """What the nightly run stored of a vendor's error (an echoed token in it) is shown masked."""
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "api"
    ReconcileRun.objects.create(
        local_date=timezone.localdate(),
        started_at=timezone.now(),
        finished_at=timezone.now(),
        status=ReconcileRun.Status.ERRORS,
        errors=[f"webhook subscriptions: HTTP 400 from Shopify Admin API: {VENDOR_WORDS} {TOKEN}"],
    )

    html = admin_client.get("/admin/dashboard/", **EN).content.decode()

    assert TOKEN not in html
    # the card's error list, its subscriptions, and the notice bar (automation/ui/notices.py)
    assert html.count(f"{VENDOR_WORDS} {MASK}") == 3
