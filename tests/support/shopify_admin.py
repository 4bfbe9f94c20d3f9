"""The Shopify Admin stand-in as the nightly run meets it: a shop answering on 127.0.0.1."""

from collections.abc import Iterable, Iterator

from tests.support.shopify_standin import CLIENT_ID, TOKEN, ShopifyStandIn

PUBLIC = "https://automation.elbkerzen.example"
CALLBACK = f"{PUBLIC}/webhooks/shopify/"
SUBSCRIBED = ["INVENTORY_LEVELS_UPDATE", "CHECKOUTS_CREATE", "CHECKOUTS_UPDATE", "ORDERS_CREATE"]
CLIENT_SECRET = "shpss_standin_secret"


def subscribe(standin: ShopifyStandIn, topics: Iterable[str]) -> None:
    """The shop already delivers `topics` (enum names) to our callback."""
    standin.subscriptions = [
        {"id": f"gid://shopify/WebhookSubscription/{n}", "topic": topic, "uri": CALLBACK}
        for n, topic in enumerate(topics)
    ]


def shop(httpserver, settings, topics: Iterable[str] = SUBSCRIBED) -> Iterator[ShopifyStandIn]:
    """A shop whose Admin API answers on 127.0.0.1, with a generous bucket so waits stay
    short; use as a fixture: `shop = pytest.fixture(name="shop")(shopify_admin.shop)`."""
    standin = ShopifyStandIn(restore_rate=5000)
    settings.SHOPIFY_ADMIN_URL = standin.install(httpserver)
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    settings.PUBLIC_BASE_URL = PUBLIC
    subscribe(standin, topics)
    yield standin
    httpserver.check_handler_errors()


def dev_app_shop(httpserver, settings) -> ShopifyStandIn:
    """A Dev Dashboard app's shop: client id and secret only, tokens that expire, no static
    token anywhere; the caller checks `httpserver.check_handler_errors()` at the end."""
    standin = ShopifyStandIn(
        restore_rate=5000, token="", client_id=CLIENT_ID, client_secret=CLIENT_SECRET
    )
    settings.SHOPIFY_ADMIN_URL = standin.install(httpserver)
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = CLIENT_ID
    settings.SHOPIFY_CLIENT_SECRET = CLIENT_SECRET
    return standin
