"""Local TLS gRPC stand-in for Google Ads so tests use the real GoogleAdsClient offline.

AdGroupService.MutateAdGroups (status changes, scriptable failures; an ad group held as REMOVED
refuses updates by itself) and, for the set-up page and the ad-group picker,
GoogleAdsService.SearchStream with the little GAQL those send (see `_search_stream`), and
CustomerService.ListAccessibleCustomers for choosing the account after signing in.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
import tempfile
import threading
import time
from collections import deque
from concurrent import futures
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Self

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from google.ads.googleads.client import GoogleAdsClient
from google.oauth2.credentials import Credentials
from google.protobuf import duration_pb2

from automation.google_ads.adapter import API_VERSION

ads_errors = import_module(f"google.ads.googleads.{API_VERSION}.errors.types.errors")
ad_group_service = import_module(
    f"google.ads.googleads.{API_VERSION}.services.types.ad_group_service"
)

google_ads_service = import_module(
    f"google.ads.googleads.{API_VERSION}.services.types.google_ads_service"
)

SERVICE = f"google.ads.googleads.{API_VERSION}.services.AdGroupService"
SEARCH_SERVICE = f"google.ads.googleads.{API_VERSION}.services.GoogleAdsService"
CUSTOMER_SERVICE = f"google.ads.googleads.{API_VERSION}.services.CustomerService"
FAILURE_KEY = f"google.ads.googleads.{API_VERSION}.errors.googleadsfailure-bin"
DEVELOPER_TOKEN = "devtok"
LOGIN_CUSTOMER_ID = "1234567890"

_TLS_LOCK = threading.Lock()
_TLS: tuple[bytes, bytes] | None = None

_Request = ad_group_service.MutateAdGroupsRequest.pb()
_Response = ad_group_service.MutateAdGroupsResponse.pb()
_StatusSearchRequest = google_ads_service.SearchGoogleAdsRequest.pb()
_StatusSearchResponse = google_ads_service.SearchGoogleAdsResponse.pb()
# AdGroupStatusEnum.AdGroupStatus numbers (the API reference's AdGroupStatusEnum).
STATUS_NUMBERS = {"ENABLED": 2, "PAUSED": 3, "REMOVED": 4}
_IN_LIST = re.compile(r"ad_group\.id IN \(([\d,\s]*)\)")

ad_group_status = import_module(f"google.ads.googleads.{API_VERSION}.enums.types.ad_group_status")
_SearchRequest = google_ads_service.SearchGoogleAdsStreamRequest.pb()
_SearchResponse = google_ads_service.SearchGoogleAdsStreamResponse.pb()
_Row = google_ads_service.GoogleAdsRow.pb()
customer_service = import_module(
    f"google.ads.googleads.{API_VERSION}.services.types.customer_service"
)
_AccessibleRequest = customer_service.ListAccessibleCustomersRequest.pb()
_AccessibleResponse = customer_service.ListAccessibleCustomersResponse.pb()


def _tls_material() -> tuple[bytes, bytes]:
    """Create one self-signed cert per process: gRPC reads its default roots only once."""
    global _TLS
    with _TLS_LOCK:
        if _TLS is None:
            key = ec.generate_private_key(ec.SECP256R1())
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
            now = datetime.datetime.now(datetime.UTC)
            cert = (
                x509.CertificateBuilder()
                .subject_name(name)
                .issuer_name(name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(
                    x509.SubjectAlternativeName(
                        [
                            x509.DNSName("localhost"),
                            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                        ]
                    ),
                    critical=False,
                )
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .sign(key, hashes.SHA256())
            )
            cert_pem = cert.public_bytes(serialization.Encoding.PEM)
            key_pem = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            fd, path = tempfile.mkstemp(prefix="ads-standin-", suffix=".pem")
            with os.fdopen(fd, "wb") as fh:
                fh.write(cert_pem)
            # Must happen before the process creates its first TLS channel.
            os.environ["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = path
            _TLS = (key_pem, cert_pem)
        return _TLS


def trust_standin_cert() -> None:
    """Call early (e.g. conftest import) so the stand-in's cert becomes gRPC's trust root."""
    _tls_material()


def _failure(
    kind: str,
    code: str,
    message: str,
    retry_delay: float | None = None,
    *,
    location: tuple[tuple[str, int | None], ...] = (),
) -> ads_errors.GoogleAdsFailure:
    """Build a GoogleAdsFailure like the real API sends in trailing metadata.

    `location` is the error's field path, as (field name, index or None) pairs, e.g.
    (("operations", 0), ("update", None), ("resource_name", None)).
    """
    error = ads_errors.GoogleAdsError(message=message)
    enum_field = type(error.error_code).pb(error.error_code).DESCRIPTOR.fields_by_name[kind]
    setattr(error.error_code, kind, enum_field.enum_type.values_by_name[code].number)
    if retry_delay is not None:
        error.details.quota_error_details.retry_delay = duration_pb2.Duration(
            seconds=int(retry_delay)
        )
    for field_name, index in location:
        element = ads_errors.ErrorLocation.FieldPathElement(field_name=field_name)
        if index is not None:
            element.index = index
        error.location.field_path_elements.append(element)
    return ads_errors.GoogleAdsFailure(errors=[error])


# behaviour name -> (gRPC status, error kind, enum name, message)
BEHAVIOURS: dict[str, tuple[grpc.StatusCode, str, str, str]] = {
    "transient": (
        grpc.StatusCode.UNAVAILABLE,
        "internal_error",
        "TRANSIENT_ERROR",
        "The service is temporarily unavailable.",
    ),
    "internal": (
        grpc.StatusCode.INTERNAL,
        "internal_error",
        "INTERNAL_ERROR",
        "An internal error has occurred.",
    ),
    # A permanent failure for tests of the generic permanent path (no retry, dead, one alert).
    # RequestError.RESOURCE_NOT_FOUND, "Requested resource not found."
    # (https://developers.google.com/google-ads/api/reference/rpc/v26/RequestErrorEnum.RequestError):
    # it may name another resource than the ad group, so it says nothing about the ad group
    # being gone. (This name once played an unknown ad group, which is "not_found" now.)
    "permanent": (
        grpc.StatusCode.INVALID_ARGUMENT,
        "request_error",
        "RESOURCE_NOT_FOUND",
        "Requested resource not found.",
    ),
    # An update of an ad group the account does not have. MutateError.RESOURCE_NOT_FOUND,
    # "Requested resource was not found." (https://developers.google.com/google-ads/api/
    # reference/rpc/v26/MutateErrorEnum.MutateError); as Google answered MutateAdGroups for one
    # (googleads/google-ads-python, the thread 'Request with ID "AVZ6lLU3qeXrm-6vLgdX1A" failed
    # with status "INVALID_ARGUMENT"'): status INVALID_ARGUMENT, message "Resource was not
    # found.", on field operations > update > resource_name (OPERATION_FIELDS).
    "not_found": (
        grpc.StatusCode.INVALID_ARGUMENT,
        "mutate_error",
        "RESOURCE_NOT_FOUND",
        "Resource was not found.",
    ),
    # An update of a removed ad group; also what the stand-in answers by itself for an ad group
    # it holds as REMOVED. OperationAccessDeniedError.OPERATION_NOT_PERMITTED_FOR_REMOVED_RESOURCE,
    # message as the reference words it: "This operation is not allowed because the resource is
    # removed." (https://developers.google.com/google-ads/api/reference/rpc/v26/
    # OperationAccessDeniedErrorEnum.OperationAccessDeniedError). The reference names no gRPC
    # status: assumed INVALID_ARGUMENT, the status of the not-found answer above and Google's
    # status for a request the API cannot process as sent (https://developers.google.com/
    # google-ads/api/docs/best-practices/understand-api-errors). The adapter decides by the
    # error code, whichever status comes (its tests cover PERMISSION_DENIED too).
    "removed": (
        grpc.StatusCode.INVALID_ARGUMENT,
        "operation_access_denied_error",
        "OPERATION_NOT_PERMITTED_FOR_REMOVED_RESOURCE",
        "This operation is not allowed because the resource is removed.",
    ),
    # A permanent failure that says nothing about the ad group being gone: the resource name
    # is badly formed. RequestError.RESOURCE_NAME_MALFORMED, "Resource name provided is
    # malformed." (https://developers.google.com/google-ads/api/reference/rpc/v26/
    # RequestErrorEnum.RequestError).
    "malformed": (
        grpc.StatusCode.INVALID_ARGUMENT,
        "request_error",
        "RESOURCE_NAME_MALFORMED",
        "Resource name provided is malformed.",
    ),
    "denied": (
        grpc.StatusCode.PERMISSION_DENIED,
        "authorization_error",
        "USER_PERMISSION_DENIED",
        "User doesn't have permission to access customer.",
    ),
    # Rate limit with a suggested wait (quota_error_details.retry_delay, set in _mutate):
    # https://developers.google.com/google-ads/api/docs/best-practices/rate-limits
    "rate_limited": (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "quota_error",
        "RESOURCE_TEMPORARILY_EXHAUSTED",
        "Too many requests. Retry in 7 seconds.",
    ),
    # QuotaError.RESOURCE_EXHAUSTED, "Too many requests." (QuotaErrorEnum in the API reference),
    # without a retry_delay. Usually a short-term rate limit: Google's own
    # examples/error_handling/handle_rate_exceeded_error.py (googleads/google-ads-python) retries
    # it after 10 s, 20 s, 40 s, so it is not a permanent "daily_quota".
    "rate_exceeded": (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "quota_error",
        "RESOURCE_EXHAUSTED",
        "Too many requests.",
    ),
    # DatabaseError.CONCURRENT_MODIFICATION: "Multiple requests were attempting to modify the
    # same resource at once. Retry the request." (DatabaseErrorEnum in the API reference,
    # https://developers.google.com/google-ads/api/reference/rpc/v23/DatabaseErrorEnum.DatabaseError).
    # The reference names no gRPC status; Google Ads sends its request failures as
    # INVALID_ARGUMENT, which is not transient by itself: the error code must decide.
    "concurrent_modification": (
        grpc.StatusCode.INVALID_ARGUMENT,
        "database_error",
        "CONCURRENT_MODIFICATION",
        "Multiple requests were attempting to modify the same resource at once. Retry the request.",
    ),
}


# Where in its operation a per-operation error points: Google names the operation as
# operations[i] in `location.field_path_elements` (the failure shown in Google's
# examples/error_handling/handle_partial_failure.py, googleads/google-ads-python), then the
# field. For "removed" no example shows a field, so only the operation is named.
OPERATION_FIELDS: dict[str, tuple[str, ...]] = {
    "not_found": ("update", "resource_name"),
    "removed": (),
}


@dataclass
class RecordedCall:
    """One captured call so tests can assert on exactly what the client sent."""

    request: Any  # raw MutateAdGroupsRequest protobuf
    metadata: dict[str, str | bytes] = field(default_factory=dict)
    at: float = field(default_factory=time.time)  # when the call arrived


class AdsStandIn:
    """Scriptable fake AdGroupService.MutateAdGroups served over TLS on 127.0.0.1."""

    def __init__(self, retry_delay: float = 7.0) -> None:
        """Prepare state; the server starts on __enter__."""
        self.requests: list[RecordedCall] = []
        self.port = 0
        self.retry_delay = retry_delay
        self.slow_seconds = 1.0
        self._script: deque[str] = deque()
        self._default = "ok"
        self._per_ad_group: dict[str, str] = {}
        self._lock = threading.Lock()
        self._server: grpc.Server | None = None
        # GoogleAdsService.SearchStream: the account and its ad groups, for set-up and picking.
        self.customer_name = "Elbkerzen Ads"
        self.ad_groups: dict[str, dict[str, str]] = {}
        self.searches: list[RecordedCall] = []
        self.search_behaviour = "ok"  # or "slow", or a BEHAVIOURS name: every search fails so
        # The accounts the signed-in Google user reaches directly (ListAccessibleCustomers), and
        # each account's name, whether it is a manager and (for a manager) its client accounts.
        self.accessible: list[str] = []
        self.accounts: dict[str, dict[str, Any]] = {}
        self.accessible_calls: list[RecordedCall] = []
        # What "Google" holds per ad group id: each successful mutate sets it, tests set it to
        # play a person changing an ad group by hand; GAQL searches answer from it.
        self.statuses: dict[str, str] = {}

    def add_ad_group(
        self, ad_group_id: str, name: str, campaign: str, status: str = "ENABLED"
    ) -> None:
        """An ad group the GAQL searches find (status: ENABLED, PAUSED or REMOVED)."""
        with self._lock:
            self.ad_groups[str(ad_group_id)] = {
                "name": name,
                "campaign": campaign,
                "status": status,
            }

    def add_account(
        self, customer_id: str, name: str, *, manager: bool = False, clients: tuple[str, ...] = ()
    ) -> None:
        """An account the customer_client searches find (a manager lists its `clients`)."""
        with self._lock:
            self.accounts[customer_id] = {"name": name, "manager": manager, "clients": clients}

    def _list_accessible(self, request: Any, context: grpc.ServicerContext) -> Any:
        """CustomerService.ListAccessibleCustomers: the resource names `customers/{id}` of the
        accounts the credentials reach directly, as Google's official example prints them
        (examples/account_management/list_accessible_customers.py, googleads/google-ads-python)."""
        metadata = {md.key: md.value for md in context.invocation_metadata()}
        with self._lock:
            self.accessible_calls.append(RecordedCall(request=request, metadata=metadata))
            behaviour = self.search_behaviour
            accessible = list(self.accessible)
        if behaviour != "ok":
            self._abort_with(context, behaviour)
        response = _AccessibleResponse()
        response.resource_names.extend(f"customers/{cid}" for cid in accessible)
        return response

    def _customer_clients(self, request: Any) -> Any:
        """`FROM customer_client WHERE customer_client.level <= 1` as in Google's official
        examples/account_management/get_account_hierarchy.py: the account itself at level 0,
        a manager's client accounts at level 1 (id, descriptive_name, manager, level)."""
        response = _SearchResponse()
        with self._lock:
            accounts = dict(self.accounts)
        own = str(request.customer_id)
        account = accounts.get(own, {"name": "", "manager": False, "clients": ()})
        rows = [(own, account, 0)] + [
            (cid, accounts.get(cid, {"name": "", "manager": False}), 1)
            for cid in account["clients"]
        ]
        for cid, found, level in rows:
            row = response.results.add()
            row.customer_client.id = int(cid)
            row.customer_client.descriptive_name = found["name"]
            row.customer_client.manager = bool(found["manager"])
            row.customer_client.level = level
        return response

    def reset_search(self) -> None:
        """Forget the account's ad groups, recorded searches and a scripted search failure."""
        with self._lock:
            self.ad_groups.clear()
            self.searches.clear()
            self.search_behaviour = "ok"
            self.accessible.clear()
            self.accounts.clear()
            self.accessible_calls.clear()

    @property
    def endpoint(self) -> str:
        """Host:port to pass as the client's endpoint setting."""
        return f"127.0.0.1:{self.port}"

    def script(self, behaviours: list[str], default: str = "ok") -> None:
        """Queue behaviours for the next calls; `default` applies once the queue is empty."""
        with self._lock:
            self._script = deque(behaviours)
            self._default = default

    def always(self, ad_group_id: str, behaviour: str = "permanent") -> None:
        """Make every call touching this ad group behave the same (e.g. "not_found")."""
        with self._lock:
            self._per_ad_group[ad_group_id] = behaviour

    def remove_ad_group(self, ad_group_id: str) -> None:
        """Play a person removing the ad group in Google Ads: searches then answer REMOVED
        and every update of it fails as "removed"."""
        with self._lock:
            self.statuses[str(ad_group_id)] = "REMOVED"
            if str(ad_group_id) in self.ad_groups:
                self.ad_groups[str(ad_group_id)]["status"] = "REMOVED"

    def _held_as_removed(self, ad_group_id: str) -> bool:
        """Whether "Google" holds this ad group as REMOVED (in `statuses` or `ad_groups`)."""
        group = self.ad_groups.get(ad_group_id)
        return self.statuses.get(ad_group_id) == "REMOVED" or (
            group is not None and group["status"] == "REMOVED"
        )

    def _next_behaviour(self, request: Any) -> tuple[str, int]:
        """The answer and the index of the operation it is about.

        The per-ad-group rule first, then an ad group held as REMOVED (answered "removed", as
        Google refuses any operation on a removed resource), then the scripted queue, then the
        default.
        """
        with self._lock:
            ad_group_ids = [op.update.resource_name.rsplit("/", 1)[-1] for op in request.operations]
            for index, ad_group_id in enumerate(ad_group_ids):
                if ad_group_id in self._per_ad_group:
                    return self._per_ad_group[ad_group_id], index
            for index, ad_group_id in enumerate(ad_group_ids):
                if self._held_as_removed(ad_group_id):
                    return "removed", index
            return (self._script.popleft() if self._script else self._default), 0

    def _mutate(self, request: Any, context: grpc.ServicerContext) -> Any:
        """Record the request, then answer as scripted."""
        metadata = {md.key: md.value for md in context.invocation_metadata()}
        with self._lock:
            self.requests.append(RecordedCall(request=request, metadata=metadata))
        behaviour, index = self._next_behaviour(request)
        if behaviour == "slow":
            # Answer late; a caller that gave up (its deadline passed) frees the thread at once.
            until = time.monotonic() + self.slow_seconds
            while context.is_active() and time.monotonic() < until:
                time.sleep(0.01)
            behaviour = "ok"
        if behaviour == "bare_unavailable":
            context.abort(grpc.StatusCode.UNAVAILABLE, "Service unavailable (no failure details).")
        if behaviour == "ok":
            response = _Response()
            names = {number: name for name, number in STATUS_NUMBERS.items()}
            for op in request.operations:
                response.results.add(resource_name=op.update.resource_name)
                with self._lock:
                    ad_group_id = op.update.resource_name.rsplit("/", 1)[-1]
                    self.statuses[ad_group_id] = names.get(op.update.status, "UNKNOWN")
            return response
        status, kind, code, message = BEHAVIOURS[behaviour]
        delay = self.retry_delay if code == "RESOURCE_TEMPORARILY_EXHAUSTED" else None
        location: tuple[tuple[str, int | None], ...] = ()
        if behaviour in OPERATION_FIELDS:
            fields = OPERATION_FIELDS[behaviour]
            location = (("operations", index), *((name, None) for name in fields))
        failure = _failure(kind, code, message, delay, location=location)
        context.set_trailing_metadata(
            (
                (FAILURE_KEY, ads_errors.GoogleAdsFailure.serialize(failure)),
                ("request-id", f"standin-{len(self.requests)}"),
            )
        )
        context.abort(status, message)

    def _abort_with(self, context: grpc.ServicerContext, behaviour: str) -> None:
        """Fail the call as BEHAVIOURS[behaviour] describes, failure details included."""
        status, kind, code, message = BEHAVIOURS[behaviour]
        delay = self.retry_delay if code == "RESOURCE_TEMPORARILY_EXHAUSTED" else None
        failure = _failure(kind, code, message, delay)
        context.set_trailing_metadata(
            (
                (FAILURE_KEY, ads_errors.GoogleAdsFailure.serialize(failure)),
                ("request-id", f"standin-search-{len(self.searches)}"),
            )
        )
        context.abort(status, message)

    def _search_stream(self, request: Any, context: grpc.ServicerContext) -> Any:
        """GoogleAdsService.SearchStream: one batch of GoogleAdsRows for the GAQL it understands.

        Understood (https://developers.google.com/google-ads/api/docs/query/grammar): `FROM
        customer` (one row: customer.id, customer.descriptive_name) and `FROM ad_group` with
        conditions joined by AND (the grammar has no OR): `ad_group.id IN (...)`, `ad_group.name`
        or `campaign.name LIKE '...'` (case-insensitive; `%` any run, `_` one character, `[x]`
        the literal x: "Case sensitivity" and "Rules and limitations" in the GAQL docs),
        `ad_group.status != 'REMOVED'`, then `ORDER BY` (ignored: rows come sorted by campaign
        and ad group name) and `LIMIT n`. Rows carry ad_group.id/name/status and campaign.name.
        Anything else fails as INVALID_ARGUMENT, the way the API refuses a bad query.
        """
        metadata = {md.key: md.value for md in context.invocation_metadata()}
        with self._lock:
            self.searches.append(RecordedCall(request=request, metadata=metadata))
            behaviour = self.search_behaviour
            groups = dict(self.ad_groups)
        if behaviour == "slow":
            # Answer late, like a slow Google; a caller whose deadline passed frees the thread.
            until = time.monotonic() + self.slow_seconds
            while context.is_active() and time.monotonic() < until:
                time.sleep(0.01)
            behaviour = "ok"
        if behaviour != "ok":
            self._abort_with(context, behaviour)
        query = " ".join(request.query.split())
        match = re.fullmatch(
            r"SELECT (?P<fields>.+?) FROM (?P<resource>\w+)(?: WHERE (?P<where>.+?))?"
            r"(?: ORDER BY .+?)?(?: LIMIT (?P<limit>\d+))?",
            query,
        )
        if not match:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"stand-in cannot parse {query!r}")
        if match["resource"] == "customer_client":
            if (match["where"] or "") != "customer_client.level <= 1":
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"stand-in: {match['where']!r}")
            yield self._customer_clients(request)
            return
        response = _SearchResponse()
        if match["resource"] == "customer":
            row = response.results.add()
            row.customer.id = int(request.customer_id)
            row.customer.descriptive_name = self.customer_name
            yield response
            return
        if match["resource"] != "ad_group":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"stand-in has no {match['resource']}")
        rows = sorted(groups.items(), key=lambda kv: (kv[1]["campaign"], kv[1]["name"]))
        for condition in re.split(r" AND ", match["where"] or "") if match["where"] else []:
            keep = _condition(condition)
            if keep is None:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"stand-in: {condition!r}")
            rows = [(gid, group) for gid, group in rows if keep(gid, group)]
        if match["limit"]:
            rows = rows[: int(match["limit"])]
        for gid, group in rows:
            row = response.results.add()
            row.ad_group.id = int(gid)
            row.ad_group.name = group["name"]
            row.ad_group.status = ad_group_status.AdGroupStatusEnum.AdGroupStatus[group["status"]]
            row.campaign.name = group["campaign"]
        yield response

    def _search(self, request: Any, context: grpc.ServicerContext) -> Any:
        """GoogleAdsService.Search for `SELECT ad_group.id, ad_group.status FROM ad_group WHERE
        ad_group.id IN (...)`, `ad_group.name` and `campaign.name` selectable too (from
        `add_ad_group`): one GoogleAdsRow per known ad group with the selected fields set,
        unknown ids left out, no next_page_token (one page; the reference
        of SearchGoogleAdsResponse: https://developers.google.com/google-ads/api/reference/rpc/
        v26/SearchGoogleAdsResponse; the query as in Google's examples/basic_operations/
        get_ad_groups.py, googleads/google-ads-python)."""
        metadata = {md.key: md.value for md in context.invocation_metadata()}
        with self._lock:
            self.searches.append(RecordedCall(request=request, metadata=metadata))
            statuses = dict(self.statuses)
            groups = {gid: dict(group) for gid, group in self.ad_groups.items()}
        match = _IN_LIST.search(request.query)
        fields = re.match(r"SELECT (.+?) FROM ad_group ", request.query)
        selected = {name.strip() for name in fields.group(1).split(",")} if fields else set()
        if not {"ad_group.id", "ad_group.status"} <= selected or match is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"stand-in: unexpected {request.query}")
        if selected - {"ad_group.id", "ad_group.status", "ad_group.name", "campaign.name"}:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"stand-in: unexpected {request.query}")
        response = _StatusSearchResponse()
        for ad_group_id in (part.strip() for part in match.group(1).split(",")):
            if ad_group_id in statuses:
                row = response.results.add()
                row.ad_group.resource_name = (
                    f"customers/{request.customer_id}/adGroups/{ad_group_id}"
                )
                row.ad_group.id = int(ad_group_id)
                row.ad_group.status = STATUS_NUMBERS[statuses[ad_group_id]]
                # Only the selected fields are set, as in the API's rows.
                group = groups.get(ad_group_id, {})
                if "ad_group.name" in selected:
                    row.ad_group.name = group.get("name", "")
                if "campaign.name" in selected:
                    row.campaign.name = group.get("campaign", "")
        return response

    def __enter__(self) -> Self:
        """Start the TLS server on an ephemeral port."""
        key_pem, cert_pem = _tls_material()
        handler = grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "MutateAdGroups": grpc.unary_unary_rpc_method_handler(
                    self._mutate,
                    request_deserializer=_Request.FromString,
                    response_serializer=_Response.SerializeToString,
                )
            },
        )
        search = grpc.method_handlers_generic_handler(
            SEARCH_SERVICE,
            {
                "SearchStream": grpc.unary_stream_rpc_method_handler(
                    self._search_stream,
                    request_deserializer=_SearchRequest.FromString,
                    response_serializer=_SearchResponse.SerializeToString,
                ),
                "Search": grpc.unary_unary_rpc_method_handler(
                    self._search,
                    request_deserializer=_StatusSearchRequest.FromString,
                    response_serializer=_StatusSearchResponse.SerializeToString,
                ),
            },
        )
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        accessible = grpc.method_handlers_generic_handler(
            CUSTOMER_SERVICE,
            {
                "ListAccessibleCustomers": grpc.unary_unary_rpc_method_handler(
                    self._list_accessible,
                    request_deserializer=_AccessibleRequest.FromString,
                    response_serializer=_AccessibleResponse.SerializeToString,
                )
            },
        )
        self._server.add_generic_rpc_handlers((handler, search, accessible))
        creds = grpc.ssl_server_credentials([(key_pem, cert_pem)])
        self.port = self._server.add_secure_port("127.0.0.1:0", creds)
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop the server immediately."""
        if self._server is not None:
            self._server.stop(grace=None)
            self._server = None


def _gaql_text(literal: str) -> str:
    """The value of a GAQL string literal ('...' with backslash escapes)."""
    return re.sub(r"\\(.)", r"\1", literal[1:-1])


def _like(pattern: str) -> re.Pattern[str]:
    """GAQL LIKE as a case-insensitive regex: % any run, _ one character, [x] the literal x."""
    parts = re.findall(r"\[(.)\]|(%)|(_)|(.)", pattern)
    regex = "".join(
        re.escape(lit) if lit else ".*" if pct else "." if one else re.escape(other)
        for lit, pct, one, other in parts
    )
    return re.compile(regex, re.IGNORECASE | re.DOTALL)


def _condition(text: str) -> Any:
    """One WHERE condition as a predicate over (ad group id, ad group), None if not understood."""
    if m := re.fullmatch(r"ad_group\.id IN \(([\d, ]+)\)", text):
        wanted = {part.strip() for part in m[1].split(",")}
        return lambda gid, group: gid in wanted
    if m := re.fullmatch(r"(ad_group|campaign)\.name LIKE ('(?:[^'\\]|\\.)*')", text):
        regex, key = _like(_gaql_text(m[2])), "name" if m[1] == "ad_group" else "campaign"
        return lambda gid, group: regex.fullmatch(group[key]) is not None
    if m := re.fullmatch(r"ad_group\.status != '(\w+)'", text):
        return lambda gid, group: group["status"] != m[1]
    return None


def make_test_client(standin: AdsStandIn, *, use_proto_plus: bool = True) -> GoogleAdsClient:
    """Build the real GoogleAdsClient, offline, pointed at the stand-in."""
    _tls_material()
    return GoogleAdsClient(
        credentials=Credentials(token="x"),
        developer_token=DEVELOPER_TOKEN,
        login_customer_id=LOGIN_CUSTOMER_ID,
        use_proto_plus=use_proto_plus,
        endpoint=standin.endpoint,
        version=API_VERSION,
    )
