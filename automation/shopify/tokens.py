"""Where the Admin API access token comes from, kept apart from the requests that carry it: a
static token (apps created in the Shopify admin before 2026) or the client credentials grant (Dev
Dashboard apps). Plain values in and out; no Django here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import requests

from automation.shopify.transport import (
    _TRANSPORT_ATTEMPTS,
    ShopifyAdminError,
    ShopifyCredentialsError,
    _error_text,
    _post_retrying,
    _ServerBusy,
)

# The client credentials grant (Dev Dashboard apps, since 2026-01-01): POST form fields
# grant_type=client_credentials, client_id, client_secret to the shop's token endpoint; the answer
# is {"access_token", "scope", "expires_in": 86399} and there is no refresh token: fetch again.
# https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens/client-credentials-grant
# https://shopify.dev/docs/apps/build/authentication-authorization/client-secrets
ACCESS_TOKEN_PATH = "/admin/oauth/access_token"  # noqa: S105 (a URL path, not a secret)
# Fetch a new token this long before Shopify's `expires_in` runs out, so no request of a run
# carries a token that expires on the way.
TOKEN_RENEW_MARGIN = 300  # seconds


class TokenSource(Protocol):
    """Where the adapter gets its `X-Shopify-Access-Token` from."""

    def current(self) -> str:
        """A token to send now (may fetch one)."""
        ...

    def renew(self, rejected: str) -> str | None:
        """Shopify answered 401 to `rejected`: a fresh token to try once more, or None if none."""
        ...


class StaticToken:
    """A token created in the Shopify admin (legacy custom apps): it does not expire."""

    def __init__(self, value: str) -> None:
        self._value = value

    def __repr__(self) -> str:
        return "StaticToken(***)"

    def current(self) -> str:
        return self._value

    def renew(self, rejected: str) -> str | None:
        return None  # nothing to fetch: a 401 on a static token is final


@dataclass(frozen=True)
class AccessToken:
    """One answer of the client credentials grant."""

    value: str = field(repr=False)  # a secret: never in logs or reprs
    scope: str
    expires_in: int  # seconds, as Shopify said (86399 per its documentation)


class TokenCache(Protocol):
    """Shared storage for the token (a Redis client fits): values expire by themselves."""

    def get(self, key: str) -> bytes | str | None: ...

    def set(self, key: str, value: str, *, px: int) -> Any: ...

    def delete(self, key: str) -> Any: ...


def request_access_token(
    base_url: str,
    client_id: str,
    client_secret: str,
    *,
    session: requests.Session | None = None,
    timeout: float = 10.0,
    attempts: int = _TRANSPORT_ATTEMPTS,
    sleep: Callable[[float], None] = time.sleep,
    credentials_hint: str = "the app's client id and secret",
) -> AccessToken:
    """Exchange the app's client id and secret for an Admin API access token.

    Why it retries 5xx and network errors: every call mints a new token and leaves earlier ones
    valid, so sending the request again is harmless. A refusal (400/401/403, e.g. Shopify's
    `{"error": "invalid_client", "error_description": ...}`) is a configuration error and raises
    `ShopifyCredentialsError` naming `credentials_hint`; waiting will not fix it.
    """
    url = f"{base_url.rstrip('/')}{ACCESS_TOKEN_PATH}"
    form = {
        "grant_type": "client_credentials",
        "client_id": client_id,
        "client_secret": client_secret,
    }
    http = session or requests.Session()

    try:
        response = _post_retrying(
            lambda: http.post(
                url, data=form, headers={"Accept": "application/json"}, timeout=timeout
            ),
            retry_on=(requests.ConnectionError, requests.Timeout, _ServerBusy),
            sleep=sleep,
            what="Shopify's token endpoint",
            url=url,
            attempts=attempts,
        )
    finally:
        if session is None:
            http.close()
    status = response.status_code
    try:
        body = response.json()
    except ValueError:
        body = None
    if status in (400, 401, 403):
        raise ShopifyCredentialsError(
            f"Shopify refused the client credentials (HTTP {status}"
            f"{_oauth_error_text(body)}): check {credentials_hint}",
            status=status,
            code=str(body.get("error")) if isinstance(body, dict) and body.get("error") else None,
        )
    if status >= 400:
        raise ShopifyAdminError(
            f"HTTP {status} from Shopify's token endpoint ({url}){_oauth_error_text(body)}",
            status=status,
        )
    if not isinstance(body, dict):
        raise ShopifyAdminError(f"Shopify's token endpoint answered HTTP {status} without JSON")
    value, expires_in = body.get("access_token"), body.get("expires_in")
    if not isinstance(value, str) or not value:
        raise ShopifyAdminError("Shopify's token endpoint answered without an access_token")
    if isinstance(expires_in, bool) or not isinstance(expires_in, int | float) or expires_in <= 0:
        raise ShopifyAdminError(f"Shopify's token endpoint answered expires_in={expires_in!r}")
    return AccessToken(value=value, scope=str(body.get("scope") or ""), expires_in=int(expires_in))


def _oauth_error_text(body: Any) -> str:
    """`: invalid_client (Client authentication failed)` from either error shape Shopify uses."""
    if not isinstance(body, dict):
        return ""
    if body.get("error"):
        description = body.get("error_description")
        text = f"{body['error']} ({description})" if description else str(body["error"])
    elif body.get("errors"):
        text = _error_text(body["errors"])
    else:
        return ""
    return f": {text[:200]}"


class ClientCredentialsTokens:
    """Tokens by the client credentials grant, shared through `cache` by every process.

    A token is kept until TOKEN_RENEW_MARGIN seconds before Shopify's `expires_in` ends: the cache
    entry simply expires then (TTL = expires_in - margin), and the next `current()` fetches anew.
    Two processes that find the cache empty at the same moment both fetch; that is harmless,
    since each token Shopify issues stays valid for its own lifetime, and the last one written
    wins the cache. Should a new token ever invalidate an older one, the loser's next request
    gets a 401, and `renew` fetches once more. Without a cache (or while it fails) the token is
    kept in this object only.
    """

    def __init__(
        self,
        base_url: str,
        client_id: str,
        client_secret: str,
        *,
        cache: TokenCache | None = None,
        cache_key: str = "",
        renew_margin: float = TOKEN_RENEW_MARGIN,
        clock: Callable[[], float] = time.monotonic,
        request: Callable[..., AccessToken] = request_access_token,
        credentials_hint: str = "the app's client id and secret",
        on_fetch: Callable[[AccessToken], None] | None = None,
        timeout: float = 10.0,
        attempts: int = _TRANSPORT_ATTEMPTS,
    ) -> None:
        self.base_url = base_url
        # Each fetch: `attempts` requests of at most `timeout` seconds (a page: one short one).
        self.timeout = timeout
        self.attempts = attempts
        self.client_id = client_id
        self._client_secret = client_secret
        self._cache = cache
        self.cache_key = cache_key or f"shopify:admin-token:{base_url.rstrip('/')}:{client_id}"
        self._margin = renew_margin
        self._clock = clock
        self._request = request
        self._hint = credentials_hint
        self._on_fetch = on_fetch
        self._memo: tuple[str, float] | None = None  # (token, our clock's deadline)
        self.fetched = 0  # tokens fetched by this object, for logs and tests

    def __repr__(self) -> str:
        return f"ClientCredentialsTokens(client_id={self.client_id!r}, key={self.cache_key!r})"

    def current(self) -> str:
        cached = self._cache.get(self.cache_key) if self._cache is not None else None
        if cached:
            return cached.decode() if isinstance(cached, bytes) else str(cached)
        if self._memo and self._memo[1] > self._clock():
            return self._memo[0]
        return self._fetch()

    def renew(self, rejected: str) -> str:
        """Drop the rejected token (unless another process already replaced it) and fetch anew."""
        if self._cache is not None:
            cached = self._cache.get(self.cache_key)
            if cached and (cached.decode() if isinstance(cached, bytes) else cached) == rejected:
                self._cache.delete(self.cache_key)
        self._memo = None
        return self._fetch()

    def _fetch(self) -> str:
        token = self._request(
            self.base_url,
            self.client_id,
            self._client_secret,
            credentials_hint=self._hint,
            timeout=self.timeout,
            attempts=self.attempts,
        )
        self.fetched += 1
        keep = token.expires_in - self._margin
        # A token shorter-lived than the margin (never seen: Shopify documents 86399 s) is used
        # for this one request and not kept.
        if keep > 0:
            self._memo = (token.value, self._clock() + keep)
            if self._cache is not None:
                self._cache.set(self.cache_key, token.value, px=int(keep * 1000))
        if self._on_fetch is not None:
            self._on_fetch(token)
        return token.value
