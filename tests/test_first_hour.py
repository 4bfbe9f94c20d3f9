"""The merchant's first hour in the browser: log in, open the set-up page, test the shop's
connection, add a watched item by picking the product and the ad group by name, save.

Chromium (Debian's /usr/bin/chromium) through Playwright, as tests/test_browser.py; the shop and
the Ads account are the local stand-ins. Screenshots go to test-results/. Skipped where Chromium
is not installed.
"""

import shutil
from pathlib import Path

import pytest
from django.db import connections

from automation.models import WatchedItem
from tests.shopify_standin import SHOP_NAME, TOKEN, ShopifyStandIn

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed"),
]
SCREENSHOTS = Path(__file__).resolve().parent.parent / "test-results"
CUSTOMER = "1234567890"


@pytest.fixture
def browser(monkeypatch):
    sync_api = pytest.importorskip("playwright.sync_api")
    # The live server's ORM calls run under Playwright's event loop (see tests/test_browser.py).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()
        connections.close_all()


@pytest.fixture
def shop(httpserver, settings):
    """The shop's Admin API (static token) with the Winterzauber candle among its products."""
    standin = ShopifyStandIn(restore_rate=5000)
    settings.SHOPIFY_ADMIN_URL = standin.install(httpserver)
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    settings.SHOPIFY_CLIENT_ID = ""
    settings.SHOPIFY_WEBHOOK_SECRETS = ["shpss_first_hour"]
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "api"
    settings.PUBLIC_BASE_URL = "https://automation.elbkerzen.example"
    standin.add_variant(44001, 808950810, "Winterzauber", sku="WZ-200")
    standin.add_variant(44002, 808950811, "Sommerwiese", sku="SW-200")
    yield standin
    httpserver.check_handler_errors()


@pytest.fixture
def account(google_ads, settings):
    settings.GOOGLE_ADS_CUSTOMER_ID = CUSTOMER
    google_ads.reset_search()
    google_ads.add_ad_group("555", "Winterzauber Suche", "Kerzen Winter")
    google_ads.add_ad_group("556", "Sommerwiese Suche", "Kerzen Sommer")
    yield google_ads
    google_ads.reset_search()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"first-hour-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


def test_the_first_hour(browser, live_server, django_user_model, shop, account, queue):
    django_user_model.objects.create_superuser(
        "inhaberin", "inhaberin@elbkerzen.example", "kerzen-2026!"
    )
    page = browser.new_page(locale="de-DE", viewport={"width": 1366, "height": 900})

    # Log in.
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "inhaberin")
    page.fill("#id_password", "kerzen-2026!")
    page.click("input[type=submit]")
    page.wait_for_selector("#content")

    # Open the set-up page from the admin index and test the shop's connection.
    page.click("a[href='/admin/setup/']")
    page.wait_for_selector("#setup-shopify")
    page.click("#setup-shopify button[value='shopify_test']")
    result = page.wait_for_selector("#setup-shopify .setup-result.ok")
    assert SHOP_NAME in result.inner_text()
    shot(page, "1-setup")

    # Add a watched item: pick the product by title and the ad group by campaign name.
    page.goto(f"{live_server.url}/admin/automation/watcheditem/add/")
    page.fill("#id_inventory_item_id_search", "Winterz")
    page.wait_for_selector(".setup-picker-choice:has-text('Winterzauber')")
    shot(page, "2-search")
    page.click(".setup-picker-choice:has-text('Winterzauber')")
    assert page.input_value("#id_inventory_item_id") == "808950810"
    assert page.input_value("#id_label") == "Winterzauber"
    page.fill("#id_ad_group_id_search", "Kerzen Winter")
    page.click(".setup-picker-choice:has-text('Winterzauber Suche')")
    assert page.input_value("#id_ad_group_id") == "555"
    assert page.input_value("#id_customer_id") == CUSTOMER
    shot(page, "3-picked")

    page.click("input[name='_save']")
    page.wait_for_selector(".messagelist")
    shot(page, "4-saved")
    item = WatchedItem.objects.get()
    assert (item.label, item.inventory_item_id, item.ad_group_id, item.customer_id) == (
        "Winterzauber",
        808950810,
        "555",
        CUSTOMER,
    )
