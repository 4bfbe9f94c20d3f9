"""The Shopify Admin API stand-in with what the uninstall check of `shop/redact` needs.

A subclass of tests/support/shopify_standin.py's stand-in (which answers `shop { id name }` for any
accepted token: the Shop object needs no access scope,
https://shopify.dev/docs/api/admin-graphql/latest/queries/shop), used as is otherwise:
- `uninstall()` revokes every token we hold, so the GraphQL API answers 401 ("[API] Invalid API
  key or access token", https://shopify.dev/docs/api/usage/response-codes), and the client
  credentials grant answers HTTP 400 `app_not_installed` ("The application is not installed on
  this shop.", as reported on Shopify's developer forum:
  https://community.shopify.dev/t/client-credentials-grant-returning-app-not-installed-error-despite-app-being-installed/33287).
"""

from dataclasses import dataclass

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from automation.privacy.redaction import APP_NOT_INSTALLED
from tests.support.shopify_standin import CLIENT_ID, SHOP_ID, TOKEN, ShopifyStandIn, _json
from tests.support.signing import SHOP

APP_SECRET = "shpss_standin_secret"
# Shopify's shop/redact payload for our shop: `shop_id` and `shop_domain`
# (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance, "shop/redact").
SHOP_REDACT = {"shop_id": SHOP_ID, "shop_domain": SHOP}


@dataclass
class Shop(ShopifyStandIn):
    """The stand-in shop, installed until `uninstall()`."""

    uninstalled: bool = False

    def uninstall(self) -> None:
        """As 48 hours after the merchant removed the app: none of our tokens works."""
        self.uninstalled = True
        self.token = ""
        self.issued.clear()

    def handle_token(self, request: Request) -> Response:
        if self.uninstalled and not self._token_script:
            error = {
                "error": APP_NOT_INSTALLED,
                "error_description": "The application is not installed on this shop.",
            }
            return _json(error, 400)
        return super().handle_token(request)


def serve_admin_shop(httpserver: HTTPServer, settings, *, client_credentials: bool = False) -> Shop:
    """Serve the shop on `httpserver` and point our Admin API settings at it."""
    if client_credentials:
        shop = Shop(restore_rate=5000, token="", client_id=CLIENT_ID, client_secret=APP_SECRET)
        settings.SHOPIFY_ADMIN_TOKEN = ""
        settings.SHOPIFY_CLIENT_ID = CLIENT_ID
        settings.SHOPIFY_CLIENT_SECRET = APP_SECRET
    else:
        shop = Shop(restore_rate=5000)
        settings.SHOPIFY_ADMIN_TOKEN = TOKEN
        settings.SHOPIFY_CLIENT_ID = ""
    settings.SHOPIFY_ADMIN_URL = shop.install(httpserver)
    settings.SHOPIFY_ADMIN_SHOP = SHOP  # the stand-in's URL is no shop host: name its shop
    return shop
