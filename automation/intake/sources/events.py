"""Which parser turns which (source, topic) body into its typed event: the one registry.

The inbox parses a delivery's body here, once, and hands the handler the event; a body that
is not its topic's shape raises InvalidPayload with the reason. Stripe's topic is the event's
own signed `type`; Shopify's is the unsigned `X-Shopify-Topic` header, which is why each
Shopify parser checks the body's shape for its topic.
"""

import functools
from collections.abc import Callable

from automation.intake.sources import load_body
from automation.intake.sources.checkout_version import CheckoutVersion
from automation.intake.sources.mail_service import RECORDED_TYPES, TrackingEvent, parse_tracking
from automation.intake.sources.shopify_checkouts import (
    OrderEvent,
    parse_order,
    parse_shopify_checkout,
)
from automation.intake.sources.shopify_inventory import LevelUpdate, parse_level
from automation.intake.sources.shopify_privacy import (
    DataRequestBody,
    RedactRequest,
    ShopRedactRequest,
    parse_customer_redact,
    parse_data_request,
    parse_shop_redact,
)
from automation.intake.sources.shopify_products import (
    LevelDisconnected,
    ProductDeleted,
    ProductUpdate,
    parse_level_disconnected,
    parse_product,
    parse_product_deleted,
)
from automation.intake.sources.stripe_checkouts import parse_stripe_session

Event = (
    LevelUpdate
    | LevelDisconnected
    | ProductUpdate
    | ProductDeleted
    | CheckoutVersion
    | OrderEvent
    | RedactRequest
    | ShopRedactRequest
    | DataRequestBody
    | TrackingEvent
)
# A parser takes the decoded body and the delivery's (unsigned) shop header.
Parser = Callable[[object, str], Event]


def _body_only(parse: Callable[[object], Event]) -> Parser:
    """A parser whose topic needs no shop header (the body names nothing to compare it with)."""

    @functools.wraps(parse)
    def parse_with_shop(payload: object, shop_domain: str) -> Event:
        return parse(payload)

    return parse_with_shop


PARSERS: dict[tuple[str, str], Parser] = {
    ("shopify", "inventory_levels/update"): _body_only(parse_level),
    ("shopify", "inventory_levels/disconnect"): _body_only(parse_level_disconnected),
    ("shopify", "products/create"): _body_only(parse_product),
    ("shopify", "products/update"): _body_only(parse_product),
    ("shopify", "products/delete"): _body_only(parse_product_deleted),
    ("shopify", "checkouts/create"): parse_shopify_checkout,
    ("shopify", "checkouts/update"): parse_shopify_checkout,
    ("shopify", "orders/create"): _body_only(parse_order),
    ("shopify", "customers/redact"): parse_customer_redact,
    ("shopify", "shop/redact"): parse_shop_redact,
    ("shopify", "customers/data_request"): parse_data_request,
    ("stripe", "checkout.session.expired"): _body_only(parse_stripe_session),
    ("stripe", "checkout.session.completed"): _body_only(parse_stripe_session),
    **{("mail_service", topic): _body_only(parse_tracking) for topic in RECORDED_TYPES},
}


def parse_event(
    source: str, topic: str, body: bytes | memoryview, shop_domain: str = ""
) -> Event | None:
    """The typed event of a stored body; InvalidPayload when it is not its topic's shape.

    A body that is not JSON raises what decoding raises (the intake has already marked such a
    body invalid, so here it is a failure to retry, as before). A topic without a parser has
    no event (None) and its body is not read: every topic a handler serves has one
    (tests/intake/test_sources_events.py), so only test-only topics take this way.
    """
    parser = PARSERS.get((source, topic))
    return None if parser is None else parser(load_body(body), shop_domain)
