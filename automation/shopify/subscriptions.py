"""The webhook subscriptions the service needs at Shopify, and healing the ones Shopify
deleted after failed deliveries (API-managed subscriptions only).
"""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from automation.shopify import access as shopify_access
from automation.shopify.queries import ShopifyAdmin

REQUIRED_TOPICS = (
    "inventory_levels/update",
    "inventory_levels/disconnect",
    "products/create",
    "products/update",
    "products/delete",
    "checkouts/create",
    "checkouts/update",
    "orders/create",
)


MANAGED_BY_TOML = "managed by shopify.app.toml (the app configuration owns them; not checked)"


def callback_url() -> str:
    """Where Shopify delivers our webhooks: built from PUBLIC_BASE_URL, never guessed."""
    return f"{settings.PUBLIC_BASE_URL}/webhooks/shopify/"


def missing_subscriptions(client: ShopifyAdmin) -> list[str]:
    """The topics we need that have no subscription to our callback URL."""
    have = {(sub.topic, sub.callback_url) for sub in client.list_webhook_subscriptions()}
    return [topic for topic in REQUIRED_TOPICS if (topic, callback_url()) not in have]


def heal_subscriptions(client: ShopifyAdmin) -> list[str]:
    """Re-create subscriptions Shopify deleted after failed deliveries (API-managed ones only)."""
    if shopify_access.webhooks_managed_by_toml():
        raise ImproperlyConfigured(
            "SHOPIFY_WEBHOOKS_MANAGED_BY=toml: the app's shopify.app.toml owns the webhook "
            "subscriptions; creating them through the API too would deliver every event twice"
        )
    created = []
    for topic in missing_subscriptions(client):
        client.create_webhook_subscription(topic, callback_url())
        created.append(topic)
    return created
