"""The merchant's first hour in the browser: log in, open the set-up page, test the shop's
connection, add a watched product by picking the product (both sizes shown with their stock)
and two ad groups by name, save; stock arrives by signed webhooks run by a worker, the status
column says per ad group what it does and which variant decided, raising "Pausieren bei" pauses
both at once, a manual pause holds with its reason, and the dashboard opens.

Chromium (Debian's /usr/bin/chromium) through Playwright, as tests/e2e/test_browser_threshold.py;
the shop and the Ads account are the local stand-ins (tests/support/winterzauber.py). Screenshots go
to test-results/. Skipped where Chromium is not installed.
"""

import json

import pytest
from django.test import Client

from automation.models import AdGroup, AdGroupAction, WatchedProduct
from tests.e2e.test_browser_threshold import SCREENSHOTS, browser, pytestmark  # noqa: F401 (fixture, marks)
from tests.e2e.test_browser_watched import FITS, german, since, status_cell
from tests.support import winterzauber
from tests.support.shopify_standin import SHOP_NAME
from tests.support.signing import shopify_headers
from tests.support.winterzauber import CUSTOMER, GROSS, KLEIN, PRODUCT, STORE

# The browser, its marks and the screenshot folder are tests/e2e/test_browser_threshold.py's.
SECRET = "shpss_first_hour"


@pytest.fixture
def shop(httpserver, settings):
    """The shop's Admin API (static token) with Winterzauber in two sizes among its products."""
    settings.SHOPIFY_WEBHOOK_SECRETS = [SECRET]
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "api"
    settings.PUBLIC_BASE_URL = "https://automation.elbkerzen.example"
    yield from winterzauber.served_shop(httpserver, settings)


account = pytest.fixture(name="account")(winterzauber.ads_account)


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"first-hour-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


def stock_arrives(item: int, available: int, at: str) -> None:
    """A signed inventory_levels/update, as Shopify sends it."""
    body = json.dumps(
        {"inventory_item_id": item, "location_id": STORE, "available": available, "updated_at": at}
    ).encode()
    answer = Client().post(
        "/webhooks/shopify/",
        data=body,
        content_type="application/json",
        **shopify_headers(body, "inventory_levels/update", secret=SECRET),
    )
    assert answer.status_code == 200


def pick_ad_group(page, search: str, name: str) -> None:
    page.fill("#id_ad_groups_search", search)
    page.click(f".setup-picker-choice:has-text('{name}')")
    page.wait_for_selector(f".ad-group-list li:has-text('{name}') input:checked")


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

    # Add a watched product: search by title; the result shows both sizes with their stock.
    page.goto(f"{live_server.url}/admin/automation/watchedproduct/add/")
    page.fill("#id_product_id_search", "Winterz")
    choice = page.wait_for_selector(".setup-picker-choice:has-text('Winterzauber')")
    assert "klein – 0 auf Lager" in choice.inner_text()
    assert "groß – 12 auf Lager" in choice.inner_text()
    shot(page, "2-search")
    choice.click()
    assert page.input_value("#id_product_id") == str(PRODUCT)
    assert page.input_value("#id_label") == "Winterzauber"
    # Its variants become checkboxes, "alle Varianten" ticked
    assert page.is_checked("#id_variants_all")
    variants = page.locator("#id_variants .variant-list li")
    assert [text.strip() for text in variants.all_inner_texts()] == [
        "klein – 0 auf Lager SKU WZ-S",
        "groß – 12 auf Lager SKU WZ-L",
    ]
    # Two ad groups by name: one by its campaign, one by its own name.
    pick_ad_group(page, "Kerzen Winter", "Winterzauber Suche")
    pick_ad_group(page, "Display", "Winterzauber Display")
    shot(page, "3-picked")

    page.click("input[name='_save']")
    page.wait_for_selector(".messagelist")
    shot(page, "4-saved")
    product = WatchedProduct.objects.get()
    assert (product.label, product.product_id, list(product.variants.all())) == (
        "Winterzauber",
        PRODUCT,
        [],
    )
    assert sorted(
        product.ad_groups.values_list("customer_id", "ad_group_id", "name", "campaign_name")
    ) == [
        (CUSTOMER, "555", "Winterzauber Suche", "Kerzen Winter"),
        (CUSTOMER, "556", "Winterzauber Display", "Kerzen Winter"),
    ]

    # Stock arrives from Shopify: "groß" 3, "klein" 0 (signed webhooks, run by a worker).
    stock_arrives(GROSS, 3, "2026-12-01T07:45:00+01:00")
    stock_arrives(KLEIN, 0, "2026-12-01T07:46:00+01:00")
    run_worker()
    page.goto(f"{live_server.url}/admin/automation/watchedproduct/")
    cell = status_cell(page, "Winterzauber")
    running = german("running – stock %(stock)s", stock=3)
    assert running == "läuft – Bestand 3"
    assert f"Winterzauber Suche: {running}" in cell
    assert f"Winterzauber Display: {running}" in cell
    assert "Winterzauber: Bestand 3 > 0 (groß: 3)" in cell  # which variant decided
    assert page.evaluate(FITS)
    shot(page, "5-running")

    # Raise "Pausieren bei" to 5 in the list and save: both ad groups pause at once.
    page.fill("#result_list tbody tr input[name$='-pause_at']", "5")
    page.click("input[name='_save']")
    page.wait_for_selector(".messagelist")
    said = page.locator(".messagelist").inner_text()
    reason = "Winterzauber: Bestand 3 ≤ 5 (groß: 3)"
    assert f"Anzeigengruppe Winterzauber Suche pausiert: {reason}" in said
    assert f"Anzeigengruppe Winterzauber Display pausiert: {reason}" in said
    paused_actions = AdGroupAction.objects.filter(source="admin", desired_status="PAUSED")
    assert sorted(paused_actions.values_list("ad_group_id", "result")) == [
        ("555", "applied"),
        ("556", "applied"),
    ]
    assert sorted(account.statuses.items()) == [("555", "PAUSED"), ("556", "PAUSED")]
    cell = status_cell(page, "Winterzauber")
    for action in paused_actions:
        name = AdGroup.objects.get(ad_group_id=action.ad_group_id).name
        paused = german(
            "paused since %(since)s – stock %(stock)s ≤ %(pause_at)s",
            since=since(action),
            stock=3,
            pause_at=5,
        )
        assert f"{name}: {paused}" in cell
    shot(page, "6-paused")

    # Pause by hand with a reason: it holds for both ad groups, and the list says so.
    page.check("#result_list tbody input.action-select")
    page.select_option("select[name='action']", "pause_manually")
    page.click("button[name='index']")
    assert "Winterzauber Suche" in page.locator("#manual-form").inner_text()
    page.fill("#id_reason", "Fotoshooting am Freitag")
    page.click("input[name='_manual']")
    page.wait_for_selector("#result_list")
    cell = page.locator("#result_list tbody tr", has_text="Winterzauber").locator("td.field-status")
    assert cell.inner_text().count(german("manually paused")) == 2
    hovers = cell.locator("span[title]")
    assert all(
        "Fotoshooting am Freitag (inhaberin, " in hovers.nth(i).get_attribute("title")
        for i in range(hovers.count())
    )
    assert set(AdGroup.objects.values_list("manual_status", flat=True)) == {"PAUSED"}
    shot(page, "7-manual")

    # Open the dashboard ("Website anzeigen").
    page.click("#user-tools a[href='/admin/dashboard/']")
    page.wait_for_selector("h1")
    assert "/admin/dashboard/" in page.url
    shot(page, "8-dashboard")
