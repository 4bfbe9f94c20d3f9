"""Google Ads errors read as Google documents them: collisions and rate limits are retried.

DatabaseError.CONCURRENT_MODIFICATION says "Retry the request"; QuotaError.RESOURCE_EXHAUSTED
is retried by Google's own examples/error_handling/handle_rate_exceeded_error.py. Taken as
permanent, a promotion end that collided with an edit would be recorded as ended while the ad
group kept running, and a rate limit would kill the delivery at once.

An ad group Google Ads does not know (MutateError.RESOURCE_NOT_FOUND) or holds as removed
(OPERATION_NOT_PERMITTED_FOR_REMOVED_RESOURCE) is AdGroupMissing: permanent, with its kind, so
the caller can mark it and skip it. Access errors stay plain permanent.
"""

import pickle
from datetime import date, time
from importlib import import_module

import grpc
import pytest
from django.core import mail

from automation import jobs
from automation.google_ads import adapter as google_ads
from automation.models import AdGroupAction, Delivery, Promotion, PromotionAdGroup
from automation.platform.exceptions import (
    AdGroupMissing,
    PermanentAdsError,
    PermanentError,
    TransientAdsError,
)
from automation.promotions import edges as promotions
from tests.support.ads_standin import _failure
from tests.support.signing import post_shopify
from tests.support.watching import watch

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


# --- an ad group Google Ads says is gone --------------------------------------------------------

# (error kind, enum name, Google's wording in the v26 reference, what we call it)
GONE = [
    (
        "mutate_error",
        "RESOURCE_NOT_FOUND",
        "Resource was not found.",
        AdGroupMissing.NOT_FOUND,
    ),
    (
        "operation_access_denied_error",
        "OPERATION_NOT_PERMITTED_FOR_REMOVED_RESOURCE",
        "This operation is not allowed because the resource is removed.",
        AdGroupMissing.REMOVED,
    ),
    (
        "context_error",
        "OPERATION_NOT_PERMITTED_FOR_REMOVED_RESOURCE",
        "The operation is not allowed for removed resources.",
        AdGroupMissing.REMOVED,
    ),
]


@pytest.mark.parametrize(
    "status",
    # the reference names no status for these: the code decides
    [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED, None],
)
@pytest.mark.parametrize(("kind", "code", "message", "gone"), GONE)
def test_the_codes_that_say_the_ad_group_is_gone(status, kind, code, message, gone):
    failure = _failure(kind, code, message, location=(("operations", 0), ("update", None)))
    result = google_ads._classify_failure(failure, status, "rid-2", ad_group_id="555")
    assert type(result) is AdGroupMissing
    assert (result.kind, result.ad_group_id) == (gone, "555")
    assert str(result) == f"{code}: {message} (request-id rid-2)"


@pytest.mark.parametrize(
    ("kind", "code", "status"),
    [
        # permission: the account, the user or the role, never the ad group itself
        ("authorization_error", "USER_PERMISSION_DENIED", grpc.StatusCode.PERMISSION_DENIED),
        ("authorization_error", "ACTION_NOT_PERMITTED", grpc.StatusCode.PERMISSION_DENIED),
        ("authorization_error", "CUSTOMER_NOT_ENABLED", grpc.StatusCode.PERMISSION_DENIED),
        ("operation_access_denied_error", "UPDATE_OPERATION_NOT_PERMITTED", None),
        ("operation_access_denied_error", "ACTION_NOT_PERMITTED", None),
        # a badly formed name is not a gone ad group
        ("request_error", "RESOURCE_NAME_MALFORMED", grpc.StatusCode.INVALID_ARGUMENT),
        ("request_error", "BAD_RESOURCE_ID", grpc.StatusCode.INVALID_ARGUMENT),
        # "not found", but possibly about another resource than the ad group
        ("request_error", "RESOURCE_NOT_FOUND", grpc.StatusCode.INVALID_ARGUMENT),
        ("id_error", "NOT_FOUND", grpc.StatusCode.INVALID_ARGUMENT),
    ],
)
def test_access_and_other_permanent_errors_stay_plain_permanent(kind, code, status):
    result = google_ads._classify_failure(_failure(kind, code, "as Google words it"), status, None)
    assert type(result) is PermanentAdsError


def test_a_gone_code_on_a_transient_status_is_retried():
    """As everywhere here, a transient status wins: asking again is safe."""
    failure = _failure("mutate_error", "RESOURCE_NOT_FOUND", "Resource was not found.")
    result = google_ads._classify_failure(failure, grpc.StatusCode.UNAVAILABLE, None)
    assert type(result) is TransientAdsError


def failure_of(*errors: tuple[str, str]) -> object:
    """One GoogleAdsFailure carrying several errors."""
    failure = _failure(*errors[0], "first")
    for kind, code in errors[1:]:
        failure.errors.append(_failure(kind, code, "next").errors[0])
    return failure


def test_gone_only_when_every_error_says_so():
    """Wrongly "gone" would skip the ad group for good; wrongly plain costs one more alert."""
    not_found = ("mutate_error", "RESOURCE_NOT_FOUND")
    removed = ("operation_access_denied_error", "OPERATION_NOT_PERMITTED_FOR_REMOVED_RESOURCE")
    denied = ("authorization_error", "USER_PERMISSION_DENIED")
    collision = ("database_error", "CONCURRENT_MODIFICATION")
    status = grpc.StatusCode.INVALID_ARGUMENT

    both = google_ads._classify_failure(failure_of(not_found, removed), status, None)
    assert type(both) is AdGroupMissing and both.kind == AdGroupMissing.REMOVED
    mixed = google_ads._classify_failure(failure_of(not_found, denied), status, None)
    assert type(mixed) is PermanentAdsError
    retried = google_ads._classify_failure(failure_of(removed, collision), status, None)
    assert type(retried) is TransientAdsError


def test_translate_error_names_the_ad_group_only_when_told():
    from google.ads.googleads.errors import GoogleAdsException

    class FakeCall(grpc.RpcError):
        def code(self) -> grpc.StatusCode:
            return grpc.StatusCode.INVALID_ARGUMENT

    failure = _failure("mutate_error", "RESOURCE_NOT_FOUND", "Resource was not found.")
    err = GoogleAdsException(FakeCall(), FakeCall(), failure, "rid-3")
    assert google_ads.translate_error(err).ad_group_id is None
    assert google_ads.translate_error(err, ad_group_id="777").ad_group_id == "777"


def test_ad_group_missing_is_a_permanent_error_with_a_known_kind():
    err = AdGroupMissing(
        "RESOURCE_NOT_FOUND: Resource was not found.", kind=AdGroupMissing.NOT_FOUND
    )
    assert isinstance(err, PermanentAdsError) and isinstance(err, PermanentError)
    assert (err.kind, err.ad_group_id) == (AdGroupMissing.NOT_FOUND, None)
    assert {"not_found", "removed"} == AdGroupMissing.KINDS  # the names callers store
    with pytest.raises(ValueError, match="kind must be one of"):
        AdGroupMissing("gone", kind="deleted")


def test_ad_group_missing_survives_pickling():
    err = AdGroupMissing(
        "OPERATION_NOT_PERMITTED_FOR_REMOVED_RESOURCE", kind="removed", ad_group_id="556"
    )
    copy = pickle.loads(pickle.dumps(err))  # noqa: S301 - our own object
    assert (type(copy), str(copy), copy.kind, copy.ad_group_id) == (
        AdGroupMissing,
        str(err),
        "removed",
        "556",
    )


# --- a promotion end colliding with an edit ----------------------------------------------------


def make_promotion() -> Promotion:
    promotion = Promotion(
        name="Pfingsten", time_zone="Europe/Berlin", end_date=date(2026, 6, 1), end_time=time(0)
    )
    promotions.save_and_schedule(promotion)
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
    watch(808950810, "555", customer_id="1234567890")
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
