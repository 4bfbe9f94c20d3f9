"""The merchant's browser when trouble waits: signed in without an address, asked for one once
(skipped here), the notice bar names the brake's held pauses, "Discard all" asks first and the
notice is gone once decided.

Runs with Debian's Chromium through Playwright like tests/e2e/test_browser_threshold.py; skipped
without it.
"""

from pathlib import Path

import pytest

from automation.models import HeldChange
from tests.e2e.test_browser_threshold import CHROMIUM, SCREENSHOTS, browser  # noqa: F401 (browser: a fixture)
from tests.support.brake import sell_out_burst

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed"),
]
PASSWORD = "kerzen-2026!"


def test_trouble_reaches_the_merchant_in_the_browser(
    browser,  # noqa: F811
    live_server,
    django_user_model,
    settings,
):
    settings.ALERT_EMAILS = []
    django_user_model.objects.create_superuser("inhaberin", "", PASSWORD)
    held = sell_out_burst()
    page = browser.new_page(locale="en-US", viewport={"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "inhaberin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")

    page.wait_for_url("**/admin/setup/email/**")
    page.click("input[name=skip]")
    page.wait_for_url(f"{live_server.url}/admin/")

    bar = page.locator('[data-testid="notices"]')
    assert f"holds {len(held)} pauses" in bar.inner_text()
    assert "Nobody receives alerts" in bar.inner_text()
    bar.locator('[data-notice="brake"] a').click()
    page.wait_for_url("**/admin/automation/heldchange/**")

    page.click('[data-testid="discard-all"]')
    page.wait_for_url("**/discard-all/")
    assert f"{len(held)} held changes will be discarded" in page.inner_text("#content")
    assert HeldChange.objects.filter(resolution="open").count() == len(held)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "discard-all-confirmation.png"), full_page=True)
    page.click('[data-testid="confirm"]')
    page.wait_for_url("**/admin/automation/heldchange/")

    assert HeldChange.objects.filter(resolution="open").count() == 0
    assert page.locator('[data-notice="brake"]').count() == 0
    assert page.locator('[data-notice="nobody_alerted"]').count() == 1
