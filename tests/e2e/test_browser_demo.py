"""The dashboard over the demo history in Chromium: German, and no chart label over another.

The unit tests (tests/ui/test_chart_labels.py) estimate text widths; here the browser measures
them: every <text> of every chart, as the rotated rectangle the browser lays it out in
(getBBox and getCTM), must touch no other.
"""

import pytest
from django.contrib.auth.models import Permission

from automation.ui.dashboard import demo
from automation.ui.dashboard.demo_history import create_demo
from tests.e2e.test_browser_threshold import CHROMIUM, SCREENSHOTS, browser  # noqa: F401 (fixture)
from tests.support import people
from tests.ui.test_chart_labels import _overlap

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not __import__("pathlib").Path(CHROMIUM).exists(), reason="no Chromium"),
    pytest.mark.servers,
]

# Each chart's text elements as quadrilaterals in the SVG's user units, as laid out.
TEXT_BOXES = """
() => [...document.querySelectorAll('svg.chart')].map(svg => {
  const root = svg.getScreenCTM().inverse();
  return [...svg.querySelectorAll('text')].map(t => {
    const b = t.getBBox();
    const m = root.multiply(t.getScreenCTM());
    const corner = (x, y) => {
      const p = new DOMPoint(x, y).matrixTransform(m);
      return [p.x, p.y];
    };
    return {text: t.textContent, corners: [corner(b.x, b.y), corner(b.x + b.width, b.y),
      corner(b.x + b.width, b.y + b.height), corner(b.x, b.y + b.height)]};
  });
})
"""


@pytest.mark.parametrize("width", [1366, 800])
def test_the_demo_dashboard_in_chromium_has_no_overlapping_labels(
    browser,  # noqa: F811
    live_server,
    django_user_model,
    redis,
    width,
):
    create_demo()
    user = django_user_model.objects.create_user(
        "inhaberin", password="kerzen-2026!", is_staff=True
    )
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="automation",
            codename__in=[*people.DASHBOARD_READER, "delete_watchedproduct"],
        )
    )
    page = browser.new_page(locale="de-DE", viewport={"width": width, "height": 900})
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "inhaberin")
    page.fill("#id_password", "kerzen-2026!")
    page.click("input[type=submit]")
    page.wait_for_selector("#content")
    page.goto(f"{live_server.url}/admin/dashboard/")
    page.wait_for_selector("svg.chart")
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"dashboard-demo-{width}.png"), full_page=True)

    charts = page.evaluate(TEXT_BOXES)
    assert len(charts) == 4
    for boxes in charts:
        assert boxes
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert not _overlap(a["corners"], b["corners"]), (a["text"], b["text"])
    assert page.locator("#demo button").count() == 1
    page.click("#demo button")
    page.wait_for_selector(".messagelist")
    assert not demo.demo_present()
