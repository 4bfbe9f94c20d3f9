"""The merchant's browser: log in, change a threshold, open the dashboard, keep a screenshot.

Runs with Debian's Chromium (/usr/bin/chromium) through Playwright; skipped where it is not
installed (`.ci/run` installs it).
"""

import shutil
from pathlib import Path

import pytest
from django.db import connections

from tests.support.watching import variant, watch

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed"),
    pytest.mark.servers,
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-results"


@pytest.fixture
def browser(monkeypatch):
    sync_api = pytest.importorskip("playwright.sync_api")
    # The live server's ORM calls; undone after the test, or later `check --deploy` runs in
    # subprocesses inherit it and fail on async.E001.
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
        # ORM calls made while Playwright's sync API runs use a connection of their own context;
        # close it here, or it outlives the test and blocks the test database's teardown.
        connections.close_all()


def test_merchant_changes_a_threshold_and_opens_the_dashboard(
    browser, live_server, django_user_model, queue
):
    django_user_model.objects.create_superuser(
        "inhaberin", "inhaberin@elbkerzen.example", "kerzen-2026!"
    )
    variant(808950810, product_id=7001, variant_id=44001)
    product = watch(None, "555", label="Winterzauber", product_id=7001, customer_id="1234567890")
    page = browser.new_page(locale="de-DE", viewport={"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "inhaberin")
    page.fill("#id_password", "kerzen-2026!")
    page.click("input[type=submit]")
    page.wait_for_selector("#content")

    page.goto(f"{live_server.url}/admin/automation/watchedproduct/")
    page.fill("input[name='form-0-pause_at']", "3")
    page.click("input[name='_save']")
    page.wait_for_selector(".messagelist")
    product.refresh_from_db()
    assert product.pause_at == 3

    page.goto(f"{live_server.url}/admin/")
    page.click("a[href$='/admin/dashboard/']")
    page.wait_for_selector("svg")
    # no sell-out yet, so no product is named: the page shows its three sections, charts drawn
    sections = page.locator("section.dash-section")
    assert [sections.nth(n).get_attribute("id") for n in range(sections.count())] == [
        "reaction",
        "reminders",
        "health",
    ]
    assert page.locator("section.dash-section svg.chart").count() == 4  # every chart, even empty
    SCREENSHOTS.mkdir(exist_ok=True)
    shot = SCREENSHOTS / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
