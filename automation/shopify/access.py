"""How we reach the shop's Admin API, and who owns its webhook subscriptions: the one home.

Two kinds of app give Admin API access:
- apps created in the Shopify admin before 2026 show a static token: `SHOPIFY_ADMIN_TOKEN` (or
  entered on the set-up page);
- Dev Dashboard apps (the only kind created since 2026-01-01) have a client id and secret:
  `SHOPIFY_CLIENT_ID` + `SHOPIFY_CLIENT_SECRET` (or entered on the set-up page, read through
  automation.platform.connections), exchanged by the client credentials grant for a
  token that lives 24 hours (`expires_in` 86399) and comes without a refresh token
  (https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens/client-credentials-grant).
The static token wins when both are set: it needs no fetch, and a merchant who still has one
set it on purpose. A client-credentials token is kept in Redis, shared by every web and worker
process, until 5 minutes before it expires (automation.shopify.tokens.ClientCredentialsTokens).

Webhook subscriptions are ours to check and heal (`SHOPIFY_WEBHOOKS_MANAGED_BY=api`) unless the
app declares them in its shopify.app.toml (`toml`): those app-scoped subscriptions are not listed
by the `webhookSubscriptions` query, so "healing" would subscribe every topic a second time
(https://shopify.dev/docs/apps/build/webhooks/subscribe#app-specific-vs-shop-specific-subscriptions).
"""

from __future__ import annotations

import enum
import logging
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext
from redis.exceptions import RedisError

from automation.platform import connections
from automation.platform.queues import redis_client
from automation.shopify.queries import ShopifyAdmin
from automation.shopify.tokens import AccessToken, ClientCredentialsTokens, StaticToken, TokenSource

logger = logging.getLogger(__name__)

CREDENTIALS_HINT = "SHOPIFY_CLIENT_ID and SHOPIFY_CLIENT_SECRET"


class Access(enum.StrEnum):
    """The way we authenticate at the Admin API."""

    STATIC = "static"  # the token shown by an app created in the Shopify admin
    CLIENT_CREDENTIALS = "client_credentials"


class WebhookManager(enum.StrEnum):
    """Who creates the shop's webhook subscriptions (`SHOPIFY_WEBHOOKS_MANAGED_BY`)."""

    API = "api"  # we: the nightly run checks them and re-creates missing ones
    TOML = "toml"  # the app's shopify.app.toml (app-scoped): we never create any


def access() -> Access | None:
    """How we reach the Admin API, or None while neither way is configured."""
    values = connections.current()
    if values.shopify_admin_token:
        return Access.STATIC
    if values.shopify_client_id and values.shopify_client_secret:
        return Access.CLIENT_CREDENTIALS
    return None


def is_configured() -> bool:
    """Whether the nightly reconciliation can read the shop (any of the two ways)."""
    return access() is not None


def missing_settings() -> str:
    """What to set, for "not configured" messages (empty when configured)."""
    if is_configured():
        return ""
    if connections.current().shopify_client_id:
        return gettext("SHOPIFY_CLIENT_SECRET (or SHOPIFY_WEBHOOK_SECRETS, the same app secret)")
    return gettext(
        "SHOPIFY_CLIENT_ID and SHOPIFY_CLIENT_SECRET (Dev Dashboard app) "
        "or SHOPIFY_ADMIN_TOKEN (app created in the Shopify admin)"
    )


def token_source(*, interactive: bool = False) -> TokenSource | None:
    """The Admin API token for this configuration, or None when not configured.

    `interactive`: a token fetched for a page the merchant waits on is one request of
    VENDOR_INTERACTIVE_TIMEOUT seconds, like the page's own queries.
    """
    kind = access()
    if kind is Access.STATIC:
        return StaticToken(connections.current().shopify_admin_token.value)
    if kind is Access.CLIENT_CREDENTIALS:
        values = connections.current()
        return ClientCredentialsTokens(
            settings.SHOPIFY_ADMIN_URL,
            values.shopify_client_id.value,
            values.shopify_client_secret.value,
            cache=RedisTokenCache(),
            cache_key=token_cache_key(),
            credentials_hint=CREDENTIALS_HINT,
            on_fetch=_log_fetch,
            **(
                {"timeout": settings.VENDOR_INTERACTIVE_TIMEOUT, "attempts": 1}
                if interactive
                else {}
            ),
        )
    return None


def admin_shop_domain() -> str:
    """The shop the configured Admin API credentials belong to (lower case).

    A static token, and a client-credentials token, opens exactly one shop: the one at
    SHOPIFY_ADMIN_URL. `SHOPIFY_ADMIN_SHOP` names it where that URL is not the shop's own host
    (a proxy or a stand-in); without it, such a URL is the first of SHOPIFY_SHOP_DOMAINS's (the
    URL's default is built from it).
    """
    if settings.SHOPIFY_ADMIN_SHOP:
        return settings.SHOPIFY_ADMIN_SHOP.strip().lower()
    host = (urlsplit(settings.SHOPIFY_ADMIN_URL).hostname or "").lower()
    if host.endswith(".myshopify.com") or not settings.SHOPIFY_SHOP_DOMAINS:
        return host
    return settings.SHOPIFY_SHOP_DOMAINS[0].strip().lower()


def holds_credentials_for(shop_domain: str) -> bool:
    """Whether the configured Admin API access is this shop's own."""
    return is_configured() and shop_domain.strip().lower() == admin_shop_domain()


def token_cache_key() -> str:
    """One key per shop and app, so two shops (or a rotated app) never share a token."""
    shop = urlsplit(settings.SHOPIFY_ADMIN_URL).netloc or settings.SHOPIFY_ADMIN_URL
    return f"elbkerzen:shopify-admin-token:{shop}:{connections.current().shopify_client_id}"


def _log_fetch(token: AccessToken) -> None:
    """Say that a token was fetched, never the token itself."""
    logger.info(
        "fetched a Shopify Admin API access token by the client credentials grant "
        "(expires in %d s, scopes: %s)",
        token.expires_in,
        token.scope or "-",
    )


class RedisTokenCache:
    """The token cache in Redis. While Redis fails, each process keeps its own token.

    The token is a secret: it sits in Redis like RQ's job data does, under an expiring key, and
    is never logged.
    """

    def get(self, key: str) -> bytes | None:
        try:
            return redis_client().get(key)
        except RedisError as err:
            logger.warning("Shopify token cache unavailable (%s): using this process's token", err)
            return None

    def set(self, key: str, value: str, *, px: int) -> None:
        try:
            redis_client().set(key, value, px=px)
        except RedisError as err:
            logger.warning("Shopify token cache unavailable (%s): token not shared", err)

    def delete(self, key: str) -> None:
        try:
            redis_client().delete(key)
        except RedisError as err:
            logger.warning("Shopify token cache unavailable (%s): could not drop the token", err)


def webhooks_managed_by() -> WebhookManager:
    """`SHOPIFY_WEBHOOKS_MANAGED_BY` as a value; anything else is a configuration error."""
    value = str(settings.SHOPIFY_WEBHOOKS_MANAGED_BY).strip().lower()
    try:
        return WebhookManager(value)
    except ValueError:
        choices = " or ".join(repr(m.value) for m in WebhookManager)
        raise ImproperlyConfigured(
            f"SHOPIFY_WEBHOOKS_MANAGED_BY must be {choices}, not {value!r}"
        ) from None


def webhooks_managed_by_toml() -> bool:
    """Whether the app's shopify.app.toml owns the subscriptions (we neither check nor create)."""
    return webhooks_managed_by() is WebhookManager.TOML


INTERACTIVE_RETRIES = 1
"""A page the merchant waits on tries a throttled query once more, and sends each request once."""


def admin_client_for_shop(shop_domain: str) -> ShopifyAdmin | None:
    """The Admin API client of exactly this shop, or None when we hold no credentials for it.

    For questions only that shop may answer (did it uninstall us?): another shop's credentials
    say nothing about it, and their refusal must never count as its answer.
    """
    if not holds_credentials_for(shop_domain):
        return None
    return admin_client()


def admin_client(*, interactive: bool = False) -> ShopifyAdmin | None:
    """The Shopify Admin API client (static token or client credentials), None if neither is set.

    `interactive` for a page the merchant waits on (the pickers, a save that asks Shopify): each
    request may take VENDOR_INTERACTIVE_TIMEOUT seconds and is not sent again after a network
    error (the token fetch of a Dev Dashboard app included), so a slow Shopify holds the page,
    and the web worker, for seconds, not minutes.
    """
    tokens = token_source(interactive=interactive)
    if tokens is None:
        return None
    if not interactive:
        return ShopifyAdmin(settings.SHOPIFY_ADMIN_URL, tokens, settings.SHOPIFY_API_VERSION)
    return ShopifyAdmin(
        settings.SHOPIFY_ADMIN_URL,
        tokens,
        settings.SHOPIFY_API_VERSION,
        timeout=settings.VENDOR_INTERACTIVE_TIMEOUT,
        max_retries=INTERACTIVE_RETRIES,
        transport_attempts=1,
    )
