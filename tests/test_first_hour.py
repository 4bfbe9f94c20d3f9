"""The merchant's first hour in the browser: log in, open the set-up page, test the shop's
connection, add a watched item by picking the product and the ad group by name, save; stock
arrives by webhook, a lower threshold pauses the ad group at once (the status column says so),
a manual pause holds with its reason, and the dashboard opens.

Chromium (Debian's /usr/bin/chromium) through Playwright, as tests/test_browser.py; the shop and
the Ads account are the local stand-ins. Screenshots go to test-results/. Skipped where Chromium
is not installed.
"""

import json

import pytest
from django.test import Client
from django.utils import formats, timezone, translation

from automation.admin import STATUS_SINCE_FORMAT
from automation.models import AdGroupAction, WatchedItem
from tests.shopify_standin import SHOP_NAME, TOKEN, ShopifyStandIn
from tests.signing import shopify_headers
from tests.test_browser import SCREENSHOTS, browser, pytestmark  # noqa: F401 (fixture, marks)
from tests.test_browser_watched import german, status_cell

# The browser, its marks and the screenshot folder are tests/test_browser.py's.
CUSTOMER = "1234567890"


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


def test_the_first_hour(
    browser,  # noqa: F811 (the fixture imported above)
    live_server,
    django_user_model,
    shop,
    account,
    queue,
    run_worker,
):
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

    # Stock arrives from Shopify: 3 candles (a signed inventory_levels/update, run by a worker).
    body = json.dumps(
        {
            "inventory_item_id": 808950810,
            "location_id": 24826418,
            "available": 3,
            "updated_at": "2026-12-01T07:46:00+01:00",
        }
    ).encode()
    answer = Client().post(
        "/webhooks/shopify/",
        data=body,
        content_type="application/json",
        **shopify_headers(body, "inventory_levels/update", secret="shpss_first_hour"),
    )
    assert answer.status_code == 200
    run_worker()
    page.goto(f"{live_server.url}/admin/automation/watcheditem/")
    assert german("running – stock %(stock)s", stock=3) in status_cell(page, "Winterzauber")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "5-running")

    # Raise "Pausieren bei" to 5 in the list and save: the ad group pauses at once.
    page.fill("#result_list tbody tr input[name$='-pause_at']", "5")
    page.click("input[name='_save']")
    page.wait_for_selector(".messagelist")
    message = german(
        "Ad group paused: stock %(stock)s ≤ %(pause_at)s (%(label)s)",
        stock=3,
        pause_at=5,
        label="Winterzauber",
    )
    assert message in page.locator(".messagelist").inner_text()
    action = AdGroupAction.objects.order_by("-pk").first()
    assert (action.source, action.desired_status) == ("admin", "PAUSED")
    with translation.override("de"):
        since = formats.date_format(timezone.localtime(action.requested_at), STATUS_SINCE_FORMAT)
    paused = german(
        "paused since %(since)s – stock %(stock)s ≤ %(pause_at)s", since=since, stock=3, pause_at=5
    )
    assert paused in status_cell(page, "Winterzauber")
    shot(page, "6-paused")

    # Pause by hand with a reason: it holds, and the list says so.
    page.check("#result_list tbody input.action-select")
    page.select_option("select[name='action']", "pause_manually")
    page.click("button[name='index']")
    page.fill("#id_reason", "Fotoshooting am Freitag")
    page.click("input[name='_manual']")
    page.wait_for_selector("#result_list")
    cell = page.locator("#result_list tbody tr", has_text="Winterzauber").locator("td.field-status")
    assert german("manually paused") in cell.inner_text()
    assert "Fotoshooting am Freitag" in cell.locator("span[title]").get_attribute("title")
    shot(page, "7-manual")

    # Open the dashboard ("Website anzeigen").
    page.click("#user-tools a[href='/admin/dashboard/']")
    page.wait_for_selector("h1")
    assert "/admin/dashboard/" in page.url
    shot(page, "8-dashboard")
