"""The `google` backend end to end: HTTP intake → RQ worker → real GoogleAdsClient → stand-in."""

import pytest
from django.core import mail

from automation.models import AdGroupAction, Delivery
from tests.support.ads_standin import DEVELOPER_TOKEN
from tests.support.signing import post_shopify
from tests.support.watching import ad_group, watch

pytestmark = pytest.mark.django_db(transaction=True)

SOLD_OUT = {
    "inventory_item_id": 808950810,
    "location_id": 24826418,
    "available": 0,
    "updated_at": "2026-11-26T16:10:00+01:00",
}


@pytest.fixture
def winterzauber():
    return watch(808950810, "555", customer_id="1234567890")


def test_sell_out_sends_the_exact_pause_operation(client, run_worker, winterzauber, google_ads):
    post_shopify(client, SOLD_OUT, topic="inventory_levels/update")
    run_worker()

    assert Delivery.objects.get().status == Delivery.Status.DONE
    (call,) = google_ads.requests
    (operation,) = call.request.operations
    assert call.request.customer_id == "1234567890"
    assert operation.update.resource_name == "customers/1234567890/adGroups/555"
    assert operation.update.status == 3  # AdGroupStatusEnum.PAUSED
    assert "status" in operation.update_mask.paths
    assert call.metadata["developer-token"] == DEVELOPER_TOKEN
    action = AdGroupAction.objects.get()
    assert (action.result, action.desired_status) == ("applied", "PAUSED")


def test_transient_twice_then_ok_is_retried_and_applied(
    client, run_worker, winterzauber, google_ads
):
    google_ads.script(["transient", "transient", "ok"])
    post_shopify(client, SOLD_OUT, topic="inventory_levels/update")
    run_worker()

    assert len(google_ads.requests) == 3
    assert Delivery.objects.get().status == Delivery.Status.DONE
    assert AdGroupAction.objects.get().result == "applied"
    assert not mail.outbox


def test_permanent_error_is_not_retried_goes_dead_with_one_alert(
    client, run_worker, winterzauber, google_ads
):
    google_ads.always("555", "permanent")
    post_shopify(client, SOLD_OUT, topic="inventory_levels/update")
    run_worker()

    assert len(google_ads.requests) == 1
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DEAD
    assert delivery.attempts == 1
    assert "PermanentAdsError" in delivery.last_error
    action = AdGroupAction.objects.get()
    assert action.result == "failed"
    assert action.error
    assert len(mail.outbox) == 1


def test_transient_forever_exhausts_job_retries_then_dead_with_one_alert(
    client, run_worker, winterzauber, google_ads, settings
):
    google_ads.script([], default="transient")
    post_shopify(client, SOLD_OUT, topic="inventory_levels/update")
    run_worker()

    attempts = len(settings.DELIVERY_RETRY_INTERVALS) + 1
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DEAD
    assert delivery.attempts == attempts
    assert len(google_ads.requests) == attempts * (settings.ADS_RETRIES + 1)
    assert len(mail.outbox) == 1


def test_one_broken_ad_group_does_not_block_the_others(
    client, run_worker, winterzauber, google_ads
):
    winterzauber.ad_groups.add(ad_group("999", "1234567890"))
    google_ads.always("999", "permanent")
    post_shopify(client, SOLD_OUT, topic="inventory_levels/update")
    run_worker()

    results = dict(AdGroupAction.objects.values_list("ad_group_id", "result"))
    assert results == {"555": "applied", "999": "failed"}
    assert Delivery.objects.get().status == Delivery.Status.DEAD
    assert len(mail.outbox) == 1
