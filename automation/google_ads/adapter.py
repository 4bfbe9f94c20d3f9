"""Google Ads adapter: the only module that imports google.ads, so the rest stays library-free."""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import import_module
from typing import Any

import grpc
from google.ads.googleads.client import GoogleAdsClient
from google.ads.googleads.errors import GoogleAdsException
from google.api_core import exceptions as core_exceptions
from google.api_core import protobuf_helpers
from google.auth import exceptions as auth_exceptions
from google.protobuf.message import DecodeError
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
)
from tenacity.wait import wait_random_exponential

from automation.platform.exceptions import AdGroupMissing, PermanentAdsError, TransientAdsError

# Pinned so an SDK upgrade never silently changes the wire API; bump deliberately.
API_VERSION = "v26"
VALID_STATUSES = frozenset({"PAUSED", "ENABLED"})

_FAILURE_KEY = f"google.ads.googleads.{API_VERSION}.errors.googleadsfailure-bin"
# QuotaError.RESOURCE_EXHAUSTED ("Too many requests.") is usually a short-term rate limit: Google's
# own examples/error_handling/handle_rate_exceeded_error.py (googleads/google-ads-python) retries
# it like RESOURCE_TEMPORARILY_EXHAUSTED, waiting 10 s, then twice as long each time. The same
# code answers a spent daily operations quota
# (https://developers.google.com/google-ads/api/docs/best-practices/quotas); short-term limits:
# https://developers.google.com/google-ads/api/docs/best-practices/rate-limits. So: transient,
# but retried by the job's RQ retries (minutes apart), which end in `dead` with an alert.
_RATE_EXCEEDED = ("quota_error", "RESOURCE_EXHAUSTED")
_TRANSIENT_ADS_CODES = frozenset(
    {
        ("internal_error", "TRANSIENT_ERROR"),
        ("internal_error", "INTERNAL_ERROR"),
        ("internal_error", "DEADLINE_EXCEEDED"),
        ("quota_error", "RESOURCE_TEMPORARILY_EXHAUSTED"),
        _RATE_EXCEEDED,
        # "Multiple requests were attempting to modify the same resource at once. Retry the
        # request." (DatabaseErrorEnum.DatabaseError in the API reference): a person in the Ads
        # UI or another of our jobs edited the ad group at the same moment.
        ("database_error", "CONCURRENT_MODIFICATION"),
    }
)
# Codes that say "this ad group is gone", answering our one-operation AdGroupService.MutateAdGroups
# update (the v26 reference of AdGroupService.MutateAdGroups lists MutateError and
# OperationAccessDeniedError among its thrown errors). Classified by the code, not the gRPC
# status, which the reference does not name for them.
_AD_GROUP_MISSING: dict[tuple[str, str], str] = {
    # "Requested resource was not found."
    # (https://developers.google.com/google-ads/api/reference/rpc/v26/MutateErrorEnum.MutateError).
    # How Google answers an update of an ad group the account does not have (a wrong id, or the
    # right id in another account): INVALID_ARGUMENT, "Resource was not found.", on field
    # operations > update > resource_name (googleads/google-ads-python, the thread 'Request with
    # ID "AVZ6lLU3qeXrm-6vLgdX1A" failed with status "INVALID_ARGUMENT"', where Google's team
    # found that the ad group did not exist in that account).
    ("mutate_error", "RESOURCE_NOT_FOUND"): AdGroupMissing.NOT_FOUND,
    # "This operation is not allowed because the resource is removed."
    # (https://developers.google.com/google-ads/api/reference/rpc/v26/OperationAccessDeniedErrorEnum.OperationAccessDeniedError):
    # the resource our update names, the ad group, is removed. Not a permission error: no access
    # or role makes the operation allowed, the ad group's removal forbids it.
    ("operation_access_denied_error", "OPERATION_NOT_PERMITTED_FOR_REMOVED_RESOURCE"): (
        AdGroupMissing.REMOVED
    ),
    # "The operation is not allowed for removed resources."
    # (https://developers.google.com/google-ads/api/reference/rpc/v26/ContextErrorEnum.ContextError).
    # Not among MutateAdGroups' listed errors (other services, e.g. MutateAdGroupAds, list
    # ContextError); it says the same, so it is read the same if it ever answers ours.
    ("context_error", "OPERATION_NOT_PERMITTED_FOR_REMOVED_RESOURCE"): AdGroupMissing.REMOVED,
}
# Not here, though close: RequestError.RESOURCE_NOT_FOUND ("Requested resource not found.") and
# IdError.NOT_FOUND ("ID not found") may name another resource than the ad group;
# RequestError.RESOURCE_NAME_MALFORMED and BAD_RESOURCE_ID ("Resource name provided is
# malformed.") say the name is badly formed, not that the ad group is gone; AuthorizationError
# and the other OperationAccessDeniedError codes are about access. All stay PermanentAdsError.
_TRANSIENT_GRPC_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
)
# gRPC reports credential-refresh failures as UNAVAILABLE; these OAuth errors never heal.
_PERMANENT_AUTH_MARKERS = (
    "invalid_grant",
    "invalid_client",
    "unauthorized_client",
    "invalid_scope",
)
_TRANSIENT_CORE_ERRORS = (
    core_exceptions.InternalServerError,
    core_exceptions.ResourceExhausted,
    core_exceptions.ServiceUnavailable,
    core_exceptions.DeadlineExceeded,
)


_ENV_PREFIX = "GOOGLE_ADS_"
# Ours, not the SDK's (GOOGLE_ADS_USE_PROTO_PLUS is passed in as use_proto_plus instead).
_NOT_SDK_VARIABLES = frozenset({"GOOGLE_ADS_CUSTOMER_ID", "GOOGLE_ADS_USE_PROTO_PLUS"})


# The SDK refuses these unless they are exactly ten digits (google/ads/googleads/config.py:
# _validate_customer_id); people paste them as Google Ads shows them, 123-456-7890.
_SDK_CUSTOMER_IDS = frozenset({"login_customer_id", "linked_customer_id"})


def _sdk_environment() -> dict[str, str]:
    """The SDK's GOOGLE_ADS_* variables as its config keys (its own rule: prefix + KEY)."""
    config = {
        name.removeprefix(_ENV_PREFIX).lower(): value
        for name, value in os.environ.items()
        if name.startswith(_ENV_PREFIX) and name not in _NOT_SDK_VARIABLES
    }
    for key in _SDK_CUSTOMER_IDS & config.keys():
        config[key] = config[key].replace("-", "").strip()
    return config


def build_client(
    *,
    use_proto_plus: bool = True,
    login_customer_id: str | None = None,
    config_path: str | None = None,
    stored: dict[str, str] | None = None,
) -> GoogleAdsClient:
    """Load from YAML if configured, else GOOGLE_ADS_* env over `stored` (the SDK's config keys
    entered on the set-up page), refreshing OAuth over the network.

    The SDK requires `use_proto_plus` (google/ads/googleads/config.py: _REQUIRED_KEYS); from the
    environment it comes from our setting GOOGLE_ADS_USE_PROTO_PLUS (default True), from a YAML
    file from the file's own key. Both kinds of message work with set_ad_group_status.
    """
    path = config_path or os.environ.get("GOOGLE_ADS_CONFIGURATION_FILE_PATH")
    try:
        if path:
            client = GoogleAdsClient.load_from_storage(path, version=API_VERSION)
        else:
            config = {**(stored or {}), **_sdk_environment(), "use_proto_plus": use_proto_plus}
            client = GoogleAdsClient.load_from_dict(config, version=API_VERSION)
    except auth_exceptions.TransportError as err:
        raise TransientAdsError(f"OAUTH_TRANSPORT_ERROR: {err}") from err
    except auth_exceptions.RefreshError as err:
        if getattr(err, "retryable", False):
            raise TransientAdsError(f"OAUTH_REFRESH_ERROR: {err}") from err
        raise PermanentAdsError(f"OAUTH_REFRESH_ERROR: {err}") from err
    except (ValueError, OSError) as err:
        raise PermanentAdsError(f"CONFIGURATION_ERROR: {err}") from err
    if login_customer_id:
        client.login_customer_id = str(login_customer_id).replace("-", "")
    return client


def _error_code(error_pb: Any) -> tuple[str, str]:
    """Return (error kind, enum name) of a GoogleAdsError without importing per-version enums."""
    code = error_pb.error_code
    kind = code.WhichOneof("error_code") or "unknown"
    if kind == "unknown":
        return kind, "UNKNOWN"
    enum = code.DESCRIPTOR.fields_by_name[kind].enum_type.values_by_number.get(getattr(code, kind))
    return kind, enum.name if enum else str(getattr(code, kind))


def _raw_pb(message: Any) -> Any:
    """The raw protobuf of a message, whether the client runs with proto-plus or without.

    With `use_proto_plus: False` the SDK hands out raw protobuf messages, which have no `_pb`
    (https://developers.google.com/google-ads/api/docs/client-libs/python/protobuf-messages).
    """
    return message._pb if hasattr(message, "_pb") else message


def _failure_from_metadata(metadata: Any) -> Any | None:
    """The failure from trailing metadata; the SDK skips it for INTERNAL and RESOURCE_EXHAUSTED."""
    failure_cls = import_module(
        f"google.ads.googleads.{API_VERSION}.errors.types.errors"
    ).GoogleAdsFailure
    for key, value in metadata or ():
        if key == _FAILURE_KEY:
            try:
                return failure_cls.pb().FromString(value)
            except DecodeError:
                return None
    return None


def _request_id(metadata: Any) -> str | None:
    """Pull the API request-id from trailing metadata for log correlation."""
    for key, value in metadata or ():
        if key == "request-id":
            return value
    return None


def _classify_failure(
    failure: Any,
    status: grpc.StatusCode | None,
    request_id: str | None,
    *,
    ad_group_id: str | None = None,
) -> TransientAdsError | PermanentAdsError:
    """Decide transient, gone (AdGroupMissing) or permanent from the failure's codes and status.

    Transient wins (a status change is safe to repeat). AdGroupMissing only when every error
    says the ad group is gone: wrongly "gone" would skip the ad group for good, wrongly plain
    permanent costs one more alert. Per-operation errors name their operation in
    `location.field_path_elements` (operations[i]); we send one operation per call, so they
    are about `ad_group_id`, the ad group the call was for.
    """
    failure_pb = _raw_pb(failure)
    parts: list[str] = []
    transient = status in _TRANSIENT_GRPC_CODES
    rate_exceeded = False
    retry_delay: float | None = None
    missing: list[str | None] = []
    for error in failure_pb.errors:
        kind, name = _error_code(error)
        parts.append(f"{name}: {error.message}".strip())
        missing.append(_AD_GROUP_MISSING.get((kind, name)))
        if (kind, name) in _TRANSIENT_ADS_CODES:
            transient = True
        if (kind, name) == _RATE_EXCEEDED:
            rate_exceeded = True
        if error.details.HasField("quota_error_details"):
            delay = error.details.quota_error_details.retry_delay
            if delay.seconds or delay.nanos:
                retry_delay = max(retry_delay or 0.0, delay.seconds + delay.nanos / 1e9)
    message = "; ".join(parts) or (status.name if status else "Google Ads error")
    if request_id:
        message += f" (request-id {request_id})"
    if transient:
        # Rate exceeded without a suggested wait: Google's example waits 10 s, 20 s, 40 s, longer
        # than a job may block a worker, so the job's RQ retries (minutes apart) take over.
        return TransientAdsError(
            message,
            retry_delay=retry_delay,
            retry_in_job=not (rate_exceeded and retry_delay is None),
        )
    if missing and None not in missing:
        removed = AdGroupMissing.REMOVED in missing
        kind = AdGroupMissing.REMOVED if removed else AdGroupMissing.NOT_FOUND
        return AdGroupMissing(message, kind=kind, ad_group_id=ad_group_id)
    return PermanentAdsError(message)


def translate_error(
    err: Exception, *, ad_group_id: str | None = None
) -> TransientAdsError | PermanentAdsError:
    """Map any SDK/gRPC/api_core error to our taxonomy with a short readable message.

    Transient or permanent; AdGroupMissing (a permanent error) when Google says the ad group is
    gone. `ad_group_id` is the ad group the call was about, if it was about one.
    """
    if isinstance(err, GoogleAdsException):
        status = err.error.code() if hasattr(err.error, "code") else None
        return _classify_failure(err.failure, status, err.request_id, ad_group_id=ad_group_id)
    if isinstance(err, core_exceptions.GoogleAPICallError):
        response = getattr(err, "response", None)
        metadata = None
        if response is not None and hasattr(response, "trailing_metadata"):
            metadata = response.trailing_metadata()
        failure = _failure_from_metadata(metadata)
        status = err.grpc_status_code
        if failure is not None and failure.errors:
            return _classify_failure(
                failure, status, _request_id(metadata), ad_group_id=ad_group_id
            )
        message = f"{status.name if status else type(err).__name__}: {err.message}"
        if "metadata from plugin failed" in message and any(
            marker in message for marker in _PERMANENT_AUTH_MARKERS
        ):
            return PermanentAdsError(message)
        if isinstance(err, _TRANSIENT_CORE_ERRORS):
            return TransientAdsError(message)
        return PermanentAdsError(message)
    if isinstance(err, grpc.RpcError) and hasattr(err, "code"):
        status = err.code()
        message = f"{status.name}: {err.details()}"
        if status in _TRANSIENT_GRPC_CODES:
            return TransientAdsError(message)
        return PermanentAdsError(message)
    return PermanentAdsError(f"{type(err).__name__}: {err}")


@contextmanager
def _our_errors(*, ad_group_id: str | None = None) -> Iterator[None]:
    """Every call into the SDK raises only our error types: the vendor's translated by
    `translate_error` (for `ad_group_id` if the call is about one ad group), and a programming
    error (ours or an SDK change) permanent."""
    try:
        yield
    except (GoogleAdsException, core_exceptions.GoogleAPICallError, grpc.RpcError) as err:
        raise translate_error(err, ad_group_id=ad_group_id) from err
    except (AttributeError, TypeError, ValueError, LookupError) as err:
        # A bug of ours or an SDK change, never healed by waiting: no retry, one alert.
        raise PermanentAdsError(f"PROGRAMMING_ERROR: {type(err).__name__}: {err}") from err


def set_ad_group_status(
    customer_id: str,
    ad_group_id: str,
    status: str,
    *,
    client: GoogleAdsClient | None = None,
    timeout: float = 20.0,
) -> str:
    """Pause/enable one ad group; returns its resource name, raising only our own error types.

    AdGroupMissing (kind "not_found" or "removed") when Google Ads says the ad group is gone.
    """
    if status not in VALID_STATUSES:
        raise ValueError(f"status must be one of {sorted(VALID_STATUSES)}, got {status!r}")
    customer_id = str(customer_id).replace("-", "")
    client = client or build_client()
    with _our_errors(ad_group_id=str(ad_group_id)):
        # As Google's examples/basic_operations/update_ad_group.py builds it; `_raw_pb` lets the
        # field mask work with use_proto_plus True (wrapper) and False (raw protobuf) alike.
        service = client.get_service("AdGroupService", version=API_VERSION)
        operation = client.get_type("AdGroupOperation", version=API_VERSION)
        ad_group = operation.update
        ad_group.resource_name = service.ad_group_path(customer_id, str(ad_group_id))
        ad_group.status = getattr(client.enums.AdGroupStatusEnum, status)
        client.copy_from(
            operation.update_mask, protobuf_helpers.field_mask(None, _raw_pb(ad_group))
        )
        response = service.mutate_ad_groups(
            customer_id=customer_id, operations=[operation], timeout=timeout
        )
    return response.results[0].resource_name


def _server_delay(retry_state: RetryCallState) -> float | None:
    outcome = retry_state.outcome
    exc = outcome.exception() if outcome is not None else None
    return getattr(exc, "retry_delay", None)


def _wait_with_hint(base: float, cap: float) -> Callable[[RetryCallState], float]:
    """Full-jitter capped exponential wait, stretched to the server's retry_delay when larger."""
    jitter = wait_random_exponential(multiplier=base, max=cap)

    def wait(retry_state: RetryCallState) -> float:
        delay = jitter(retry_state)
        hint = _server_delay(retry_state)
        return max(delay, float(hint)) if hint else delay

    return wait


def _wait_beyond_job(cap: float) -> Callable[[RetryCallState], bool]:
    """Stop retrying inside the job when the pause should be longer than our cap.

    That is when the server asks for a longer pause, or the error says not to retry in the job
    (rate exceeded without a suggested wait). The job's own RQ retries (minutes apart) then
    wait instead of a blocked worker.
    """

    def stop(retry_state: RetryCallState) -> bool:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        if not getattr(exc, "retry_in_job", True):
            return True
        hint = _server_delay(retry_state)
        return bool(hint) and float(hint) > cap

    return stop


def _past(deadline: float | None) -> Callable[[RetryCallState], bool]:
    """Stop when the next attempt would start at or after the job's deadline."""

    def stop(retry_state: RetryCallState) -> bool:
        return deadline is not None and time.monotonic() + retry_state.upcoming_sleep >= deadline

    return stop


def _hand_over(deadline: float | None) -> Callable[[RetryCallState], str]:
    """Re-raise the last error; if the deadline stopped us, say so and leave it to RQ."""

    def give_up(retry_state: RetryCallState) -> str:
        outcome = retry_state.outcome
        err = outcome.exception() if outcome is not None else None
        if isinstance(err, TransientAdsError) and err.retry_in_job and _past(deadline)(retry_state):
            raise TransientAdsError(
                f"{err} (the job's time for Google Ads is spent: its RQ retry continues)",
                retry_delay=err.retry_delay,
                retry_in_job=False,
            ) from err
        return outcome.result() if outcome is not None else ""  # re-raises the last error

    return give_up


def set_ad_group_status_with_retry(
    customer_id: str,
    ad_group_id: str,
    status: str,
    *,
    retries: int = 4,
    base: float = 2.0,
    cap: float = 30.0,
    timeout: float = 20.0,
    deadline: float | None = None,
    client: GoogleAdsClient | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Retry only TransientAdsError (status changes are idempotent); re-raise the last one.

    Every PermanentAdsError, AdGroupMissing included, ends the loop at once: asking again
    about an ad group Google says is gone gets the same answer.

    `deadline` (a time.monotonic() value) bounds the whole loop: no call starts after it, each
    call's gRPC timeout ends by it, and reaching it raises TransientAdsError with
    `retry_in_job=False`, so the job ends before RQ's timeout would kill it mid-retry.
    """
    clients: list[GoogleAdsClient] = [client] if client is not None else []

    def attempt() -> str:
        """One call within the deadline; builds a client here only when the caller gave none.

        The service passes its per-process client (`ads.google_client()`), built before this
        loop: an OAuth failure while building it reaches the job as TransientAdsError and RQ's
        retry takes it, not this loop. Tests and scripts without a client get one built here,
        once, with an OAuth transport error retried like any transient one.
        """
        call_timeout = timeout
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TransientAdsError(
                    "JOB_DEADLINE: the job's time for Google Ads is spent: its RQ retry continues",
                    retry_in_job=False,
                )
            call_timeout = min(timeout, left)
        if not clients:
            clients.append(build_client())
        return set_ad_group_status(
            customer_id, ad_group_id, status, client=clients[0], timeout=call_timeout
        )

    retrying = Retrying(
        retry=retry_if_exception_type(TransientAdsError),
        stop=stop_after_attempt(retries + 1) | _wait_beyond_job(cap) | _past(deadline),
        wait=_wait_with_hint(base, cap),
        sleep=sleep,
        retry_error_callback=_hand_over(deadline),
    )
    return retrying(attempt)


# --- set-up page and pickers: read-only GAQL searches ------------------------------------------
# Kept apart from the status writes above: these only read, for the set-up page's connection
# test and the admin's ad-group picker. Each is one GoogleAdsService.search_stream call, as in
# Google's examples/basic_operations/get_campaigns.py (googleads/google-ads-python):
# `ga_service.search_stream(customer_id=..., query=...)`, then `for batch in stream: for row in
# batch.results`. A stream's errors arrive while it is read, so reading happens inside the try.

PICK_LIMIT = 20  # ad groups one picker search shows


def credentials_source() -> str | None:
    """Where build_client would find credentials: "file", "environment", or None (none set).

    Says only whether they are there, never what they are: the set-up page shows this.
    """
    if os.environ.get("GOOGLE_ADS_CONFIGURATION_FILE_PATH"):
        return "file"
    if _sdk_environment().get("developer_token"):
        return "environment"
    return None


@dataclass(frozen=True)
class AdGroupChoice:
    """An ad group as the merchant recognises it: its name, its campaign's name and its status."""

    customer_id: str
    ad_group_id: str
    name: str
    status: str  # ENABLED, PAUSED, REMOVED (AdGroupStatusEnum)
    campaign_name: str


def _search_rows(
    client: GoogleAdsClient, customer_id: str, query: str, timeout: float
) -> list[Any]:
    """All rows of one GAQL query, with vendor errors translated into ours."""
    with _our_errors():
        service = client.get_service("GoogleAdsService", version=API_VERSION)
        stream = service.search_stream(
            customer_id=str(customer_id).replace("-", ""), query=query, timeout=timeout
        )
        return [row for batch in stream for row in batch.results]


def _status_name(value: Any) -> str:
    """An AdGroupStatus as its name, whether proto-plus (an enum) or raw protobuf (an int)."""
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    enums = import_module(f"google.ads.googleads.{API_VERSION}.enums.types.ad_group_status")
    return enums.AdGroupStatusEnum.AdGroupStatus(value).name


def gaql_string(text: str) -> str:
    """`text` as a GAQL string literal: single quotes, with `\\` and `'` escaped."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def like_pattern(text: str) -> str:
    """`%text%` for GAQL's LIKE, whose wildcards `%` and `_` (and `[`, `]`) are matched literally
    when put in brackets (https://developers.google.com/google-ads/api/docs/query/grammar,
    "Rules and limitations"). LIKE is case-insensitive
    (https://developers.google.com/google-ads/api/docs/query/case-sensitivity)."""
    escaped = "".join(f"[{c}]" if c in "[]%_" else c for c in text)
    return f"%{escaped}%"


def account_name(
    customer_id: str, *, client: GoogleAdsClient | None = None, timeout: float = 20.0
) -> str:
    """The account's descriptive name: proof that credentials and customer id work together."""
    client = client or build_client()
    rows = _search_rows(
        client, customer_id, "SELECT customer.id, customer.descriptive_name FROM customer", timeout
    )
    if not rows:
        raise PermanentAdsError(f"customer {customer_id} answered no row")
    return rows[0].customer.descriptive_name


_AD_GROUP_FIELDS = "ad_group.id, ad_group.name, ad_group.status, campaign.name"


def _choices(client: GoogleAdsClient, customer_id: str, rows: list[Any]) -> list[AdGroupChoice]:
    return [
        AdGroupChoice(
            customer_id=str(customer_id).replace("-", ""),
            ad_group_id=str(row.ad_group.id),
            name=row.ad_group.name,
            status=_status_name(row.ad_group.status),
            campaign_name=row.campaign.name,
        )
        for row in rows
    ]


def ad_groups_for_setup(
    customer_id: str,
    ad_group_ids: list[str],
    *,
    client: GoogleAdsClient | None = None,
    timeout: float = 20.0,
) -> list[AdGroupChoice]:
    """Names and statuses of the mapped ad groups, for the set-up page's connection test."""
    ids = sorted({int(i) for i in ad_group_ids if str(i).isdigit()})
    if not ids:
        return []
    client = client or build_client()
    query = (
        # GAQL, not SQL: the ids are ints, so nothing the merchant typed reaches the text.
        f"SELECT {_AD_GROUP_FIELDS} FROM ad_group WHERE ad_group.id IN ({', '.join(map(str, ids))})"  # noqa: S608
    )
    return _choices(client, customer_id, _search_rows(client, customer_id, query, timeout))


def search_ad_groups_for_picking(
    customer_id: str,
    text: str,
    *,
    client: GoogleAdsClient | None = None,
    timeout: float = 10.0,
    limit: int = PICK_LIMIT,
) -> list[AdGroupChoice]:
    """Ad groups whose own or whose campaign's name contains `text`, removed ones left out.

    GAQL's WHERE joins conditions with AND only (the grammar has no OR), so the two names are
    two queries, merged by ad group id, ad-group-name matches first.
    """
    text = " ".join(text.split())
    if not text:
        return []
    client = client or build_client()
    found: dict[str, AdGroupChoice] = {}
    for field in ("ad_group.name", "campaign.name"):
        query = (
            # GAQL, not SQL; the merchant's text goes in only through gaql_string.
            f"SELECT {_AD_GROUP_FIELDS} FROM ad_group "  # noqa: S608
            f"WHERE {field} LIKE {gaql_string(like_pattern(text))} "
            f"AND ad_group.status != 'REMOVED' "
            f"ORDER BY campaign.name, ad_group.name LIMIT {int(limit)}"
        )
        for choice in _choices(
            client, customer_id, _search_rows(client, customer_id, query, timeout)
        ):
            found.setdefault(choice.ad_group_id, choice)
    return list(found.values())[:limit]


# One GAQL search per account reads the statuses back; the IN list is cut into batches so a
# shop with thousands of watched ad groups stays within the query's length limit.
STATUS_SEARCH_BATCH = 500


def read_ad_groups(
    customer_id: str,
    ad_group_ids: list[str],
    *,
    client: GoogleAdsClient | None = None,
    timeout: float = 20.0,
) -> dict[str, AdGroupChoice]:
    """Each ad group as Google Ads has it now: its status, its name and its campaign's name.

    One the account does not know is absent (the caller reads it as not found); a removed one
    answers "REMOVED". The names come along, so the nightly run refreshes them without a call.
    """
    # GoogleAdsService.Search, as googleads/google-ads-python's (pre-2023)
    # examples/basic_operations/get_ad_groups.py reads ad groups; the SDK's pager fetches further
    # pages. No filter on status (get_responsive_search_ads.py needs `status != REMOVED` to leave
    # removed ones out). `campaign.name` is an "attributed resource" GAQL joins to FROM ad_group
    # implicitly (https://developers.google.com/google-ads/api/docs/query/overview).
    customer_id = str(customer_id).replace("-", "")
    ids = sorted({str(int(ad_group_id)) for ad_group_id in ad_group_ids})  # numbers only
    client = client or build_client()
    found: dict[str, AdGroupChoice] = {}
    with _our_errors():
        service = client.get_service("GoogleAdsService", version=API_VERSION)
        for start in range(0, len(ids), STATUS_SEARCH_BATCH):
            batch = ids[start : start + STATUS_SEARCH_BATCH]
            ids_list = ", ".join(batch)  # numbers only, checked above
            query = f"SELECT {_AD_GROUP_FIELDS} FROM ad_group WHERE ad_group.id IN ({ids_list})"  # noqa: S608,E501
            for row in service.search(customer_id=customer_id, query=query, timeout=timeout):
                raw = _raw_pb(row)
                found[str(raw.ad_group.id)] = AdGroupChoice(
                    customer_id=customer_id,
                    ad_group_id=str(raw.ad_group.id),
                    name=raw.ad_group.name,
                    status=_status_name(raw.ad_group.status),
                    campaign_name=raw.campaign.name,
                )
    return found


@dataclass(frozen=True)
class AccountChoice:
    """An account the signed-in user may choose, and the manager its calls go through."""

    customer_id: str
    login_customer_id: str  # "" when the account is reached directly
    name: str


ACCESSIBLE_LIMIT = 20
"""Accounts asked about their hierarchy after signing in; more are left out of the choice."""


def _with_login(client: GoogleAdsClient, login_customer_id: str | None) -> GoogleAdsClient:
    """A copy of `client` sending `login_customer_id` (None: none), the shared one untouched."""
    copied = copy.copy(client)
    copied.login_customer_id = login_customer_id
    return copied


def accessible_accounts(client: GoogleAdsClient, *, timeout: float) -> list[AccountChoice]:
    """The accounts to choose from: each one the credentials reach directly
    (CustomerService.ListAccessibleCustomers, as in Google's official
    examples/account_management/list_accessible_customers.py), a manager replaced by its
    client accounts, reached through it as login customer (customer_client level <= 1, as in
    examples/account_management/get_account_hierarchy.py). Each call has `timeout` seconds."""
    with _our_errors():
        service = _with_login(client, None).get_service("CustomerService", version=API_VERSION)
        names = service.list_accessible_customers(timeout=timeout).resource_names
    ids = [name.removeprefix("customers/") for name in names][:ACCESSIBLE_LIMIT]
    query = (
        "SELECT customer_client.id, customer_client.descriptive_name, customer_client.manager, "
        "customer_client.level FROM customer_client WHERE customer_client.level <= 1"
    )
    found: dict[tuple[str, str], AccountChoice] = {}
    for seed in ids:
        rows = _search_rows(_with_login(client, seed), seed, query, timeout)
        own = next((row.customer_client for row in rows if row.customer_client.level == 0), None)
        if own is not None and not own.manager:
            found.setdefault((seed, ""), AccountChoice(seed, "", own.descriptive_name))
            continue
        for row in rows:
            account = row.customer_client
            if account.level == 1 and not account.manager:
                cid = str(account.id)
                found.setdefault((cid, seed), AccountChoice(cid, seed, account.descriptive_name))
    return sorted(found.values(), key=lambda c: (c.name.lower(), c.customer_id))
