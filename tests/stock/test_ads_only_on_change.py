"""Ads calls only on change, drift repaired from Google Ads, and the safety brake.

Through the real GoogleAdsClient against tests/support/ads_standin.py (mutates and GAQL searches).
"""

from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.exceptions import ImproperlyConfigured

from automation.google_ads import statuses as ads
from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import (
    AdGroup,
    AdGroupAction,
    AdGroupState,
    BrakeEpisode,
    BrakeSettings,
    Delivery,
    HeldChange,
    WatchedProduct,
)
from automation.models.ads import DEFAULT_BRAKE_MAX_SHARE_PERCENT
from automation.reconcile import nightly as reconcile
from automation.stock import held_changes
from tests.support import shopify_admin
from tests.support.levels import apply_level
from tests.support.signing import post_shopify
from tests.support.watching import watch
from tests.ui.test_api import client_for

pytestmark = pytest.mark.django_db(transaction=True)

shop = pytest.fixture(name="shop")(shopify_admin.shop)

ITEM = 808950810
STORE = 24826418
CUSTOMER = "1234567890"
MORNING = datetime.fromisoformat("2026-11-28T10:00:00+01:00")


@pytest.fixture
def winterzauber():
    return watch(ITEM, "555", customer_id=CUSTOMER)


def level(available: int, minutes: int = 0, item: int = ITEM) -> LevelUpdate:
    return LevelUpdate(item, STORE, available, MORNING + timedelta(minutes=minutes))


def body(update: LevelUpdate) -> dict:
    return {
        "inventory_item_id": update.inventory_item_id,
        "location_id": update.location_id,
        "available": update.available,
        "updated_at": update.updated_at.isoformat(),
    }


# --- only on change ------------------------------------------------------------------------


def test_a_busy_day_sends_one_call_per_status_change(client, run_worker, winterzauber, google_ads):
    """Ten sales from 12 down to 3, then a sell-out and a restock: three changes, three calls."""
    stock = [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 0, 5, 4]
    for minute, available in enumerate(stock):
        post_shopify(client, body(level(available, minute)), topic="inventory_levels/update")
        run_worker()

    sent = [call.request.operations[0].update.status for call in google_ads.requests]
    assert sent == [2, 3, 2]  # ENABLED, PAUSED, ENABLED (AdGroupStatusEnum)
    assert list(AdGroupAction.objects.order_by("pk").values_list("desired_status", flat=True)) == [
        "ENABLED",
        "PAUSED",
        "ENABLED",
    ]
    second = Delivery.objects.order_by("pk")[1]
    assert second.status == Delivery.Status.DONE
    assert second.result == "total available 11; ad group 555 ENABLED unchanged"
    state = AdGroupState.objects.get(backend="google", ad_group_id="555")
    assert state.confirmed_status == "ENABLED"


def test_a_failed_call_leaves_the_state_so_the_retry_sends_again(winterzauber, google_ads):
    apply_level(level(5), source="webhook")
    google_ads.always("555", "permanent")
    with pytest.raises(Exception, match="RESOURCE_NOT_FOUND"):
        apply_level(level(0, 1), source="webhook")
    assert AdGroupState.objects.get(backend="google").confirmed_status == "ENABLED"

    google_ads._per_ad_group.clear()
    apply_level(level(0, 1), source="webhook")  # the retry: same level, equal timestamp

    assert [c.request.operations[0].update.status for c in google_ads.requests] == [2, 3, 3]
    assert AdGroupState.objects.get(backend="google").confirmed_status == "PAUSED"


def test_the_dry_run_keeps_its_own_state_so_going_live_sends(winterzauber, settings):
    settings.ADS_BACKEND = "dryrun"
    apply_level(level(0), source="webhook")
    apply_level(level(0, 1), source="webhook")
    assert AdGroupAction.objects.get().result == "dry_run"  # the second was unchanged
    assert ads.recorded_statuses(CUSTOMER, ["555"]) == {"555": "PAUSED"}

    settings.ADS_BACKEND = "google"
    assert ads.confirmed_status("google", CUSTOMER, "555") is None  # unknown: will send


# --- drift ---------------------------------------------------------------------------------


def test_an_ad_group_enabled_by_hand_is_paused_again_at_night(shop, winterzauber, google_ads):
    apply_level(level(0), source="webhook")  # sold out, paused
    google_ads.statuses["555"] = "ENABLED"  # someone switches it on in the Google Ads UI
    shop.add_item(ITEM, (STORE, 0, "2026-11-28T09:00:00Z"))  # Shopify agrees: still 0

    run = reconcile.run_now()

    (search,) = google_ads.searches
    assert search.request.customer_id == CUSTOMER
    assert search.request.query == (
        "SELECT ad_group.id, ad_group.name, ad_group.status, campaign.name FROM ad_group "
        "WHERE ad_group.id IN (555)"
    )
    # Drift is repaired per ad group (named as the merchant named it, else by its id); the
    # reason says which product decided, with its stock.
    assert run.corrections == [
        {
            "kind": "drift",
            "item": 0,
            "label": "Winterzauber",
            "ad_group": "555",
            "was": "ENABLED",
            "now": "PAUSED",
            "reason": "drift: Google Ads had ENABLED; Winterzauber: 0 available ≤ 0",
            "ad_group_name": "",
            "item_name": "",
        }
    ]
    assert google_ads.statuses["555"] == "PAUSED"
    latest = AdGroupAction.objects.first()
    assert (latest.source, latest.desired_status) == ("reconcile", "PAUSED")
    assert latest.reason == "drift: Google Ads had ENABLED; Winterzauber: 0 available ≤ 0"
    assert "drift repaired (1)" in reconcile.summary(run)
    assert run.ad_groups_read == 1


def test_no_drift_no_call(shop, winterzauber, google_ads):
    apply_level(level(0), source="webhook")
    shop.add_item(ITEM, (STORE, 0, "2026-11-28T09:00:00Z"))

    run = reconcile.run_now()

    assert run.corrections == []
    assert len(google_ads.requests) == 1  # the webhook's pause only
    assert len(google_ads.searches) == 1


# --- the safety brake ----------------------------------------------------------------------


@pytest.fixture
def twenty(google_ads):
    """20 watched products, each in stock with its ad group enabled; their inventory items."""
    items = [1000 + n for n in range(20)]
    for n, item in enumerate(items):
        watch(item, str(700 + n), label=f"Kerze {n}", customer_id=CUSTOMER)
        apply_level(level(5, item=item), source="webhook")
    return items


def item_of(ad_group_id: str) -> int:
    """The inventory item of the watched product controlling the ad group."""
    product = WatchedProduct.objects.get(ad_groups__ad_group_id=ad_group_id)
    return product.variants.get().inventory_item_id


def test_fifteen_sell_outs_in_a_minute_pause_the_allowed_and_hold_the_rest(
    twenty, google_ads, settings
):
    settings.ALERT_EMAILS = ["inhaber@elbkerzen.example"]
    google_ads.requests.clear()
    allowed = BrakeSettings.load().allowed_pauses(20)
    assert allowed == 20 * DEFAULT_BRAKE_MAX_SHARE_PERCENT // 100  # 6

    for n, item in enumerate(twenty[:15]):  # a bad CSV import: one zero every 4 seconds
        update = LevelUpdate(item, STORE, 0, MORNING + timedelta(seconds=4 * n))
        apply_level(update, source="webhook")

    assert len(google_ads.requests) == allowed
    held = HeldChange.objects.filter(resolution="open")
    assert held.count() == 15 - allowed
    assert AdGroupAction.objects.filter(result="held").count() == 15 - allowed
    assert BrakeEpisode.objects.filter(is_open=True).count() == 1
    assert len(mail.outbox) == 1
    assert "Safety brake" in mail.outbox[0].subject

    # more zeros during the episode are held too, without a second alert; enables still go
    apply_level(LevelUpdate(1015, STORE, 0, MORNING + timedelta(minutes=2)), source="webhook")
    apply_level(LevelUpdate(1000, STORE, 3, MORNING + timedelta(minutes=2)), source="webhook")
    assert HeldChange.objects.filter(resolution="open").count() == 15 - allowed + 1
    assert [c.request.operations[0].update.status for c in google_ads.requests[allowed:]] == [2]
    assert len(mail.outbox) == 1


def test_apply_sends_what_the_stock_says_then_and_discard_records_the_user(twenty, google_ads):
    for n, item in enumerate(twenty[:15]):
        update = LevelUpdate(item, STORE, 0, MORNING + timedelta(seconds=4 * n))
        apply_level(update, source="webhook")
    held = list(HeldChange.objects.filter(resolution="open").order_by("pk"))
    recovered = held[:3]  # the import is fixed for three of them before the merchant looks
    for change in recovered:
        item = item_of(change.ad_group_id)
        update = LevelUpdate(item, STORE, 8, MORNING + timedelta(minutes=5))
        apply_level(update, source="webhook")
    google_ads.requests.clear()
    merchant = User.objects.create_user("inhaberin")

    first_five = HeldChange.objects.filter(pk__in=[c.pk for c in held[:5]])
    decided = held_changes.apply(first_five, merchant)

    assert decided.decided == 5
    assert [google_ads.statuses[c.ad_group_id] for c in held[:5]] == [
        "ENABLED",
        "ENABLED",
        "ENABLED",
        "PAUSED",
        "PAUSED",
    ]
    assert len(google_ads.requests) == 2  # the recovered three were enabled all along
    applied = HeldChange.objects.get(pk=held[3].pk)
    assert (applied.resolution, applied.applied_status, applied.resolved_by) == (
        "applied",
        "PAUSED",
        merchant,
    )
    assert BrakeEpisode.objects.get().is_open  # four still wait

    decided = held_changes.discard(held_changes.open_changes(), merchant)

    assert decided.decided == len(held) - 5
    assert len(google_ads.requests) == 2  # discarding sends nothing
    discarded = HeldChange.objects.get(pk=held[-1].pk)
    assert (discarded.resolution, discarded.resolved_by) == ("discarded", merchant)
    assert google_ads.statuses[discarded.ad_group_id] == "ENABLED"  # the ads stay as they were
    assert not BrakeEpisode.objects.filter(is_open=True).exists()  # the next burst alerts again


def test_the_nightly_run_reports_a_held_pause_and_does_not_push_it(
    shop,
    twenty,
    google_ads,
):
    for n, item in enumerate(twenty[:15]):
        update = LevelUpdate(item, STORE, 0, MORNING + timedelta(seconds=4 * n))
        apply_level(update, source="webhook")
    held = HeldChange.objects.filter(resolution="open").order_by("pk").first()
    item = item_of(held.ad_group_id)
    shop.add_item(item, (STORE, 0, "2026-11-28T09:30:00Z"))
    calls = len(google_ads.requests)

    run = reconcile.run_now()

    assert len(google_ads.requests) == calls
    assert google_ads.statuses[held.ad_group_id] == "ENABLED"
    assert {h["ad_group"] for h in run.held} >= {held.ad_group_id}
    assert all(c["ad_group"] != held.ad_group_id for c in run.corrections)
    assert "held by the safety brake" in reconcile.summary(run)


def test_the_api_lists_held_changes_and_applies_all(twenty, google_ads):
    for n, item in enumerate(twenty[:15]):
        update = LevelUpdate(item, STORE, 0, MORNING + timedelta(seconds=4 * n))
        apply_level(update, source="webhook")
    api = client_for(is_staff=True)

    listed = api.get("/api/held-changes/?open=1").json()
    assert listed["count"] == 9
    assert listed["results"][0]["resolution"] == "open"

    answer = api.post("/api/held-changes/apply-all/")

    assert answer.status_code == 200
    assert answer.json()["decided"] == 9
    assert set(answer.json()["sent"].values()) == {"PAUSED applied"}
    assert api.get("/api/held-changes/?open=1").json()["count"] == 0
    assert HeldChange.objects.filter(resolved_by__username="user-True").count() == 9


def test_the_admin_applies_all_and_edits_the_brake(twenty, admin_client, admin_user):
    for n, item in enumerate(twenty[:15]):
        update = LevelUpdate(item, STORE, 0, MORNING + timedelta(seconds=4 * n))
        apply_level(update, source="webhook")

    page = admin_client.get("/admin/automation/heldchange/")
    assert page.status_code == 200
    assert b'data-testid="apply-all"' in page.content
    assert admin_client.get("/admin/automation/brakesettings/").status_code == 302

    asked = admin_client.get("/admin/automation/heldchange/discard-all/")
    assert asked.status_code == 200 and b"9 held changes will be discarded" in asked.content
    assert HeldChange.objects.filter(resolution="open").count() == 9
    shown = list(HeldChange.objects.filter(resolution="open").values_list("pk", flat=True))

    answer = admin_client.post(
        "/admin/automation/heldchange/discard-all/", {"confirm": "yes", "change": shown}
    )

    assert answer.status_code == 302
    assert HeldChange.objects.filter(resolution="discarded", resolved_by=admin_user).count() == 9
    after = admin_client.get("/admin/automation/heldchange/")
    assert b'data-testid="apply-all"' not in after.content


@pytest.mark.parametrize(
    "call",
    [
        lambda: ads.send_status(CUSTOMER, "555", "PAUSED"),
        lambda: ads.read_ad_groups(CUSTOMER, ["555"]),
    ],
    ids=["send", "read"],
)
def test_an_unknown_backend_is_refused_naming_the_setting(settings, call):
    settings.ADS_BACKEND = "bing"
    with pytest.raises(ImproperlyConfigured, match="ADS_BACKEND must be 'dryrun' or 'google'"):
        call()


def test_the_demos_ad_groups_never_count_towards_open_or_get_held_by_the_brake(
    twenty, google_ads, settings
):
    """A merchant with real traffic loads the demo: its sell-outs are not the shop's."""
    demo = twenty[:12]
    AdGroup.objects.filter(ad_group_id__in=[str(700 + n) for n in range(12)]).update(demo=True)
    google_ads.requests.clear()

    for n, item in enumerate(demo):  # twelve demo sell-outs in a minute
        apply_level(
            LevelUpdate(item, STORE, 0, MORNING + timedelta(seconds=4 * n)), source="webhook"
        )
    assert len(google_ads.requests) == 12  # none held
    assert not BrakeEpisode.objects.exists()

    # the shop's next real sell-outs are counted against the 8 real ad groups alone
    allowed = BrakeSettings.load().allowed_pauses(8)
    for n, item in enumerate(twenty[12:]):
        apply_level(
            LevelUpdate(item, STORE, 0, MORNING + timedelta(minutes=1, seconds=n)), source="webhook"
        )
    held = HeldChange.objects.filter(resolution="open")
    assert held.count() == 8 - allowed
    assert not held.filter(ad_group_id__in=[str(700 + n) for n in range(12)]).exists()
    # and while the brake holds, a demo pause still goes through
    apply_level(LevelUpdate(demo[0], STORE, 5, MORNING + timedelta(minutes=3)), source="webhook")
    apply_level(LevelUpdate(demo[0], STORE, 0, MORNING + timedelta(minutes=4)), source="webhook")
    assert AdGroupAction.objects.filter(ad_group_id="700").order_by("pk").last().result == "applied"
