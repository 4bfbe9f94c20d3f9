"""The merchant acts and sees it in Chromium: a lower threshold pauses at once, a pause holds.

Issue 16, "Act, and see it". The steps are written so the first-hour walk can reuse them. The
expected German texts are the catalogue's (gettext under "de"), so the test holds whether or
not a string is translated yet. Screenshots go to test-results/.
"""

import re
from datetime import datetime

from django.utils import formats, timezone, translation
from django.utils.translation import gettext

from automation import inventory
from automation.admin import STATUS_SINCE_FORMAT
from automation.models import AdGroupAction, WatchedItem
from automation.sources.shopify_inventory import LevelUpdate
from tests.test_browser import SCREENSHOTS, browser, pytestmark  # noqa: F401 (fixture, marks)

PASSWORD = "kerzen-2026!"


def german(msgid: str, **values) -> str:
    with translation.override("de"):
        return gettext(msgid) % values if values else gettext(msgid)


def log_in(page, live_server) -> None:
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "inhaberin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#content")


def status_cell(page, label: str) -> str:
    row = page.locator("#result_list tbody tr", has_text=label)
    return row.locator("td.field-status").inner_text()


def test_a_lower_threshold_pauses_at_once_and_a_manual_pause_holds(
    browser,  # noqa: F811 (the fixture imported above)
    live_server,
    django_user_model,
    queue,
):
    django_user_model.objects.create_superuser("inhaberin", "inhaberin@elbkerzen.example", PASSWORD)
    item = WatchedItem.objects.create(
        inventory_item_id=808950810,
        label="Winterzauber",
        ad_group_id="555",
        customer_id="1234567890",
    )
    # 5 candles in stock, stored by an earlier webhook; the ad group runs (threshold 0)
    inventory.store_level(
        LevelUpdate(808950810, 24826418, 5, datetime.fromisoformat("2026-12-01T07:00:00+01:00"))
    )
    SCREENSHOTS.mkdir(exist_ok=True)
    page = browser.new_page(locale="de-DE", viewport={"width": 1366, "height": 768})
    log_in(page, live_server)

    # The list fits a 1366 px screen: label, product, status, threshold and stock
    page.goto(f"{live_server.url}/admin/automation/watcheditem/")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    # Lower the threshold to the stock on the item's page and save
    page.goto(f"{live_server.url}/admin/automation/watcheditem/{item.pk}/change/")
    page.fill("#id_pause_at", "5")
    page.click("input[name='_save']")
    page.wait_for_selector(".messagelist")
    expected = german(
        "Ad group paused: stock %(stock)s ≤ %(pause_at)s (%(label)s)",
        stock=5,
        pause_at=5,
        label="Winterzauber",
    )
    assert expected in page.locator(".messagelist").inner_text()
    page.screenshot(path=str(SCREENSHOTS / "watched-saved-paused.png"), full_page=True)

    # The status column says it: paused since the save, stock 5 ≤ 5
    action = AdGroupAction.objects.get()
    assert (action.source, action.desired_status) == ("admin", "PAUSED")
    with translation.override("de"):
        since = formats.date_format(timezone.localtime(action.requested_at), STATUS_SINCE_FORMAT)
    paused = german(
        "paused since %(since)s – stock %(stock)s ≤ %(pause_at)s", since=since, stock=5, pause_at=5
    )
    assert paused in status_cell(page, "Winterzauber")

    # Pause by hand with a reason: the list's action asks for it
    page.check("#result_list tbody input.action-select")
    page.select_option("select[name='action']", "pause_manually")
    page.click("button[name='index']")
    page.fill("#id_reason", "Lieferant liefert erst Freitag")
    page.click("input[name='_manual']")
    page.wait_for_selector("#result_list")
    cell = page.locator("#result_list tbody tr", has_text="Winterzauber").locator("td.field-status")
    assert german("manually paused") in cell.inner_text()
    assert "Lieferant liefert erst Freitag" in cell.locator("span[title]").get_attribute("title")
    page.screenshot(path=str(SCREENSHOTS / "watched-manually-paused.png"), full_page=True)
    assert re.search(r"manually paused by inhaberin", AdGroupAction.objects.first().reason)
    item.refresh_from_db()
    assert item.manual_status == "PAUSED"
