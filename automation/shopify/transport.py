"""One Admin GraphQL request to Shopify: paced by our model of its cost bucket, retried, and
turned into our errors, so the query methods deal only in documents and answers.

The costs Shopify reported are learned here, from its answers; the client prices a query
before it is sent (`queries.ShopifyAdmin.estimate_cost`) and hands the price in, so the transport
never calls back into the queries. `_post_retrying` is here because the token endpoint shares
it. Plain values in and out; no Django here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import requests
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

if TYPE_CHECKING:
    from automation.shopify.tokens import TokenSource

# Pinned so Shopify's quarterly releases never change the wire API silently; bump deliberately.
API_VERSION = "2026-07"

THROTTLED = "THROTTLED"
MAX_COST_EXCEEDED = "MAX_COST_EXCEEDED"
MUTATION_COST = 10  # Shopify's documented cost of a mutation

_TRANSPORT_ATTEMPTS = 3
_TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
_DEFAULT_RETRY_AFTER = 1.0  # seconds, when a 429 carries no usable Retry-After
_MIN_THROTTLED_WAIT = 0.05  # seconds, when THROTTLED arrives although our model says it fits
_COST_IN_MESSAGE = re.compile(r"[Qq]uery cost is (\d+)")


class ShopifyAdminError(Exception):
    """An Admin API failure waiting cannot fix soon: bad token, bad query, unusable answer."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status  # HTTP status, when the failure came with one
        self.code = code  # GraphQL error code (e.g. ACCESS_DENIED), when Shopify named one


class ShopifyThrottled(ShopifyAdminError):
    """Still throttled after the bounded retries: the job should try again later."""

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message, code=THROTTLED)
        self.retry_after = retry_after  # our best guess of the wait in seconds


class ShopifyCredentialsError(ShopifyAdminError):
    """Shopify refused the app's client id or secret: only a configuration change helps."""


class _CostExceeded(ShopifyAdminError):
    """Shopify refused the query as too expensive: a batch is split, a single query reports it.

    A ShopifyAdminError, so a query nobody splits (a search, a listing) fails as ours too.
    """

    def __init__(self, message: str):
        super().__init__(message, code=MAX_COST_EXCEEDED)


class _ServerBusy(Exception):
    """Internal: a 5xx answer, worth another attempt for read-only queries."""

    def __init__(self, response: requests.Response):
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


class CostBucket:
    """Our model of Shopify's GraphQL cost bucket: the last throttleStatus, refilled on our clock.

    Every answer reports `extensions.cost.throttleStatus` {maximumAvailable, currentlyAvailable,
    restoreRate}; between answers the bucket refills at restoreRate points per second up to
    maximumAvailable, and a query runs only if the bucket holds its requested cost
    (https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits,
    https://shopify.dev/docs/api/usage/limits#the-leaky-bucket-algorithm). Until the first
    report the bucket is unknown and nothing waits.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.maximum: float | None = None
        self.available = 0.0
        self.rate = 0.0
        self.observed_at = 0.0

    def observe(self, throttle_status: object) -> None:
        """Take a reported throttleStatus; a malformed one only costs pacing, so it is ignored."""
        if not isinstance(throttle_status, dict):
            return
        try:
            maximum = float(throttle_status["maximumAvailable"])
            available = float(throttle_status["currentlyAvailable"])
            rate = float(throttle_status["restoreRate"])
        except (KeyError, TypeError, ValueError):
            return
        self.maximum, self.available, self.rate = maximum, available, rate
        self.observed_at = self._clock()  # after the server measured: errs on the safe side

    def limit(self, cap: int) -> int:
        """The most one query may request: `cap` (Shopify's single-query limit) and the size."""
        if self.maximum is None:
            return cap
        return min(cap, int(self.maximum))

    def wait_for(self, cost: float) -> float:
        """Seconds until the bucket holds `cost` (0 if unknown or enough now)."""
        if self.maximum is None or self.rate <= 0:
            return 0.0
        cost = min(cost, self.maximum)
        elapsed = max(0.0, self._clock() - self.observed_at)
        available = min(self.maximum, self.available + elapsed * self.rate)
        wait = (cost - available) / self.rate
        return wait if wait > 1e-6 else 0.0  # float dust is not worth a sleep


def _post_retrying(
    post: Callable[[], requests.Response],
    *,
    retry_on: tuple[type[BaseException], ...],
    sleep: Callable[[float], None],
    what: str,
    url: str,
    attempts: int = _TRANSPORT_ATTEMPTS,
) -> requests.Response:
    """Send `post` with a few jittered retries on `retry_on` (`attempts` in all); a 5xx that
    lasts, or a network error, becomes a ShopifyAdminError naming `what` (the token endpoint
    and GraphQL share this)."""

    def attempt() -> requests.Response:
        response = post()
        if response.status_code in _TRANSIENT_STATUSES:
            raise _ServerBusy(response)
        return response

    retrying = Retrying(
        retry=retry_if_exception_type(retry_on),
        stop=stop_after_attempt(attempts),
        wait=wait_random_exponential(multiplier=0.5, max=8),
        sleep=sleep,
        reraise=True,
    )
    try:
        return retrying(attempt)
    except _ServerBusy as err:
        status = err.response.status_code
        raise ShopifyAdminError(f"{what} answered HTTP {status}", status=status) from err
    except requests.RequestException as err:
        raise ShopifyAdminError(f"{what} unreachable: {type(err).__name__} ({url})") from err


def _retry_after(response: requests.Response) -> float | None:
    """Seconds from a Retry-After header given in seconds; None when absent or a date."""
    try:
        value = float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
    return value if value >= 0 else None


def _error_codes(errors: Any) -> list[str]:
    """The `extensions.code` of every GraphQL error (Shopify puts THROTTLED there)."""
    if not isinstance(errors, list):
        return []
    return [
        str((error.get("extensions") or {}).get("code", ""))
        for error in errors
        if isinstance(error, dict)
    ]


def _error_text(errors: Any) -> str:
    """A short readable message from `errors`, which Shopify sends as a list or a string."""
    if isinstance(errors, list):
        parts = []
        for error in errors[:3]:
            if isinstance(error, dict):
                code = (error.get("extensions") or {}).get("code")
                message = str(error.get("message", "")).strip().splitlines()[0:1]
                text = message[0] if message else "error"
                parts.append(f"{code}: {text}" if code else text)
            else:
                parts.append(str(error))
        text = "; ".join(parts)
    else:
        text = str(errors)
    return text[:300]


class AdminTransport:
    """Sends Admin GraphQL operations for one shop, inside the cost bucket instead of into it.

    Why it paces itself: Shopify meters GraphQL by calculated query cost in a leaky bucket (Standard
    plan: 1,000 points, 100 restored per second). A query runs only if the bucket holds its
    *requested* cost; afterwards the unused part is refunded, so the bucket loses the *actual* cost.
    Every answer reports `extensions.cost`, so we keep a local model of the bucket, estimate each
    query's requested cost before sending it (learned from earlier answers of the same shape), and
    sleep exactly until the bucket holds it. THROTTLED answers and HTTP 429 are still handled (a
    computed wait, then the same query again, a bounded number of times), but should be rare.

    The query methods are `ShopifyAdmin`'s (queries); this holds the session, the token source,
    the bucket model and the counters, and turns every failure into a ShopifyAdminError.
    """

    def __init__(
        self,
        base_url: str,
        tokens: TokenSource,
        api_version: str = API_VERSION,
        *,
        session: requests.Session | None = None,
        timeout: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        max_query_cost: int = 1000,
        max_retries: int = 5,
        transport_attempts: int = _TRANSPORT_ATTEMPTS,
    ) -> None:
        self.url = f"{base_url.rstrip('/')}/admin/api/{api_version}/graphql.json"
        self.api_version = api_version
        self.timeout = timeout
        self.max_query_cost = max_query_cost
        self.max_retries = max_retries  # further tries of a throttled query
        # Tries of one request on a network error or a 5xx (reads only); a page the merchant
        # waits on sends once: each try may take `timeout`.
        self.transport_attempts = transport_attempts
        self._tokens = tokens
        self._session = session or requests.Session()
        self._sleep = sleep
        self.bucket = CostBucket(clock)  # paces every query; its own tests use a fake clock
        # (query kind, page size) → {number of ids: requestedQueryCost Shopify reported}
        self._costs: dict[tuple[str, int], dict[int, int]] = {}
        # Counters for logs and the benchmark.
        self.queries = 0  # HTTP requests sent, retries included
        self.actual_cost = 0  # sum of actualQueryCost
        self.throttled = 0  # THROTTLED answers and 429s received
        self.waited = 0.0  # seconds slept for the bucket (pacing and throttle waits)
        self.token_renewals = 0  # 401s answered by fetching a new token and sending again

    # --- cost model ------------------------------------------------------------------------

    def _cost_limit(self) -> int:
        """The most one query may request: Shopify's single-query cap, and the bucket's size."""
        return self.bucket.limit(self.max_query_cost)

    def _pause(self, seconds: float) -> None:
        """Sleep for the bucket, counted so the benchmark can show where time went."""
        if seconds > 0:
            self.waited += seconds
            self._sleep(seconds)

    def _observe(self, body: dict[str, Any], kind: str, count: int, first: int) -> int | None:
        """Update the bucket model and cost memory from `extensions.cost`; return requested."""
        cost = (body.get("extensions") or {}).get("cost")
        if not isinstance(cost, dict):
            return None
        self.bucket.observe(cost.get("throttleStatus"))
        actual = cost.get("actualQueryCost")
        if isinstance(actual, int | float):
            self.actual_cost += int(actual)
        requested = cost.get("requestedQueryCost")
        if isinstance(requested, int | float):
            self._costs.setdefault((kind, first), {})[count] = int(requested)
            return int(requested)
        return None

    # --- transport -------------------------------------------------------------------------

    def _send_operation(
        self,
        query: str,
        variables: dict[str, Any],
        *,
        kind: str,
        estimate: int,
        count: int = 1,
        first: int = 0,
        mutation: bool = False,
    ) -> dict[str, Any]:
        """Send one GraphQL operation when the bucket can hold its `estimate` (the caller's
        price, replaced by Shopify's once it answers); return `data` or raise ours."""
        last_wait: float | None = None
        for attempt in range(self.max_retries + 1):
            self._pause(self.bucket.wait_for(estimate))
            response = self._post({"query": query, "variables": variables}, idempotent=not mutation)
            if response.status_code == 429:
                self.throttled += 1
                last_wait = _retry_after(response)
                if last_wait is None:
                    last_wait = self.bucket.wait_for(estimate) or _DEFAULT_RETRY_AFTER
                if attempt < self.max_retries:
                    self._pause(last_wait)
                continue
            body = self._json(response)
            requested = self._observe(body, kind, count, first)
            if requested is not None:
                estimate = requested
            errors = body.get("errors")
            if not errors:
                data = body.get("data")
                if not isinstance(data, dict):
                    raise ShopifyAdminError("Shopify answer has neither data nor errors")
                return data
            codes = _error_codes(errors)
            if THROTTLED in codes:
                self.throttled += 1
                last_wait = max(self.bucket.wait_for(estimate), _MIN_THROTTLED_WAIT)
                if attempt < self.max_retries:
                    self._pause(last_wait)
                continue
            if MAX_COST_EXCEEDED in codes:
                self._learn_refused_cost(errors, kind, count, first)
                raise _CostExceeded(_error_text(errors))
            code = next((c for c in codes if c), None)
            raise ShopifyAdminError(f"GraphQL error: {_error_text(errors)}", code=code)
        raise ShopifyThrottled(
            f"Shopify throttled the query {self.max_retries + 1} times in a row",
            retry_after=last_wait,
        )

    def _learn_refused_cost(self, errors: list[Any], kind: str, count: int, first: int) -> None:
        """Remember the cost Shopify named when refusing, so the split is sized right."""
        cost = None
        for error in errors:
            if not isinstance(error, dict):
                continue
            extensions = error.get("extensions") or {}
            if isinstance(extensions.get("cost"), int | float):
                cost = int(extensions["cost"])
                break
            match = _COST_IN_MESSAGE.search(str(error.get("message", "")))
            if match:
                cost = int(match.group(1))
                break
        if cost is None:  # unknown: at least make sure the same batch is not tried again whole
            cost = self._cost_limit() + 1
        self._costs.setdefault((kind, first), {})[count] = max(cost, self._cost_limit() + 1)

    def _post(self, payload: dict[str, Any], *, idempotent: bool) -> requests.Response:
        """POST with the current token; on a 401, once more with a freshly fetched token.

        Why once: an expired or revoked client-credentials token is fixed by one new token
        (Shopify's own shopify_app gem does the same: `with_token_refetch` retries a 401 once).
        A second 401 means the app lost its access, and asking again would only loop. Resending
        is safe even for a mutation: Shopify refused it before running it.
        """
        token = self._tokens.current()
        response = self._send(payload, token, idempotent=idempotent)
        if response.status_code != 401:
            return response
        fresh = self._tokens.renew(token)
        if fresh is None:
            return response  # a static token: `_json` explains the 401
        self.token_renewals += 1
        response = self._send(payload, fresh, idempotent=idempotent)
        if response.status_code == 401:
            raise ShopifyAdminError(
                "HTTP 401: Shopify rejected a freshly fetched Admin API access token too "
                "(app uninstalled from the shop, or its access revoked?)",
                status=401,
            )
        return response

    def _send(self, payload: dict[str, Any], token: str, *, idempotent: bool) -> requests.Response:
        """POST with a few jittered retries on network errors and 5xx (reads only)."""
        retry_on: tuple[type[BaseException], ...] = (
            (requests.ConnectionError, requests.Timeout, _ServerBusy)
            if idempotent
            else (requests.ConnectTimeout,)  # a mutation may have landed: never resend it
        )
        headers = {"X-Shopify-Access-Token": token, "Accept": "application/json"}

        def post() -> requests.Response:
            self.queries += 1
            return self._session.post(self.url, json=payload, headers=headers, timeout=self.timeout)

        return _post_retrying(
            post,
            retry_on=retry_on,
            sleep=self._sleep,
            what="Shopify Admin API",
            url=self.url,
            attempts=self.transport_attempts,
        )

    def _json(self, response: requests.Response) -> dict[str, Any]:
        """The JSON body of a 2xx answer; any other status becomes a short ShopifyAdminError."""
        status = response.status_code
        if status == 401:
            raise ShopifyAdminError(
                "HTTP 401: Shopify rejected the Admin API access token (wrong or revoked token)",
                status=status,
            )
        if status == 403:
            raise ShopifyAdminError(
                "HTTP 403: the Admin API access token lacks a required scope for this request",
                status=status,
            )
        if status == 404:
            raise ShopifyAdminError(
                f"HTTP 404: no Admin GraphQL API at {self.url} (check shop URL and API version)",
                status=status,
            )
        if status >= 400:
            raise ShopifyAdminError(
                f"HTTP {status} from Shopify Admin API: {response.text[:200]}", status=status
            )
        try:
            body = response.json()
        except ValueError as err:
            raise ShopifyAdminError(f"Shopify answered HTTP {status} without JSON") from err
        if not isinstance(body, dict):
            raise ShopifyAdminError("Shopify answered with JSON that is not an object")
        return body
