"""The Google Ads adapter with the real GoogleAdsClient against a local gRPC stand-in."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as core_exceptions
from google.oauth2.credentials import Credentials

from automation.google_ads import adapter as google_ads
from automation.platform.exceptions import AdGroupMissing, PermanentAdsError, TransientAdsError
from tests.support.ads_standin import AdsStandIn, make_test_client, trust_standin_cert

# gRPC caches its TLS trust roots at the first TLS channel, so trust the stand-in cert at import.
trust_standin_cert()

CUSTOMER = "1234567890"
RESOURCE = f"customers/{CUSTOMER}/adGroups/555"


@pytest.fixture(scope="module")
def ads() -> Iterator[AdsStandIn]:
    """One stand-in server per module keeps the suite fast."""
    with AdsStandIn() as standin:
        yield standin


@pytest.fixture(autouse=True)
def _reset(ads: AdsStandIn) -> None:
    """Start every test with an empty log, an all-ok script and no ad group Google holds."""
    ads.requests.clear()
    ads.script([])
    ads._per_ad_group.clear()
    ads.statuses.clear()
    ads.reset_search()


@pytest.fixture(scope="module")
def client(ads: AdsStandIn) -> Any:
    """A real GoogleAdsClient aimed at the stand-in."""
    return make_test_client(ads)


@pytest.fixture(scope="module", params=[True, False], ids=["proto-plus", "raw-protobuf"])
def either_client(ads: AdsStandIn, request: pytest.FixtureRequest) -> Any:
    """The client with proto-plus messages, and with raw protobuf (`use_proto_plus: False`)."""
    return make_test_client(ads, use_proto_plus=request.param)


class Sleeps(list[float]):
    """Injectable sleep that records delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        """Record the requested delay."""
        self.append(seconds)


def test_first_call_timing_and_exact_request(ads: AdsStandIn) -> None:
    """The wire request is exactly what production would send, and setup is cheap."""
    start = time.perf_counter()
    fresh = make_test_client(ads)
    result = google_ads.set_ad_group_status(CUSTOMER, "555", "PAUSED", client=fresh)
    elapsed = time.perf_counter() - start
    print(f"\nclient construction + first call: {elapsed * 1000:.1f} ms")

    assert result == RESOURCE
    assert len(ads.requests) == 1
    call = ads.requests[0]
    assert call.request.customer_id == CUSTOMER
    (op,) = call.request.operations
    assert op.update.resource_name == RESOURCE
    assert op.update.status == 3  # AdGroupStatus.PAUSED
    assert (
        type(op.update)
        .DESCRIPTOR.fields_by_name["status"]
        .enum_type.values_by_number[op.update.status]
        .name
        == "PAUSED"
    )
    assert "status" in op.update_mask.paths
    assert call.metadata["developer-token"] == "devtok"
    assert call.metadata["login-customer-id"] == CUSTOMER
    assert call.metadata["authorization"] == "Bearer x"
    assert elapsed < 5


def test_enable(ads: AdsStandIn, client: Any) -> None:
    """ENABLED maps to the enum value 2."""
    google_ads.set_ad_group_status(CUSTOMER, "555", "ENABLED", client=client)
    assert ads.requests[0].request.operations[0].update.status == 2


def test_invalid_status_rejected_locally(ads: AdsStandIn, client: Any) -> None:
    """Typos never reach the API."""
    with pytest.raises(ValueError):
        google_ads.set_ad_group_status(CUSTOMER, "555", "REMOVED", client=client)
    assert ads.requests == []


def test_transient_twice_then_ok(ads: AdsStandIn, client: Any) -> None:
    """Transient failures are retried with jittered waits and no real sleeping."""
    ads.script(["transient", "internal", "ok"])
    sleeps = Sleeps()
    result = google_ads.set_ad_group_status_with_retry(
        CUSTOMER, "555", "PAUSED", client=client, sleep=sleeps
    )
    assert result == RESOURCE
    assert len(ads.requests) == 3
    assert len(sleeps) == 2
    assert 0 <= sleeps[0] <= 2.0 and 0 <= sleeps[1] <= 4.0


def test_permanent_not_retried(ads: AdsStandIn, client: Any) -> None:
    """A permanent failure fails once, fast, with a readable message."""
    ads.always("999", "permanent")
    sleeps = Sleeps()
    with pytest.raises(
        PermanentAdsError, match=r"^RESOURCE_NOT_FOUND: Requested resource not found"
    ) as ei:
        google_ads.set_ad_group_status_with_retry(
            CUSTOMER, "999", "PAUSED", client=client, sleep=sleeps
        )
    assert type(ei.value) is PermanentAdsError  # RequestError's, not the ad group's: not missing
    assert len(ads.requests) == 1
    assert sleeps == []
    assert type(ei.value.__cause__).__name__ == "GoogleAdsException"


def test_permission_denied_is_permanent(ads: AdsStandIn, client: Any) -> None:
    """Authorization errors are permanent."""
    ads.script(["denied"])
    with pytest.raises(PermanentAdsError, match="USER_PERMISSION_DENIED"):
        google_ads.set_ad_group_status_with_retry(CUSTOMER, "555", "PAUSED", client=client)
    assert len(ads.requests) == 1


@pytest.mark.parametrize(
    ("behaviour", "kind", "answer"),
    [
        ("not_found", AdGroupMissing.NOT_FOUND, r"^RESOURCE_NOT_FOUND: Resource was not found\."),
        (
            "removed",
            AdGroupMissing.REMOVED,
            r"^OPERATION_NOT_PERMITTED_FOR_REMOVED_RESOURCE: This operation is not allowed "
            r"because the resource is removed\.",
        ),
    ],
)
def test_a_gone_ad_group_fails_once_as_missing_and_is_never_retried(
    ads: AdsStandIn, either_client: Any, behaviour: str, kind: str, answer: str
) -> None:
    """Google's answer for an unknown or a removed ad group: AdGroupMissing, one call."""
    ads.always("999", behaviour)
    sleeps = Sleeps()
    with pytest.raises(AdGroupMissing, match=answer) as ei:
        google_ads.set_ad_group_status_with_retry(
            CUSTOMER, "999", "PAUSED", retries=4, client=either_client, sleep=sleeps
        )
    assert (ei.value.kind, ei.value.ad_group_id) == (kind, "999")
    assert len(ads.requests) == 1
    assert sleeps == []
    assert type(ei.value.__cause__).__name__ == "GoogleAdsException"


@pytest.mark.parametrize("held_in", ["statuses", "ad_groups"])
def test_an_ad_group_removed_in_google_ads_refuses_the_change_by_itself(
    ads: AdsStandIn, either_client: Any, held_in: str
) -> None:
    """Someone removed it in the Google Ads UI: enabling it again fails as "removed"."""
    if held_in == "statuses":
        ads.remove_ad_group("556")
    else:
        ads.add_ad_group("556", "Sommerwiese Suche", "Kerzen Sommer", status="REMOVED")
    sleeps = Sleeps()
    with pytest.raises(AdGroupMissing) as ei:
        google_ads.set_ad_group_status_with_retry(
            CUSTOMER, "556", "ENABLED", client=either_client, sleep=sleeps
        )
    assert (ei.value.kind, ei.value.ad_group_id) == (AdGroupMissing.REMOVED, "556")
    assert len(ads.requests) == 1 and sleeps == []
    # nothing changed at "Google": no ENABLED recorded
    assert ads.statuses.get("556") == ("REMOVED" if held_in == "statuses" else None)


@pytest.mark.parametrize("behaviour", ["denied", "malformed"])
def test_access_and_other_permanent_errors_are_not_missing(
    ads: AdsStandIn, either_client: Any, behaviour: str
) -> None:
    """Permission denied or a badly formed name: plain PermanentAdsError, one call."""
    ads.script([behaviour])
    with pytest.raises(PermanentAdsError) as ei:
        google_ads.set_ad_group_status_with_retry(CUSTOMER, "555", "PAUSED", client=either_client)
    assert type(ei.value) is PermanentAdsError
    assert len(ads.requests) == 1


def test_transient_stays_transient_with_either_message_kind(
    ads: AdsStandIn, either_client: Any
) -> None:
    """A hiccup is retried as before, then the change goes through."""
    ads.script(["transient", "ok"])
    sleeps = Sleeps()
    result = google_ads.set_ad_group_status_with_retry(
        CUSTOMER, "555", "PAUSED", client=either_client, sleep=sleeps
    )
    assert result == RESOURCE
    assert len(ads.requests) == 2 and len(sleeps) == 1


def test_statuses_read_removed_as_removed_and_leave_unknown_ones_out(
    ads: AdsStandIn, either_client: Any
) -> None:
    """What the caller reads: "REMOVED" is removed, an absent id is not found."""
    ads.statuses.update({"555": "ENABLED", "556": "PAUSED"})
    ads.remove_ad_group("557")
    found = google_ads.read_ad_groups(CUSTOMER, ["555", "556", "557", "999"], client=either_client)
    statuses = {ad_group_id: group.status for ad_group_id, group in found.items()}
    assert statuses == {"555": "ENABLED", "556": "PAUSED", "557": "REMOVED"}
    assert "999" not in found


def test_transient_forever_gives_up(ads: AdsStandIn, client: Any) -> None:
    """After retries+1 attempts the last TransientAdsError surfaces."""
    ads.script([], default="transient")
    sleeps = Sleeps()
    with pytest.raises(TransientAdsError, match="TRANSIENT_ERROR"):
        google_ads.set_ad_group_status_with_retry(
            CUSTOMER,
            "555",
            "PAUSED",
            retries=4,
            base=2.0,
            cap=30.0,
            client=client,
            sleep=sleeps,
        )
    assert len(ads.requests) == 5
    assert len(sleeps) == 4
    assert all(0 <= s <= cap for s, cap in zip(sleeps, [2, 4, 8, 16], strict=True))


def test_rate_limit_retry_delay_honoured(ads: AdsStandIn, client: Any) -> None:
    """RESOURCE_TEMPORARILY_EXHAUSTED is transient and its retry_delay stretches the wait."""
    ads.script(["rate_limited"])
    with pytest.raises(TransientAdsError, match="RESOURCE_TEMPORARILY_EXHAUSTED") as ei:
        google_ads.set_ad_group_status(CUSTOMER, "555", "PAUSED", client=client)
    assert ei.value.retry_delay == 7.0
    assert isinstance(ei.value.__cause__, core_exceptions.ResourceExhausted)

    ads.script(["rate_limited", "ok"])
    sleeps = Sleeps()
    google_ads.set_ad_group_status_with_retry(
        CUSTOMER, "555", "PAUSED", client=client, sleep=sleeps
    )
    assert sleeps == [7.0]


def test_rate_exceeded_is_transient_and_left_to_the_job_retries(
    ads: AdsStandIn, client: Any
) -> None:
    """RESOURCE_EXHAUSTED without a retry_delay: transient, but no in-job retry (it wants
    longer waits than a job may block a worker; Google's example waits 10 s, 20 s, 40 s)."""
    ads.script(["rate_exceeded"])
    sleeps = Sleeps()
    with pytest.raises(TransientAdsError, match="^RESOURCE_EXHAUSTED: Too many requests") as ei:
        google_ads.set_ad_group_status_with_retry(
            CUSTOMER, "555", "PAUSED", client=client, sleep=sleeps
        )
    assert len(ads.requests) == 1
    assert sleeps == []
    assert ei.value.retry_in_job is False
    assert ei.value.retry_delay is None
    assert isinstance(ei.value.__cause__, core_exceptions.ResourceExhausted)


def test_concurrent_modification_is_retried_in_the_job(ads: AdsStandIn, client: Any) -> None:
    """DatabaseError.CONCURRENT_MODIFICATION says "Retry the request", even on INVALID_ARGUMENT."""
    ads.script(["concurrent_modification"])
    with pytest.raises(TransientAdsError, match="^CONCURRENT_MODIFICATION") as ei:
        google_ads.set_ad_group_status(CUSTOMER, "555", "PAUSED", client=client)
    assert ei.value.retry_in_job is True
    assert type(ei.value.__cause__).__name__ == "GoogleAdsException"

    ads.requests.clear()
    ads.script(["concurrent_modification", "concurrent_modification", "ok"])
    sleeps = Sleeps()
    result = google_ads.set_ad_group_status_with_retry(
        CUSTOMER, "555", "PAUSED", client=client, sleep=sleeps
    )
    assert result == RESOURCE
    assert len(ads.requests) == 3 and len(sleeps) == 2


def test_bare_unavailable_and_deadline(ads: AdsStandIn, client: Any) -> None:
    """Status-only failures and client timeouts are transient."""
    ads.script(["bare_unavailable"])
    with pytest.raises(TransientAdsError, match="^UNAVAILABLE") as ei:
        google_ads.set_ad_group_status(CUSTOMER, "555", "PAUSED", client=client)
    assert isinstance(ei.value.__cause__, core_exceptions.ServiceUnavailable)

    ads.slow_seconds = 0.5
    ads.script(["slow"])
    with pytest.raises(TransientAdsError, match="^DEADLINE_EXCEEDED") as ei:
        google_ads.set_ad_group_status(CUSTOMER, "555", "PAUSED", client=client, timeout=0.1)
    assert isinstance(ei.value.__cause__, core_exceptions.DeadlineExceeded)


def test_revoked_refresh_token_is_permanent(ads: AdsStandIn) -> None:
    """gRPC reports refresh failures as UNAVAILABLE; invalid_grant must not be retried."""
    from google.auth.exceptions import RefreshError

    class Revoked(Credentials):
        def refresh(self, request: Any) -> None:
            raise RefreshError("invalid_grant: Token has been expired or revoked.")

    bad = make_test_client(ads)
    bad.credentials = Revoked(token=None, refresh_token="r", client_id="a", client_secret="b")
    with pytest.raises(PermanentAdsError, match="invalid_grant"):
        google_ads.set_ad_group_status_with_retry(CUSTOMER, "555", "PAUSED", client=bad)
    assert ads.requests == []


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (core_exceptions.InternalServerError("boom"), TransientAdsError),
        (core_exceptions.ResourceExhausted("slow down"), TransientAdsError),
        (core_exceptions.ServiceUnavailable("down"), TransientAdsError),
        (core_exceptions.DeadlineExceeded("late"), TransientAdsError),
        (core_exceptions.PermissionDenied("no"), PermanentAdsError),
        (core_exceptions.Unauthenticated("who"), PermanentAdsError),
        (core_exceptions.InvalidArgument("bad"), PermanentAdsError),
        (core_exceptions.NotFound("gone"), PermanentAdsError),
    ],
)
def test_api_core_mapping(exc: Exception, expected: type[Exception]) -> None:
    """api_core exceptions without Ads failure details map by class."""
    result = google_ads.translate_error(exc)
    assert type(result) is expected
    assert str(exc.message) in str(result)


def test_grpc_status_on_ads_exception_wins() -> None:
    """A GoogleAdsException carried on UNAVAILABLE is transient even with a non-transient code."""
    from google.ads.googleads.errors import GoogleAdsException
    from google.ads.googleads.v26.errors.types import errors as ads_errors

    class FakeCall(grpc.RpcError):
        def code(self) -> grpc.StatusCode:
            return grpc.StatusCode.UNAVAILABLE

    failure = ads_errors.GoogleAdsFailure(errors=[ads_errors.GoogleAdsError(message="hiccup")])
    err = GoogleAdsException(FakeCall(), FakeCall(), failure, "rid")
    assert isinstance(google_ads.translate_error(err), TransientAdsError)


def test_build_client_oauth_failures_translated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Client construction refreshes OAuth eagerly; its failures use our taxonomy."""
    from google.ads.googleads.client import GoogleAdsClient
    from google.auth import exceptions as auth_exceptions

    monkeypatch.delenv("GOOGLE_ADS_CONFIGURATION_FILE_PATH", raising=False)
    calls: list[int] = []

    def offline(*_: Any, **__: Any) -> None:
        calls.append(1)
        raise auth_exceptions.TransportError("accounts.google.com unreachable")

    monkeypatch.setattr(GoogleAdsClient, "load_from_dict", offline)
    sleeps = Sleeps()
    with pytest.raises(TransientAdsError, match="OAUTH_TRANSPORT_ERROR"):
        google_ads.set_ad_group_status_with_retry(
            CUSTOMER, "555", "PAUSED", retries=2, sleep=sleeps
        )
    assert len(calls) == 3 and len(sleeps) == 2

    def revoked(*_: Any, **__: Any) -> None:
        raise auth_exceptions.RefreshError("invalid_grant: Token has been revoked.")

    monkeypatch.setattr(GoogleAdsClient, "load_from_dict", revoked)
    with pytest.raises(PermanentAdsError, match="invalid_grant"):
        google_ads.build_client()
