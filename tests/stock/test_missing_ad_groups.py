"""An ad group Google Ads reports removed or not found is marked, skipped, and the merchant is
told once, instead of failing every delivery into the dead letters (real GoogleAdsClient
against the gRPC stand-in)."""

import pytest
from django.core import mail

from automation.models import AdGroup, AdGroupAction, Delivery
from automation.reconcile import nightly as reconcile
from tests.support.signing import post_shopify
from tests.support.watching import watch

pytestmark = pytest.mark.django_db(transaction=True)

ITEM = 808950810


def level(available: int, minute: int) -> dict:
    return {
        "inventory_item_id": ITEM,
        "location_id": 24826418,
        "available": available,
        "updated_at": f"2026-11-26T16:{minute:02d}:00+01:00",
    }


@pytest.mark.parametrize(
    ("behaviour", "kind"), [("not_found", "not_found"), ("removed", "removed")]
)
def test_a_gone_ad_group_is_marked_once_and_skipped(
    client, run_worker, google_ads, behaviour, kind
):
    watch(ITEM, ["555", "556"])
    google_ads.always("555", behaviour)

    post_shopify(client, level(0, 0), topic="inventory_levels/update")
    run_worker()

    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DONE  # the other ad group was paused
    assert "ad group 555 missing in Google Ads" in delivery.result
    gone = AdGroup.objects.get(ad_group_id="555")
    assert gone.missing == kind and gone.missing_since is not None
    assert AdGroupAction.objects.get(ad_group_id="556").result == "applied"
    alerts = [m for m in mail.outbox if "555" in m.body]
    assert len(alerts) == 1

    # from then on it is skipped: no call, no failure, no second alert
    calls = len(google_ads.requests)
    post_shopify(client, level(5, 1), topic="inventory_levels/update")
    run_worker()
    assert Delivery.objects.order_by("-pk").first().status == Delivery.Status.DONE
    sent = [
        op.update.resource_name for r in google_ads.requests[calls:] for op in r.request.operations
    ]
    assert sent == ["customers/1234567890/adGroups/556"]
    assert len([m for m in mail.outbox if "555" in m.body]) == 1
    assert not Delivery.objects.filter(status=Delivery.Status.DEAD).exists()


def test_the_nightly_run_marks_what_google_no_longer_has_and_finds_it_again(google_ads, settings):
    settings.SHOPIFY_ADMIN_TOKEN = ""  # no Shopify: only the drift repair reads Google Ads
    settings.SHOPIFY_CLIENT_ID = ""
    watch(ITEM, ["555", "556"])
    google_ads.statuses["556"] = "ENABLED"  # 555 is unknown to the account

    reconcile.repair_drift(run := reconcile.ReconcileRun(local_date="2026-11-27"))

    assert AdGroup.objects.get(ad_group_id="555").missing == "not_found"
    assert AdGroup.objects.get(ad_group_id="556").missing == ""
    assert any("555" in error for error in run.errors)
    # back in the account (someone restored it): no longer skipped
    google_ads.statuses["555"] = "PAUSED"
    reconcile.repair_drift(reconcile.ReconcileRun(local_date="2026-11-28"))
    assert AdGroup.objects.get(ad_group_id="555").missing == ""
