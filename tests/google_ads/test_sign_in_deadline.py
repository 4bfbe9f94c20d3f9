"""Google's sign-in, sent when the Ads client is built, has the page's deadline on a page.

The SDK refreshes the OAuth token while building the client, through google-auth's requests
transport (120 s by default), and through GOOGLE_ADS_HTTP_PROXY when one is set
(google/ads/googleads/oauth2.py). A proxy that accepts and never answers stands in for a sign-in
that hangs: the ad group picker must give up within VENDOR_INTERACTIVE_TIMEOUT.
"""

import os
import time

import pytest

from automation.google_ads import statuses as ads
from automation.ui.setup import pickers
from tests.support.hanging import hanging_server

PAGE_DEADLINE = 0.5


@pytest.fixture
def hanging_sign_in(settings, monkeypatch):
    ads.google_client.cache_clear()
    with hanging_server() as (url, held):
        settings.ADS_BACKEND = "google"
        settings.GOOGLE_ADS_CUSTOMER_ID = "1234567890"
        settings.VENDOR_INTERACTIVE_TIMEOUT = PAGE_DEADLINE
        for name in [n for n in os.environ if n.startswith("GOOGLE_ADS_")]:
            monkeypatch.delenv(name)
        monkeypatch.delenv("GOOGLE_ADS_CONFIGURATION_FILE_PATH", raising=False)
        for name, value in {
            "GOOGLE_ADS_DEVELOPER_TOKEN": "dev-token",
            "GOOGLE_ADS_CLIENT_ID": "client.apps.googleusercontent.com",
            "GOOGLE_ADS_CLIENT_SECRET": "client-secret",
            "GOOGLE_ADS_REFRESH_TOKEN": "refresh-token",
            "GOOGLE_ADS_HTTP_PROXY": url,
        }.items():
            monkeypatch.setenv(name, value)
        yield held
    # the hanging build ends once the proxy's connections close
    ads.google_client.cache_clear()


@pytest.mark.django_db
def test_the_ad_group_picker_gives_up_on_a_hanging_sign_in_within_the_page_deadline(
    hanging_sign_in,
):
    started = time.monotonic()
    found = pickers.ad_groups("Winterzauber")
    took = time.monotonic() - started

    assert took < PAGE_DEADLINE + 1.0
    assert found.results == []
    assert found.hint == (
        "Google Ads cannot be reached right now: it did not answer within 0.5 seconds. "
        "Try again later."
    )
    assert len(hanging_sign_in) == 1  # the sign-in really went out, and hangs
