"""The merchant's lists fit a 1366 px screen: long results and reasons wrap inside their column
instead of running out of it or widening the table past the screen.

Runs with Debian's Chromium through Playwright, as tests/e2e/test_browser_threshold.py; skipped
where it is not installed.
"""

import shutil
from pathlib import Path

import pytest
from django.utils import timezone

from automation.models import AdGroupAction, CheckoutState, Delivery, ReminderDecision
from tests.e2e.test_browser_threshold import SCREENSHOTS, browser  # noqa: F401 (the fixture)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed"),
]
SCREEN = {"width": 1366, "height": 800}
LONG_REASON = (
    "Bestand 0 ≤ 2 (Pausieren bei) für Winterzauber Duftkerze Zimt & Orange, gezählt an den "
    "Standorten Lager Hamburg-Altona, Laden Dresden-Neustadt und Pop-up-Store Leipzig "
    "gid://shopify/InventoryItem/49148385251645?location=gid://shopify/Location/8089508109"
)
LONG_RESULT = (
    "total available 0 at gid://shopify/Location/80895081098,gid://shopify/Location/80895081099;"
    "paused ad groups 1234567890/155555555555,1234567890/155555555556,1234567890/155555555557"
)

# Every cell of the list whose content is wider than the cell (clipped or spilling), and the
# table's width beyond its scroll box (the list scrolls sideways).
OVERFLOW = """() => {
  const cells = [...document.querySelectorAll('#result_list td, #result_list th')];
  const clipped = cells.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.className);
  const box = document.querySelector('#changelist .results');
  return {clipped, sideways: box.scrollWidth - box.clientWidth,
          page: document.documentElement.scrollWidth - window.innerWidth};
}"""


def _records() -> None:
    now = timezone.now()
    delivery = Delivery.objects.create(
        source="shopify",
        topic="inventory_levels/update",
        shop_domain="elbkerzen-dresden-und-hamburg.myshopify.com",
        webhook_id="wh-long",
        status=Delivery.Status.DONE,
        result=LONG_RESULT,
        processed_at=now,
    )
    for n in range(3):
        AdGroupAction.objects.create(
            customer_id="1234567890",
            ad_group_id=f"15555555555{n}",
            desired_status=AdGroupAction.Status.PAUSED,
            reason=LONG_REASON,
            source="webhook",
            delivery=delivery,
            result=AdGroupAction.Result.APPLIED,
            requested_at=now,
            applied_at=now,
        )
    checkout = CheckoutState.objects.create(source="shopify", token="t" * 40, updated_at=now)
    ReminderDecision.objects.create(
        checkout=checkout,
        checkout_version=now,
        email="kundin.mit.langem.namen@elbkerzen-beispiel.example",
        arm="discount",
        reason=LONG_REASON,
    )


@pytest.mark.parametrize("model", ["delivery", "adgroupaction", "reminderdecision"])
def test_no_column_is_clipped_at_1366_pixels(browser, live_server, django_user_model, model):  # noqa: F811
    django_user_model.objects.create_superuser("inhaberin", "i@elbkerzen.example", "kerzen-2026!")
    _records()
    page = browser.new_page(locale="de-DE", viewport=SCREEN)
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "inhaberin")
    page.fill("#id_password", "kerzen-2026!")
    page.click("input[type=submit]")
    page.wait_for_selector("#content")

    page.goto(f"{live_server.url}/admin/automation/{model}/")
    page.wait_for_selector("#result_list")
    found = page.evaluate(OVERFLOW)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"list-{model}-1366.png"), full_page=True)
    assert found["clipped"] == []
    assert found["sideways"] <= 0
    assert found["page"] <= 0
