"""Google Ads adapter: the only module that imports google.ads, so the rest stays library-free."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
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

from ..exceptions import PermanentAdsError, TransientAdsError

# Pinned so an SDK upgrade never silently changes the wire API; bump deliberately.
API_VERSION = "v26"
VALID_STATUSES = frozenset({"PAUSED", "ENABLED"})

_FAILURE_KEY = f"google.ads.googleads.{API_VERSION}.errors.googleadsfailure-bin"
_TRANSIENT_ADS_CODES = frozenset(
    {
        ("internal_error", "TRANSIENT_ERROR"),
        ("internal_error", "INTERNAL_ERROR"),
        ("internal_error", "DEADLINE_EXCEEDED"),
        ("quota_error", "RESOURCE_TEMPORARILY_EXHAUSTED"),
    }
)
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


def build_client(
    *, login_customer_id: str | None = None, config_path: str | None = None
) -> GoogleAdsClient:
    """Load from YAML if configured, else GOOGLE_ADS_* env (refreshes OAuth over the network)."""
    path = config_path or os.environ.get("GOOGLE_ADS_CONFIGURATION_FILE_PATH")
    try:
        if path:
            client = GoogleAdsClient.load_from_storage(path, version=API_VERSION)
        else:
            client = GoogleAdsClient.load_from_env(version=API_VERSION)
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


def _failure_pb(failure: Any) -> Any:
    """Normalise proto-plus or raw GoogleAdsFailure to the raw protobuf."""
    return failure._pb if hasattr(failure, "_pb") else failure


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
    failure: Any, status: grpc.StatusCode | None, request_id: str | None
) -> TransientAdsError | PermanentAdsError:
    """Decide transient vs permanent from GoogleAdsFailure codes plus the gRPC status."""
    failure_pb = _failure_pb(failure)
    parts: list[str] = []
    transient = status in _TRANSIENT_GRPC_CODES
    daily_quota = False
    retry_delay: float | None = None
    for error in failure_pb.errors:
        kind, name = _error_code(error)
        parts.append(f"{name}: {error.message}".strip())
        if (kind, name) in _TRANSIENT_ADS_CODES:
            transient = True
        if (kind, name) == ("quota_error", "RESOURCE_EXHAUSTED"):
            daily_quota = True
        if error.details.HasField("quota_error_details"):
            delay = error.details.quota_error_details.retry_delay
            if delay.seconds or delay.nanos:
                retry_delay = max(retry_delay or 0.0, delay.seconds + delay.nanos / 1e9)
    message = "; ".join(parts) or (status.name if status else "Google Ads error")
    if request_id:
        message += f" (request-id {request_id})"
    if transient and not daily_quota:
        return TransientAdsError(message, retry_delay=retry_delay)
    return PermanentAdsError(message)


def translate_error(err: Exception) -> TransientAdsError | PermanentAdsError:
    """Map any SDK/gRPC/api_core error to our two-class taxonomy with a short readable message."""
    if isinstance(err, GoogleAdsException):
        status = err.error.code() if hasattr(err.error, "code") else None
        return _classify_failure(err.failure, status, err.request_id)
    if isinstance(err, core_exceptions.GoogleAPICallError):
        response = getattr(err, "response", None)
        metadata = None
        if response is not None and hasattr(response, "trailing_metadata"):
            metadata = response.trailing_metadata()
        failure = _failure_from_metadata(metadata)
        status = err.grpc_status_code
        if failure is not None and failure.errors:
            return _classify_failure(failure, status, _request_id(metadata))
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


def set_ad_group_status(
    customer_id: str,
    ad_group_id: str,
    status: str,
    *,
    client: GoogleAdsClient | None = None,
    timeout: float = 20.0,
) -> str:
    """Pause/enable one ad group; returns its resource name, raising only our own error types."""
    if status not in VALID_STATUSES:
        raise ValueError(f"status must be one of {sorted(VALID_STATUSES)}, got {status!r}")
    customer_id = str(customer_id).replace("-", "")
    client = client or build_client()
    try:
        service = client.get_service("AdGroupService", version=API_VERSION)
        operation = client.get_type("AdGroupOperation", version=API_VERSION)
        ad_group = operation.update
        ad_group.resource_name = service.ad_group_path(customer_id, str(ad_group_id))
        ad_group.status = getattr(client.enums.AdGroupStatusEnum, status)
        client.copy_from(operation.update_mask, protobuf_helpers.field_mask(None, ad_group._pb))
        response = service.mutate_ad_groups(
            customer_id=customer_id, operations=[operation], timeout=timeout
        )
    except (
        GoogleAdsException,
        core_exceptions.GoogleAPICallError,
        grpc.RpcError,
    ) as err:
        raise translate_error(err) from err
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


def _server_asks_longer_than(cap: float) -> Callable[[RetryCallState], bool]:
    """Stop retrying inside the job when the server wants a longer pause than our cap.

    The job's own RQ retries (minutes apart) then honour the delay instead of a blocked worker.
    """

    def stop(retry_state: RetryCallState) -> bool:
        hint = _server_delay(retry_state)
        return bool(hint) and float(hint) > cap

    return stop


def set_ad_group_status_with_retry(
    customer_id: str,
    ad_group_id: str,
    status: str,
    *,
    retries: int = 4,
    base: float = 2.0,
    cap: float = 30.0,
    timeout: float = 20.0,
    client: GoogleAdsClient | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Retry only TransientAdsError (status changes are idempotent); re-raise the last one."""
    clients: list[GoogleAdsClient] = [client] if client is not None else []

    def attempt() -> str:
        """Build the client lazily inside the retry so OAuth transport hiccups are retried too."""
        if not clients:
            clients.append(build_client())
        return set_ad_group_status(
            customer_id, ad_group_id, status, client=clients[0], timeout=timeout
        )

    retrying = Retrying(
        retry=retry_if_exception_type(TransientAdsError),
        stop=stop_after_attempt(retries + 1) | _server_asks_longer_than(cap),
        wait=_wait_with_hint(base, cap),
        sleep=sleep,
        reraise=True,
    )
    return retrying(attempt)
