"""The merchant acts and sees it in Chromium: a lower threshold pauses at once, a pause holds,
and every list of the catalogue fits a 1366 px screen.

The steps are written so the first-hour walk can reuse them. The expected German texts are the
catalogue's (gettext under "de"), and the ones that matter most are also spelled out, so the
test fails when a string is not translated. Screenshots go to test-results/.
"""

from datetime import datetime

from django.db import transaction
from django.utils import formats, timezone, translation
from django.utils.translation import gettext

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import AdGroup, AdGroupAction, Location, WatchedProduct
from automation.platform import notes
from automation.stock import apply, levels
from automation.ui.admin.watched import STATUS_SINCE_FORMAT
from tests.e2e.test_browser_threshold import SCREENSHOTS, browser, pytestmark  # noqa: F401 (fixture, marks)
from tests.support import winterzauber
from tests.support.shopify_standin import Variant
from tests.support.watching import variant, watch

PASSWORD = "kerzen-2026!"
FITS = """() => document.documentElement.scrollWidth <= window.innerWidth
  && [...document.querySelectorAll('#changelist-form .results')]
       .every(box => box.scrollWidth <= box.clientWidth + 1)"""
"""Nothing wider than the window, and no list scrolling inside its box: no column clipped."""


def german(msgid: str, **values) -> str:
    with translation.override("de"):
        return gettext(msgid) % values if values else gettext(msgid)


def since(action: AdGroupAction) -> str:
    with translation.override("de"):
        return formats.date_format(timezone.localtime(action.requested_at), STATUS_SINCE_FORMAT)


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
    variant(808950810, product_id=7001, variant_id=44001)
    product = watch(None, "555", label="Winterzauber", product_id=7001, customer_id="1234567890")
    # 5 candles in stock, stored by an earlier webhook; the ad group runs (threshold 0)
    levels.store_levels(
        [LevelUpdate(808950810, 24826418, 5, datetime.fromisoformat("2026-12-01T07:00:00+01:00"))]
    )
    SCREENSHOTS.mkdir(exist_ok=True)
    page = browser.new_page(locale="de-DE", viewport={"width": 1366, "height": 768})
    log_in(page, live_server)

    # The list fits a 1366 px screen: label, product, status, the two levels and stock
    page.goto(f"{live_server.url}/admin/automation/watchedproduct/")
    assert page.evaluate(FITS)

    # Lower the threshold to the stock on the product's page and save
    page.goto(f"{live_server.url}/admin/automation/watchedproduct/{product.pk}/change/")
    page.fill("#id_pause_at", "5")
    page.click("input[name='_save']")
    page.wait_for_selector(".messagelist")
    reason = german(
        "%(label)s: %(stock)s available ≤ %(level)s", label="Winterzauber", stock=5, level=5
    )
    expected = german("Ad group %(group)s paused: %(reason)s", group="555", reason=reason)
    assert expected == "Anzeigengruppe 555 pausiert: Winterzauber: Bestand 5 ≤ 5"
    assert expected in page.locator(".messagelist").inner_text()
    page.screenshot(path=str(SCREENSHOTS / "watched-saved-paused.png"), full_page=True)

    # The status column says it: paused since the save, stock 5 ≤ 5
    action = AdGroupAction.objects.get()
    assert (action.source, action.desired_status) == ("admin", "PAUSED")
    paused = german(
        "paused since %(since)s – stock %(stock)s ≤ %(pause_at)s",
        since=since(action),
        stock=5,
        pause_at=5,
    )
    assert paused.startswith("pausiert seit ")
    assert paused in status_cell(page, "Winterzauber")

    # Pause by hand with a reason: the list's action asks for it
    page.check("#result_list tbody input.action-select")
    page.select_option("select[name='action']", "pause_manually")
    page.click("button[name='index']")
    page.fill("#id_reason", "Lieferant liefert erst Freitag")
    page.click("input[name='_manual']")
    page.wait_for_selector("#result_list")
    cell = page.locator("#result_list tbody tr", has_text="Winterzauber").locator("td.field-status")
    assert german("manually paused") == "manuell pausiert"
    assert german("manually paused") in cell.inner_text()
    assert "Lieferant liefert erst Freitag" in cell.locator("span[title]").get_attribute("title")
    page.screenshot(path=str(SCREENSHOTS / "watched-manually-paused.png"), full_page=True)
    # The log keeps the reason as a code, shown in the reader's language; the text is English
    action = AdGroupAction.objects.first()
    assert action.reason == "manually paused by inhaberin: Lieferant liefert erst Freitag"
    with translation.override("de"):
        assert notes.reason_shown(action) == (
            "manuell pausiert von inhaberin: Lieferant liefert erst Freitag"
        )
    assert AdGroup.objects.get(ad_group_id="555").manual_status == "PAUSED"


def test_every_list_and_the_product_page_fit_1366_px(
    browser,  # noqa: F811
    live_server,
    django_user_model,
    queue,
):
    # Given a busy shop: products with several ad groups, long names, stock at two locations
    django_user_model.objects.create_superuser("inhaberin", "inhaberin@elbkerzen.example", PASSWORD)
    Location.objects.create(
        location_id=1, name="Lager Hamburg-Harburg", fulfills_online_orders=True
    )
    Location.objects.create(location_id=2, name="Laden Altona (Ottenser Hauptstraße)")
    for n in range(4):
        product_id = 7000 + n
        for size, item in (("klein", 10 * n + 1), ("groß mit Holzdocht", 10 * n + 2)):
            variant(item, product_id=product_id, variant_id=item + 1000, title=size)
        groups = [str(500 + 10 * n + k) for k in range(3)]
        product = watch(
            None,
            groups,
            label=f"Winterzauber Duftkerze Edition {n}",
            product_id=product_id,
            customer_id="1234567890",
        )
        for k, ad_group_id in enumerate(groups):
            AdGroup.objects.filter(ad_group_id=ad_group_id).update(
                name=f"Winterzauber Duftkerzen Suche Variante {k}",
                campaign_name="Kerzen Winter 2026 – Norddeutschland",
            )
        with transaction.atomic():
            apply.apply_levels(
                [
                    LevelUpdate(10 * n + 1, 1, n, timezone.now()),
                    LevelUpdate(10 * n + 2, 2, 2 * n, timezone.now()),
                ],
                source=AdGroupAction.Source.WEBHOOK,
            )
    page = browser.new_page(locale="de-DE", viewport={"width": 1366, "height": 768})
    log_in(page, live_server)
    SCREENSHOTS.mkdir(exist_ok=True)
    for name in ("watchedproduct", "adgroup", "location", "product", "variant", "adgroupaction"):
        page.goto(f"{live_server.url}/admin/automation/{name}/")
        page.wait_for_selector("#result_list")
        assert page.evaluate(FITS), f"{name}: wider than 1366 px"
        page.screenshot(path=str(SCREENSHOTS / f"list-{name}-1366.png"), full_page=True)
    page.goto(f"{live_server.url}/admin/automation/watchedproduct/{product.pk}/change/")
    assert page.evaluate(FITS)
    assert "klein" in page.locator(".variant-choice").inner_text()
    page.screenshot(path=str(SCREENSHOTS / "watched-product-page-1366.png"), full_page=True)


def test_ticking_one_size_saves_only_that_variant_and_names_stay_text(
    browser,  # noqa: F811
    live_server,
    django_user_model,
    httpserver,
    settings,
):
    # Given the shop, with a product whose title would be markup if put in as HTML
    shop = winterzauber.shop(httpserver, settings)
    shop.add_product(
        7099, '<img src=x onerror="window.hacked=1">', Variant(44099, 808950899, sku="EVIL-1")
    )
    django_user_model.objects.create_superuser("inhaberin", "inhaberin@elbkerzen.example", PASSWORD)
    page = browser.new_page(locale="de-DE", viewport={"width": 1366, "height": 900})
    log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/automation/watchedproduct/add/")
    # A hostile title is shown as text, never run
    page.fill("#id_product_id_search", "EVIL")
    hostile = page.wait_for_selector(".setup-picker-choice")
    assert '<img src=x onerror="window.hacked=1">' in hostile.inner_text()
    assert page.evaluate("window.hacked === undefined")
    # When the merchant picks Winterzauber and ticks only "groß"
    page.fill("#id_product_id_search", "Winterz")
    page.click(".setup-picker-choice:has-text('Winterzauber')")
    page.check(f"#id_variants input[value='{winterzauber.GROSS}']")
    assert not page.is_checked("#id_variants_all")  # a size ticked: no longer all
    page.fill("#id_ad_groups_account", "123-456-7890")
    page.fill("#id_ad_groups_ids", "555")
    page.click("input[name='_save']")
    page.wait_for_selector(".messagelist")
    # Then the subset is saved, and the product's page shows it ticked
    product = WatchedProduct.objects.get()
    assert [v.inventory_item_id for v in product.variants.all()] == [winterzauber.GROSS]
    page.goto(f"{live_server.url}/admin/automation/watchedproduct/{product.pk}/change/")
    assert page.is_checked(f"#id_variants input[value='{winterzauber.GROSS}']")
    assert not page.is_checked(f"#id_variants input[value='{winterzauber.KLEIN}']")
    # Ticking "alle Varianten" again unticks the sizes
    page.check("#id_variants_all")
    assert not page.is_checked(f"#id_variants input[value='{winterzauber.GROSS}']")
    # A product id typed by hand: the other product's sizes are gone, all variants count
    page.fill("#id_product_id", "7002")
    assert page.locator("#id_variants .variant-list li").count() == 0
    assert "nach dem Speichern" in page.locator("#id_variants .variant-hint").inner_text()
    httpserver.check_handler_errors()
