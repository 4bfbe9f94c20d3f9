"""The Shopify Admin stand-in as the nightly run meets it: a shop answering on 127.0.0.1."""

from collections.abc import Iterator

from tests.support.shopify_standin import TOKEN, ShopifyStandIn

PUBLIC = "https://automation.elbkerzen.example"
CALLBACK = f"{PUBLIC}/webhooks/shopify/"
SUBSCRIBED = ["INVENTORY_LEVELS_UPDATE", "CHECKOUTS_CREATE", "CHECKOUTS_UPDATE", "ORDERS_CREATE"]


def shop(httpserver, settings) -> Iterator[ShopifyStandIn]:
    """A shop whose Admin API answers on 127.0.0.1, with a generous bucket so waits stay
    short; use as a fixture: `shop = pytest.fixture(name="shop")(shopify_admin.shop)`."""
    standin = ShopifyStandIn(restore_rate=5000)
    settings.SHOPIFY_ADMIN_URL = standin.install(httpserver)
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    settings.PUBLIC_BASE_URL = PUBLIC
    standin.subscriptions = [
        {"id": f"gid://shopify/WebhookSubscription/{n}", "topic": topic, "uri": CALLBACK}
        for n, topic in enumerate(SUBSCRIBED)
    ]
    yield standin
    httpserver.check_handler_errors()
