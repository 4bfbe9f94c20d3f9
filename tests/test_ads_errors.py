"""Google Ads errors read as Google documents them: collisions and rate limits are retried.

DatabaseError.CONCURRENT_MODIFICATION says "Retry the request"; QuotaError.RESOURCE_EXHAUSTED
is retried by Google's own examples/error_handling/handle_rate_exceeded_error.py. Both used to
be permanent here: a promotion end that collided with an edit was recorded as ended while the
ad group kept running, and a rate limit killed the delivery at once.
"""

from datetime import date, time
from importlib import import_module

import grpc
import pytest
from django.core import mail

from automation import jobs, promotions, scheduling
from automation.adapters import google_ads
from automation.exceptions import PermanentAdsError, TransientAdsError
from automation.models import AdGroupAction, Delivery, Promotion, PromotionAdGroup, WatchedItem
from tests.ads_standin import _failure
from tests.signing import post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

errors = import_module(f"google.ads.googleads.{google_ads.API_VERSION}.errors.types.errors")

SOLD_OUT = {
    "inventory_item_id": 808950810,
    "location_id": 24826418,
    "available": 0,
    "updated_at": "2026-11-26T16:10:00+01:00",
}


# --- the adapter's reading of each failure ----------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "code", "delay", "in_job"),
    [
        # the reference names no status for it; INVALID_ARGUMENT alone would be permanent
        (grpc.StatusCode.INVALID_ARGUMENT, "database_error", "CONCURRENT_MODIFICATION", None, True),
        (grpc.StatusCode.ABORTED, "database_error", "CONCURRENT_MODIFICATION", None, True),
        # no suggested wait: longer than a job may block a worker, so RQ's retries wait
        (grpc.StatusCode.RESOURCE_EXHAUSTED, "quota_error", "RESOURCE_EXHAUSTED", None, False),
        # a suggested wait is honoured as with RESOURCE_TEMPORARILY_EXHAUSTED
        (grpc.StatusCode.RESOURCE_EXHAUSTED, "quota_error", "RESOURCE_EXHAUSTED", 3.0, True),
    ],
)
def test_collisions_and_rate_limits_are_transient(status, kind, code, delay, in_job):
    failure = _failure(kind, code, "as Google words it", delay)
    result = google_ads._classify_failure(failure, status, "rid-1")
    assert isinstance(result, TransientAdsError)
    assert result.retry_in_job is in_job
    assert result.retry_delay == delay
    assert str(result).startswith(f"{code}: as Google words it")
    assert "(request-id rid-1)" in str(result)


def test_a_real_permanent_error_on_the_same_status_stays_permanent():
    failure = _failure("mutate_error", "RESOURCE_NOT_FOUND", "Resource was not found.")
    result = google_ads._classify_failure(failure, grpc.StatusCode.INVALID_ARGUMENT, None)
    assert isinstance(result, PermanentAdsError)


# --- a promotion end colliding with an edit ----------------------------------------------------


def make_promotion() -> Promotion:
    promotion = Promotion(
        name="Pfingsten", time_zone="Europe/Berlin", end_date=date(2026, 6, 1), end_time=time(0)
    )
    scheduling.save_and_schedule(promotion)
    PromotionAdGroup.objects.create(
        promotion=promotion, customer_id="1234567890", ad_group_id="777"
    )
    return promotion


def test_a_promotion_end_colliding_with_an_edit_is_retried_and_applied(queue, google_ads):
    google_ads.script(["concurrent_modification", "ok"])  # someone edits the ad group right then
    promotion = make_promotion()

    promotions.run_edge(promotion.pk, "end", promotion.end_at)

    promotion.refresh_from_db()
    assert promotion.ended_at is not None
    assert promotion.last_error == ""
    assert [call.request.operations[0].update.status for call in google_ads.requests] == [3, 3]
    action = AdGroupAction.objects.get()
    assert (action.result, action.desired_status) == ("applied", "PAUSED")
    assert not mail.outbox


def test_a_lasting_collision_leaves_the_end_to_be_retried_not_recorded_as_ended(queue, google_ads):
    google_ads.always("777", "concurrent_modification")
    promotion = make_promotion()

    with pytest.raises(TransientAdsError, match="CONCURRENT_MODIFICATION"):
        promotions.run_edge(promotion.pk, "end", promotion.end_at)
    promotion.refresh_from_db()
    assert promotion.ended_at is None  # the ad group still runs: the end is not done
    assert promotion.status != Promotion.Status.ENDED

    google_ads._per_ad_group.clear()
    jobs.catch_up_promotions()  # the minute check
    promotion.refresh_from_db()
    assert promotion.ended_at is not None
    assert AdGroupAction.objects.filter(result="applied").get().desired_status == "PAUSED"
    assert not mail.outbox


# --- a delivery meeting a rate limit ------------------------------------------------------------


def test_a_rate_limit_leaves_the_delivery_to_its_rq_retry_not_dead(
    client, run_worker, google_ads, settings
):
    WatchedItem.objects.create(
        inventory_item_id=808950810,
        label="Winterzauber",
        ad_group_id="555",
        customer_id="1234567890",
    )
    settings.DELIVERY_RETRY_INTERVALS = [0]  # RQ requeues at once: the test sees both attempts
    google_ads.script(["rate_exceeded"])  # then ok
    post_shopify(client, SOLD_OUT, topic="inventory_levels/update")
    run_worker()

    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DONE
    assert delivery.attempts == 2  # the first attempt made one call and handed over to RQ
    results = list(AdGroupAction.objects.order_by("pk").values_list("result", flat=True))
    assert results == ["failed", "applied"]
    assert "RESOURCE_EXHAUSTED" in AdGroupAction.objects.order_by("pk").first().error
    assert len(google_ads.requests) == 2
    assert not mail.outbox
