"""A job's Ads retries end before its RQ timeout, for all its ad groups together.

Worst case per ad group: ADS_RETRIES + 1 calls of ADS_CALL_TIMEOUT each plus the waits, which
is more than DELIVERY_JOB_TIMEOUT, and an item can have several ad groups. The job shares one
deadline (ADS_JOB_MARGIN before its RQ timeout) and hands the rest to its RQ retry instead of
being killed by RQ in the middle of its own retries.
"""

import time

import pytest
from django.core import mail

from automation.google_ads import adapter as google_ads
from automation.models import AdGroupAction, Delivery
from automation.platform import queues, scheduling
from automation.platform.exceptions import TransientAdsError
from tests.google_ads.test_inventory_end_to_end import SOLD_OUT
from tests.support.signing import post_shopify
from tests.support.watching import watch

pytestmark = pytest.mark.django_db(transaction=True)

AD_GROUPS = ("555", "556", "557")


@pytest.fixture
def three_ad_groups(db):
    watch(808950810, list(AD_GROUPS), customer_id="1234567890")


@pytest.fixture
def small_budget(settings, google_ads):
    """A 3 s job whose in-job retries alone (or one slow call) would take far longer."""
    settings.DELIVERY_JOB_TIMEOUT = 3
    settings.ADS_JOB_MARGIN = 1.0
    settings.ADS_CALL_TIMEOUT = 20.0  # longer than the job: only the deadline can cut a call
    settings.ADS_RETRIES = 50
    settings.ADS_BACKOFF_BASE = 0.2
    settings.ADS_BACKOFF_CAP = 0.4
    settings.DELIVERY_RETRY_INTERVALS = [3600]  # the RQ retry waits: the test sees one attempt
    google_ads.slow_seconds = 10.0
    return settings


@pytest.mark.parametrize("behaviour", ["transient", "slow"])
def test_the_worst_case_ends_inside_the_job_timeout_and_rq_retries_the_rest(
    client, run_worker, queue, three_ad_groups, small_budget, google_ads, behaviour
):
    google_ads.script([], default=behaviour)
    post_shopify(client, SOLD_OUT, topic="inventory_levels/update")
    started = time.monotonic()
    run_worker()
    elapsed = time.monotonic() - started

    delivery = Delivery.objects.get()
    ran = (delivery.processed_at - delivery.processing_started_at).total_seconds()
    assert ran < small_budget.DELIVERY_JOB_TIMEOUT  # not killed by RQ
    assert ran >= small_budget.DELIVERY_JOB_TIMEOUT - small_budget.ADS_JOB_MARGIN - 0.5
    assert delivery.status == Delivery.Status.FAILED  # failed and retried, not dead
    assert delivery.attempts == 1
    assert delivery.last_error.startswith("TransientAdsError")
    assert "time for Google Ads is spent" in delivery.last_error
    assert scheduling.job_id_for(delivery.pk) in queue.scheduled_job_registry.get_job_ids()
    actions = AdGroupAction.objects.order_by("ad_group_id")
    assert [(a.ad_group_id, a.result) for a in actions] == [(g, "failed") for g in AD_GROUPS]
    deadline = delivery.processing_started_at.timestamp() + (
        small_budget.DELIVERY_JOB_TIMEOUT - small_budget.ADS_JOB_MARGIN
    )
    assert google_ads.requests
    # None started after the deadline. The stand-in stamps a call when it arrives, not when the
    # client started it: under load (CI on 2 cores) gRPC delivers a call started just before
    # the deadline some ten milliseconds later, so arrival gets the same 0.5 s slack as `ran`.
    # That no call starts after it is checked exactly in test_no_call_starts_after_the_deadline.
    assert all(call.at < deadline + 0.5 for call in google_ads.requests)
    if behaviour == "slow":  # the first call took all the time: the others were not tried
        called = {c.request.operations[0].update.resource_name for c in google_ads.requests}
        assert called == {"customers/1234567890/adGroups/555"}
    assert not mail.outbox
    assert elapsed < 10  # the stand-in's slow answer was not waited for


def test_the_retry_finishes_the_job_once_google_answers(
    client, run_worker, queue, three_ad_groups, small_budget, google_ads
):
    google_ads.script([], default="transient")
    post_shopify(client, SOLD_OUT, topic="inventory_levels/update")
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED

    google_ads.script([])  # Google answers again; RQ's retry comes due
    job = queue.fetch_job(scheduling.job_id_for(delivery.pk))
    queue.scheduled_job_registry.remove(job)
    queue.enqueue_job(job)
    run_worker()

    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.DONE
    applied = AdGroupAction.objects.filter(result="applied").values_list("ad_group_id", flat=True)
    assert sorted(applied) == list(AD_GROUPS)


def test_no_call_starts_after_the_deadline(google_ads):
    from tests.support.ads_standin import make_test_client

    with pytest.raises(TransientAdsError, match="^JOB_DEADLINE") as ei:
        google_ads_client = make_test_client(google_ads)
        google_ads_module_call(google_ads_client, deadline=time.monotonic() - 0.1)
    assert ei.value.retry_in_job is False
    assert google_ads.requests == []


def test_a_call_gets_only_the_time_left(google_ads):
    from tests.support.ads_standin import make_test_client

    google_ads.slow_seconds = 5.0
    google_ads.script(["slow"])
    started = time.monotonic()
    with pytest.raises(TransientAdsError, match="DEADLINE_EXCEEDED.*time for Google Ads is spent"):
        google_ads_module_call(make_test_client(google_ads), deadline=started + 0.5)
    assert time.monotonic() - started < 2


def test_outside_an_rq_job_there_is_no_deadline():
    assert queues.job_deadline() is None


def google_ads_module_call(client, *, deadline: float) -> str:
    return google_ads.set_ad_group_status_with_retry(
        "1234567890",
        "555",
        "PAUSED",
        retries=3,
        base=0.01,
        cap=0.02,
        timeout=20.0,
        deadline=deadline,
        client=client,
    )
