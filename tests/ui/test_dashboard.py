"""The staff dashboard: reaction to sell-outs, reminder values and health, as inline SVG."""

import json
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from automation.models import (
    AdGroupAction,
    Delivery,
    ReconcileRun,
    ReminderDecision,
    ReminderSettings,
)
from automation.reminders.rules import Basket, Probabilities, choose_reminder
from automation.ui.dashboard import charts, selectors
from automation.ui.dashboard import format as fmt
from tests.support import people
from tests.support.watching import watch

# Until elbkerzen/urls.py routes the dashboard, the tests use a URLconf that adds it.
pytestmark = [
    pytest.mark.django_db,
]

BERLIN = ZoneInfo("Europe/Berlin")
ITEM = 808950810
CUSTOMER = "1234567890"
AD_GROUP = "555"
PAUSED, ENABLED = AdGroupAction.Status.PAUSED, AdGroupAction.Status.ENABLED


def local(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=BERLIN)


@pytest.fixture
def winterzauber():
    return watch(ITEM, AD_GROUP, label="Winterzauber", customer_id=CUSTOMER)


@pytest.fixture
def staff_client(client):
    client.force_login(people.staff(*people.DASHBOARD_READER))
    return client


def level_delivery(*, triggered_at=None, updated_at="2026-11-26T16:10:00+01:00", body=True):
    payload = {"inventory_item_id": ITEM, "location_id": 1, "available": 0}
    payload["updated_at"] = updated_at
    return Delivery.objects.create(
        source="shopify",
        topic="inventory_levels/update",
        webhook_id=f"wh-{Delivery.objects.count()}",
        triggered_at=triggered_at,
        body=json.dumps(payload).encode() if body else None,
        status=Delivery.Status.DONE,
    )


def action(status, at, *, delivery=None, source="webhook", result="applied", applied_at=None):
    return AdGroupAction.objects.create(
        customer_id=CUSTOMER,
        ad_group_id=AD_GROUP,
        desired_status=status,
        reason="test",
        source=source,
        delivery=delivery,
        result=result,
        requested_at=at,
        applied_at=applied_at or (at if result != "failed" else None),
    )


# --- access --------------------------------------------------------------------------------


def test_staff_sees_the_three_sections_with_inline_svg(staff_client):
    response = staff_client.get(reverse("dashboard"))

    assert response.status_code == 200
    html = response.content.decode()
    for section in ('id="reaction"', 'id="reminders"', 'id="health"'):
        assert section in html
    assert html.count("<svg ") >= 4
    assert '<svg class="chart"' in html and "<title>" in html and 'role="img"' in html
    assert "<title>Dashboard |" in html
    assert 'class="breadcrumbs"' in html


def test_a_non_staff_user_is_sent_to_the_login(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("buyer", password="pw"))

    response = client.get(reverse("dashboard"))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_an_anonymous_visitor_is_sent_to_the_login(client):
    response = client.get(reverse("dashboard"))

    assert response.status_code == 302
    assert response["Location"] == f"{reverse('admin:login')}?next=/admin/dashboard/"


def test_the_admin_index_links_to_the_dashboard(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("boss", password="pw"))

    html = client.get(reverse("admin:index")).content.decode()

    assert '<a class="button" href="/admin/dashboard/">Dashboard</a>' in html
    assert 'id="content-main"' in html  # the original index is still there


# --- reaction to sell-outs -----------------------------------------------------------------


def test_the_reaction_is_the_time_from_triggered_at_to_the_pause_and_costs_its_clicks(
    winterzauber,
):
    delivery = level_delivery(triggered_at=local("2026-11-26T16:10:00"))
    action(
        PAUSED,
        local("2026-11-26T16:10:01"),
        delivery=delivery,
        applied_at=local("2026-11-26T16:10:02"),
    )

    result = selectors.sell_outs(now=local("2026-11-27T09:00:00"))

    [sell_out] = result.measured
    assert sell_out.label == "Winterzauber"
    assert sell_out.reaction == timedelta(seconds=2)
    assert sell_out.cost == Decimal(2) / Decimal(86400) * Decimal(40) * Decimal("0.60")
    assert sell_out.cost == pytest.approx(Decimal("0.000556"), abs=Decimal("0.000001"))
    assert sell_out.reaction_text == "2 s"
    assert sell_out.cost_text == "< 0.01 €"


def test_the_ad_group_s_own_clicks_and_cost_per_click_price_the_reaction(winterzauber):
    # the rates are the ad group's (they were the watched item's)
    winterzauber.ad_groups.update(clicks_per_day=Decimal("120"), cost_per_click=Decimal("1.50"))
    delivery = level_delivery(triggered_at=local("2026-11-26T10:00:00"))
    action(PAUSED, local("2026-11-26T12:00:00"), delivery=delivery)  # two hours late

    [sell_out] = selectors.sell_outs(now=local("2026-11-27T09:00:00")).measured

    assert sell_out.clicks == Decimal(10)  # 120 clicks a day for 2 h
    assert sell_out.cost == Decimal("15.00")


def test_without_triggered_at_shopify_s_updated_at_from_the_body_starts_the_clock(winterzauber):
    delivery = level_delivery(triggered_at=None, updated_at="2026-11-26T16:10:00+01:00")
    action(PAUSED, local("2026-11-26T16:10:05"), delivery=delivery)
    dropped = level_delivery(triggered_at=None, body=False)
    action(ENABLED, local("2026-11-26T18:00:00"))
    action(PAUSED, local("2026-11-26T19:00:00"), delivery=dropped)

    result = selectors.sell_outs(now=local("2026-11-27T09:00:00"))

    assert [s.reaction for s in result.measured] == [timedelta(seconds=5)]
    assert result.unmeasured == 1  # its body was dropped after the retention period


def test_only_the_first_pause_after_an_enabled_period_is_a_sell_out(winterzauber):
    def sold_out(at: str, **kwargs) -> AdGroupAction:
        delivery = level_delivery(triggered_at=local(at))
        return action(PAUSED, local(at) + timedelta(seconds=3), delivery=delivery, **kwargs)

    action(ENABLED, local("2026-11-01T09:00:00"))  # before the window: the group ran
    first = sold_out("2026-11-20T10:00:00")
    sold_out("2026-11-20T10:05:00")  # another location reports: already paused
    action(ENABLED, local("2026-11-21T08:00:00"), source="webhook")  # restocked
    sold_out("2026-11-22T10:00:00", result="failed")  # the Ads call failed: nothing changed
    retried = sold_out("2026-11-22T10:00:30")  # the retry paused it
    action(ENABLED, local("2026-11-23T08:00:00"), source="promotion")
    action(PAUSED, local("2026-11-23T20:00:00"), source="promotion")  # promotion end, not stock
    sold_out("2026-11-24T10:00:00")  # still paused by the promotion: no new sell-out

    result = selectors.sell_outs(now=local("2026-11-27T09:00:00"))

    assert [s.paused_at for s in result.measured] == [retried.applied_at, first.applied_at]


def test_a_pause_in_the_window_after_a_pause_before_it_is_no_new_sell_out(winterzauber):
    action(PAUSED, local("2026-10-01T09:00:00"))
    delivery = level_delivery(triggered_at=local("2026-11-20T10:00:00"))
    action(PAUSED, local("2026-11-20T10:00:02"), delivery=delivery)

    assert selectors.sell_outs(now=local("2026-11-27T09:00:00")).measured == []


def test_the_comparison_shows_the_seed_s_numbers_next_to_the_measured_median(winterzauber):
    for day, seconds in ((24, 2), (25, 4), (26, 60)):
        sold_out = local(f"2026-11-{day}T16:10:00")
        action(ENABLED, sold_out - timedelta(hours=8))
        action(
            PAUSED,
            sold_out + timedelta(seconds=seconds),
            delivery=level_delivery(triggered_at=sold_out),
        )

    result = selectors.sell_outs(now=local("2026-11-27T09:00:00"))
    by_hand, polling, measured = selectors.reaction_comparison(result.measured)

    assert by_hand.cost == pytest.approx(Decimal("43.00"))
    assert by_hand.summary_text == "43 h → 71.67 clicks ≈ 43.00 €"
    assert polling.summary_text == "7.5 min → 0.21 clicks ≈ 0.12 €"
    assert measured.measured and measured.reaction == timedelta(seconds=4)
    assert measured.label == "Winterzauber (measured, median of 3)"
    summary = selectors.reaction_summary(result)
    assert summary.count == 3
    assert summary.by_hand_cost == pytest.approx(Decimal("129.00"))


def test_the_page_shows_a_measured_sell_out(staff_client, winterzauber):
    triggered = timezone.now() - timedelta(hours=1)
    delivery = level_delivery(triggered_at=triggered)
    action(PAUSED, triggered + timedelta(seconds=2), delivery=delivery)

    html = staff_client.get(reverse("dashboard")).content.decode()

    assert "Winterzauber (measured, median of 1)" in html
    assert "2 s → 0.0009 clicks, less than a cent" in html
    assert "43 h → 71.67 clicks ≈ 43.00 €" in html


# --- reminders -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rate", "plain", "discount"),
    [(Decimal("0.55"), Decimal("0.88"), Decimal("1.10")), (Decimal("0.25"), "0.40", "0.26")],
)
def test_expected_values_per_arm_match_the_decision_rules(rate, plain, discount):
    values = selectors.expected_values(ReminderSettings.load())

    [basket] = [b for b in values.baskets if b.margin_rate == rate]
    assert basket.total == Decimal(40)
    assert basket.delta_plain == Decimal(plain)
    assert basket.delta_discount == Decimal(discount)
    choice = choose_reminder(
        Basket(Decimal(40)), [], Probabilities(), default_rate=rate, discount_available=True
    )
    assert (basket.delta_plain, basket.delta_discount) == (
        choice.delta_plain,
        choice.delta_discount,
    )


def test_without_a_discount_code_the_discount_bar_is_an_illustration(staff_client):
    values = selectors.expected_values(ReminderSettings.load())
    assert not values.discount_available
    assert [b.arm for b in values.baskets] == ["plain", "plain"]

    html = staff_client.get(reverse("dashboard")).content.decode()

    for amount in ("0.88 €", "1.10 €", "0.40 €", "0.26 €"):
        assert amount in html
    assert "With discount (not sent: no code)" in html
    assert "No discount code" in html


def test_with_a_discount_code_own_candles_get_the_discount():
    config = ReminderSettings.load()
    config.discount_code = "DANKE10"
    config.save()

    values = selectors.expected_values(config)

    assert values.discount_available
    assert [b.arm for b in values.baskets] == ["discount", "plain"]


def test_decisions_are_counted_by_arm(db):
    from automation.models import CheckoutState

    now = timezone.now()
    for n, arm in enumerate(["none", "plain", "plain", "discount"]):
        checkout = CheckoutState.objects.create(source="shopify", token=f"t{n}", updated_at=now)
        ReminderDecision.objects.create(
            checkout=checkout, checkout_version=now, arm=arm, reason="test"
        )

    assert selectors.decisions_by_arm() == {"none": 1, "holdout": 0, "plain": 2, "discount": 1}


# --- health --------------------------------------------------------------------------------


def test_deliveries_are_grouped_by_local_day_and_status(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    now = local("2026-11-26T12:00:00")

    def received(status: str, at: datetime) -> None:
        delivery = level_delivery()
        Delivery.objects.filter(pk=delivery.pk).update(status=status, received_at=at)

    received("done", datetime(2026, 11, 25, 23, 30, tzinfo=UTC))  # 00:30 on the 26th in Berlin
    received("done", datetime(2026, 11, 26, 10, 0, tzinfo=UTC))
    received("dead", datetime(2026, 11, 25, 22, 59, 59, tzinfo=UTC))  # 23:59:59 on the 25th
    received("done", datetime(2026, 11, 12, 22, 59, tzinfo=UTC))  # 12 Nov in Berlin: too old

    series = selectors.deliveries_by_day(now=now)

    assert series.days[0] == date(2026, 11, 13) and series.days[-1] == date(2026, 11, 26)
    assert series.counts["done"][-1] == 2
    assert series.counts["dead"][-2] == 1
    assert series.totals == {"done": 2, "dead": 1}


def test_dead_letters_are_counted_and_linked_to_the_replay_list(staff_client):
    level_delivery()
    Delivery.objects.update(status=Delivery.Status.DEAD)

    html = staff_client.get(reverse("dashboard")).content.decode()

    assert selectors.dead_letters() == 1
    assert 'href="/admin/automation/delivery/?status__exact=dead"' in html
    assert "Review and replay them" in html


def test_the_last_reconciliation_and_its_corrections_are_shown(staff_client, settings):
    settings.SHOPIFY_ADMIN_TOKEN = "shpat_test"
    ReconcileRun.objects.create(
        local_date=date(2026, 11, 25), started_at=local("2026-11-25T03:00:00"), status="ok"
    )
    ReconcileRun.objects.create(
        local_date=date(2026, 11, 26),
        started_at=local("2026-11-26T03:00:00"),
        finished_at=local("2026-11-26T03:00:04"),
        status=ReconcileRun.Status.CORRECTED,
        items_checked=3,
        corrections=[
            {
                "item": ITEM,
                "label": "Winterzauber",
                "ad_group": AD_GROUP,
                "was": "ENABLED",
                "now": "PAUSED",
                "total_available": 0,
            }
        ],
        subscriptions_created=["orders/create"],
    )

    html = staff_client.get(reverse("dashboard")).content.decode()

    assert "ok, with corrections" in html
    assert "Nov. 26, 2026" in html  # the language's DATE_FORMAT ("26. November 2026" in German)
    assert "Winterzauber: ad group 555 ENABLED &rarr; PAUSED (0 available)" in html
    assert "re-created" in html and "orders/create" in html


def test_subscriptions_say_not_configured_without_an_admin_token(settings):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = ""  # nor client credentials of a Dev Dashboard app

    health = selectors.webhook_subscriptions(None)

    assert health.state == "not_configured"
    assert "SHOPIFY_ADMIN_TOKEN" in health.message


def test_subscriptions_are_ok_or_missing_from_the_last_run(settings):
    settings.SHOPIFY_ADMIN_TOKEN = "shpat_test"
    run = ReconcileRun(local_date=date(2026, 11, 26), started_at=timezone.now(), status="ok")
    assert selectors.webhook_subscriptions(run).state == "ok"

    run.status = ReconcileRun.Status.ERRORS
    run.errors = ["webhook subscriptions: 401 unauthorized"]
    assert selectors.webhook_subscriptions(run).state == "missing"


# --- charts and the page as a whole -----------------------------------------------------------


def test_charts_escape_their_labels():
    hostile = '<script>alert("x")</script>'

    svgs = [
        charts.comparison_bars([charts.Bar(hostile, 1.0, hostile)], title=hostile),
        charts.grouped_bar_chart([hostile], [charts.Series(hostile, [1.0])], title=hostile),
        charts.stacked_bar_chart([hostile], [charts.Series(hostile, [2])], title=hostile),
    ]

    for svg in svgs:
        assert "<script" not in svg
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in svg
        assert svg.startswith('<svg class="chart"') and "viewBox=" in svg


def test_charts_refuse_colours_that_are_not_hex_codes():
    with pytest.raises(ValueError, match="hex"):
        charts.comparison_bars([charts.Bar("a", 1, "1", color='red" onload="x')], title="t")


def test_a_hostile_product_label_is_escaped_on_the_page(staff_client, winterzauber):
    winterzauber.label = "<script>alert(1)</script>"
    winterzauber.save()
    triggered = timezone.now() - timedelta(hours=1)
    action(
        PAUSED, triggered + timedelta(seconds=2), delivery=level_delivery(triggered_at=triggered)
    )

    html = staff_client.get(reverse("dashboard")).content.decode()

    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_page_loads_nothing_from_other_hosts(staff_client, winterzauber):
    triggered = timezone.now() - timedelta(hours=1)
    action(
        PAUSED, triggered + timedelta(seconds=2), delivery=level_delivery(triggered_at=triggered)
    )

    html = staff_client.get(reverse("dashboard")).content.decode()

    # xmlns values (the admin's own icon sprite) name a namespace; nothing is fetched from them.
    without_namespaces = re.sub(r'xmlns(?::\w+)?="[^"]*"', "", html)
    absolute = re.findall(r"https?://[^\s\"'<>)]+", without_namespaces)
    assert [url for url in absolute if not url.startswith("http://testserver/")] == []
    references = re.findall(r"""\b(?:src|href|action|xlink:href)\s*=\s*["']([^"']*)""", html)
    assert references, "expected the admin's own links and assets"
    assert [ref for ref in references if not ref.startswith(("/", "#", "?"))] == []
    assert "@import" not in html and "url(" not in html


def test_numbers_use_the_merchants_decimal_comma_in_german():
    with translation.override("de"):
        assert fmt.format_euros(Decimal("0.885")) == "0,88 €"
        assert fmt.format_euros(Decimal("43")) == "43,00 €"
        assert fmt.format_euros(Decimal("0.004")) == "< 0,01 €"
        assert fmt.format_percent(Decimal("0.055")) == "5,5 %"
        assert fmt.format_clicks(Decimal("1.5")) == "1,50"
        assert fmt.format_clicks(Decimal("0.00031")) == "0,0003"
        assert fmt.format_duration(timedelta(seconds=450)) == "7,5 min"
    with translation.override("en"):
        assert fmt.format_euros(Decimal("0.885")) == "0.88 €"
        assert fmt.format_percent(Decimal("0.04")) == "4 %"
