"""The notice bar: what needs the merchant now, on every admin page and the dashboard, each
with its link; each kind appears with its trouble and disappears once it is resolved."""

from datetime import date, timedelta

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone, translation

from automation.models import (
    AdGroup,
    AdGroupAction,
    CheckoutState,
    Delivery,
    ReconcileRun,
    ReminderDecision,
    WatchedProduct,
)
from automation.reminders import checkouts
from automation.stock import held_changes
from automation.ui import notices
from tests.support.brake import sell_out_burst
from tests.support.watching import watch

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
PAGES = ("/admin/", "/admin/dashboard/", "/admin/automation/watchedproduct/", "/admin/setup/")


def shown(client, path: str = "/admin/") -> dict[str, str]:
    """The notices on the page: key → its list item's HTML."""
    response = client.get(path, **EN)
    assert response.status_code == 200
    html = response.content.decode()
    if 'data-testid="notices"' not in html:
        return {}
    bar = html[html.index('data-testid="notices"') :]
    bar = bar[: bar.index("</ul>")]
    items = bar.split('data-notice="')[1:]
    return {item[: item.index('"')]: item for item in items}


def test_nothing_wrong_no_bar(admin_client):
    for path in PAGES:
        assert shown(admin_client, path) == {}


def test_the_brake_holding_pauses_is_on_every_page_until_decided(admin_client, admin_user):
    held = sell_out_burst()
    for path in PAGES:
        notice = shown(admin_client, path)["brake"]
        assert f"The safety brake holds {len(held)} pauses" in notice
        assert 'href="/admin/automation/heldchange/?resolution__exact=open"' in notice

    held_changes.discard(held_changes.open_changes(), admin_user)

    assert "brake" not in shown(admin_client)


def test_dead_deliveries_until_replayed(admin_client):
    dead = Delivery.objects.create(
        source="shopify", topic="inventory_levels/update", webhook_id="w1", status="dead"
    )
    notice = shown(admin_client, "/admin/dashboard/")["dead_deliveries"]
    assert "1 delivery was given up" in notice
    assert 'href="/admin/automation/delivery/?status__exact=dead"' in notice

    Delivery.objects.filter(pk=dead.pk).update(status="done")  # replayed, and it went through

    assert "dead_deliveries" not in shown(admin_client, "/admin/dashboard/")


def test_a_nightly_run_with_errors_until_the_next_one_is_ok(admin_client):
    now = timezone.now()
    failed = ReconcileRun.objects.create(
        local_date=date(2026, 11, 30),
        started_at=now - timedelta(days=1),
        status="errors",
        errors=["shopify: Shopify refused the access (401)"],
    )
    notice = shown(admin_client)["connection_nightly"]
    assert "Shopify refused the access (401)" in notice
    assert f'href="/admin/automation/reconcilerun/{failed.pk}/change/"' in notice

    ReconcileRun.objects.create(local_date=date(2026, 12, 1), started_at=now, status="ok")

    assert "connection_nightly" not in shown(admin_client)


def test_a_failed_google_ads_call_until_the_next_one_goes_through(admin_client):
    watch(6001, "901", label="Winterzauber", name="Winterzauber Suche")
    fields = {
        "customer_id": "1234567890",
        "ad_group_id": "901",
        "desired_status": "PAUSED",
        "reason": "Winterzauber: stock 0 ≤ 0",
        "source": "webhook",
    }
    now = timezone.now()
    AdGroupAction.objects.create(
        **fields, result="failed", error="UNAVAILABLE", requested_at=now - timedelta(minutes=5)
    )
    notice = shown(admin_client)["connection_ads"]
    assert "the last change of 1 ad group failed" in notice
    assert 'href="/admin/automation/adgroup/"' in notice

    AdGroupAction.objects.create(**fields, result="applied", requested_at=now)

    assert "connection_ads" not in shown(admin_client)


def checkout(token: str, email: str) -> CheckoutState:
    return CheckoutState.objects.create(
        source="shopify",
        token=token,
        email=email,
        accepts_marketing=True,
        updated_at=timezone.now(),
        recovery_url=f"https://elbkerzen.myshopify.com/1/checkouts/{token}/recover",
    )


def test_reminders_skipped_for_lack_of_an_address_until_one_comes(admin_client):
    for token in ("a1", "a2"):
        redacted = checkout(token, "")  # Shopify redacts the address without the approval
        assert checkouts.evaluate(redacted.pk, redacted.updated_at) == "skipped: no e-mail address"
    notice = shown(admin_client)["no_address"]
    assert "2 reminders in the last 7 days were not sent: Shopify sent no e-mail address" in notice
    assert "protected customer data" in notice
    assert 'href="/admin/automation/reminderdecision/?arm__exact=none"' in notice

    granted = checkout("b1", "kundin@elbkerzen.example")
    checkouts.evaluate(granted.pk, granted.updated_at)

    assert "no_address" not in shown(admin_client)


def test_a_skip_for_lack_of_an_address_is_found_by_its_code_whatever_its_text(admin_client):
    redacted = checkout("a1", "")
    checkouts.evaluate(redacted.pk, redacted.updated_at)
    decision = ReminderDecision.objects.get()
    assert decision.reason_note == {"code": "no_address", "params": {}}
    # A text written in another language (or edited) does not hide it: the code decides
    ReminderDecision.objects.update(reason="keine E-Mail-Adresse (anders formuliert)")
    assert notices.reminders_without_address() is not None
    # And another code with the same text is no such skip
    ReminderDecision.objects.update(
        reason="no e-mail address", reason_note={"code": "claim_taken", "params": {}}
    )
    assert notices.reminders_without_address() is None


def test_a_skip_stored_before_reasons_had_codes_is_found_by_its_text(admin_client, settings):
    settings.LANGUAGE_CODE = "de"  # the shop's language, which the worker wrote it in
    redacted = checkout("a1", "")
    checkouts.evaluate(redacted.pk, redacted.updated_at)
    with translation.override("de"):
        german = str(checkouts.NO_ADDRESS)
    ReminderDecision.objects.update(reason=german, reason_note=None)
    assert notices.reminders_without_address() is not None


def test_old_skips_for_lack_of_an_address_are_no_notice(admin_client):
    redacted = checkout("a1", "")
    checkouts.evaluate(redacted.pk, redacted.updated_at)
    later = timezone.now() + timedelta(days=notices.NO_ADDRESS_DAYS, minutes=1)
    assert notices.reminders_without_address(now=later) is None
    assert notices.reminders_without_address() is not None


def test_a_removed_ad_group_until_it_is_back_or_replaced(admin_client):
    product = watch(6001, "901", label="Winterzauber", name="Winterzauber Suche")
    AdGroup.objects.filter(ad_group_id="901").update(
        missing="removed", missing_since=timezone.now()
    )
    group = AdGroup.objects.get(ad_group_id="901")
    notice = shown(admin_client)["missing_ad_groups"]
    assert "Removed or not found in Google Ads: Winterzauber Suche" in notice
    assert f'href="/admin/automation/adgroup/{group.pk}/change/"' in notice

    product.ad_groups.set([watch(6002, "902", label="Ersatz").ad_groups.get()])
    WatchedProduct.objects.filter(label="Ersatz").delete()
    assert "missing_ad_groups" not in shown(admin_client)  # no product follows it any more


def test_nobody_receiving_alerts(client, settings, django_user_model):
    settings.ALERT_EMAILS = []
    admin = django_user_model.objects.create_superuser("inhaberin", email="", password="x")
    client.force_login(admin)
    client.get("/admin/")  # the first page asks for an address (tests/ui/test_first_login.py)
    notice = shown(client)["nobody_alerted"]
    assert "Nobody receives alerts" in notice and 'href="/admin/setup/email/"' in notice

    admin.email = "inhaberin@elbkerzen.example"
    admin.save()

    assert "nobody_alerted" not in shown(client)


def test_a_notice_only_for_who_may_open_its_link(client, django_user_model):
    sell_out_burst()
    Delivery.objects.create(source="shopify", topic="t", webhook_id="w1", status="dead")
    helper = django_user_model.objects.create_user(
        "lager", email="lager@elbkerzen.example", is_staff=True
    )
    helper.user_permissions.add(Permission.objects.get(codename="view_delivery"))
    client.force_login(helper)
    assert set(shown(client)) == {"dead_deliveries"}


def test_the_bar_costs_the_same_few_queries_however_much_is_wrong(admin_user):
    with CaptureQueriesContext(connection) as calm:
        notices.current(admin_user)
    sell_out_burst()
    for n in range(5):
        Delivery.objects.create(source="shopify", topic="t", webhook_id=f"w{n}", status="dead")
    with CaptureQueriesContext(connection) as troubled:
        found = notices.current(admin_user)
    assert {"brake", "dead_deliveries"} <= {notice.key for notice in found}
    assert len(troubled) <= len(calm) + 2  # a second read only where a kind has something
    assert len(troubled) <= 10
