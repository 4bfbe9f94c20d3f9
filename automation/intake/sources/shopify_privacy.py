"""Shopify's mandatory privacy topics: `customers/redact`, `shop/redact`,
`customers/data_request`, each checked for its topic's shape and its shop.

Shopify signs only the body: the topic and shop headers travel unsigned, so a captured body
of any topic can be re-sent under a privacy topic. Each parser therefore checks that the body
has its topic's shape and names the shop of the delivery's header (a mismatch ends `invalid`
with the reason).
"""

from dataclasses import dataclass

from automation.intake.sources.fields import bounded, json_object, phone, shopify_customer_id
from automation.platform.exceptions import InvalidPayload

# A myshopify domain fits the delivery's shop column; longer is no shop of ours.
SHOP_DOMAIN_MAX_CHARS = 255


def check_shop(topic: str, named: str, header: str) -> None:
    """The body's `shop_domain` must be the shop of the delivery's (unsigned) header.

    Shopify's privacy payloads name their shop (`shop_domain`, e.g. `{shop}.myshopify.com`:
    https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance), and the
    `X-Shopify-Shop-Domain` header is the same myshopify domain. A body that names another shop
    was captured elsewhere and re-sent with our shop's header, so it is refused as invalid.
    """
    if named.strip().lower() != header.strip().lower():
        raise InvalidPayload(f"{topic} body names shop {named.strip()!r}, header {header!r}")


@dataclass(frozen=True)
class RedactRequest:
    """A `customers/redact` body, checked: the customer by id, and e-mail or phone if sent."""

    shop_domain: str
    customer_id: int
    email: str = ""
    phone: str = ""
    orders_to_redact: tuple = ()


def parse_customer_redact(payload: object, header_shop: str) -> RedactRequest:
    """Check a `customers/redact` body's shape and shop; InvalidPayload when unusable.

    Shopify documents the payload as `shop_id`, `shop_domain`, `customer {id, email, phone}`
    and `orders_to_redact`, and notes that a customer may be known by a phone only
    (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance,
    "customers/redact"). The id and the order list are always there; e-mail and phone are
    optional, and one of the wrong type is treated as absent rather than refusing the request:
    redacting by id is still owed.
    """
    payload = json_object(payload)
    shop_domain = bounded(payload.get("shop_domain"), SHOP_DOMAIN_MAX_CHARS)
    if not isinstance(shop_domain, str) or not shop_domain.strip():
        raise InvalidPayload("customers/redact needs shop_domain")
    customer = payload.get("customer")
    if not isinstance(customer, dict):
        raise InvalidPayload("customers/redact needs a customer object")
    customer_id = shopify_customer_id(customer.get("id"))
    if customer_id is None:
        raise InvalidPayload("customers/redact needs customer.id")
    orders = payload.get("orders_to_redact")
    if not isinstance(orders, list):
        raise InvalidPayload("customers/redact needs orders_to_redact (a list)")
    check_shop("customers/redact", shop_domain, header_shop)
    email = bounded(customer.get("email"))
    return RedactRequest(
        shop_domain=shop_domain.strip(),
        customer_id=customer_id,
        email=email.strip() if isinstance(email, str) and "@" in email else "",
        phone=phone(customer.get("phone")),
        orders_to_redact=tuple(orders),
    )


@dataclass(frozen=True)
class ShopRedactRequest:
    """A `shop/redact` body, checked: the shop by id and by its myshopify domain."""

    shop_id: int
    shop_domain: str


def parse_shop_redact(payload: object, header_shop: str) -> ShopRedactRequest:
    """Check a `shop/redact` body's shape and shop; InvalidPayload when it is not one.

    Shopify documents the payload as `{"shop_id": 954889, "shop_domain": "{shop}.myshopify.com"}`
    (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance, "shop/redact").
    Both must be there and `shop_domain` must be the header's shop: an `inventory_levels/update`
    body re-sent as `shop/redact` carries neither, and wipes nothing.
    """
    payload = json_object(payload)
    shop_id = payload.get("shop_id")
    if type(shop_id) is not int or not 0 < shop_id < 2**63:
        raise InvalidPayload("not a shop/redact body: shop_id must be a positive integer")
    shop_domain = bounded(payload.get("shop_domain"), SHOP_DOMAIN_MAX_CHARS)
    if not isinstance(shop_domain, str) or not shop_domain.strip():
        raise InvalidPayload("not a shop/redact body: missing shop_domain")
    check_shop("shop/redact", shop_domain, header_shop)
    return ShopRedactRequest(shop_id=shop_id, shop_domain=shop_domain.strip().lower())


@dataclass(frozen=True)
class DataRequestBody:
    """A `customers/data_request` body, checked."""

    shop_domain: str
    request_id: int
    customer_id: int
    email: str = ""
    orders_requested: tuple = ()


def parse_data_request(payload: object, header_shop: str) -> DataRequestBody:
    """Check a `customers/data_request` body's shape and shop; InvalidPayload when it is not one.

    Shopify documents `shop_id`, `shop_domain`, `orders_requested`, `customer {id, email, phone}`
    and `data_request {id}` (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance,
    "customers/data_request"). The shop, the customer's id and the request's id must be there.
    """
    payload = json_object(payload)
    shop_domain = bounded(payload.get("shop_domain"), SHOP_DOMAIN_MAX_CHARS)
    if not isinstance(shop_domain, str) or not shop_domain.strip():
        raise InvalidPayload("not a customers/data_request body: missing shop_domain")
    check_shop("customers/data_request", shop_domain, header_shop)
    customer = payload.get("customer")
    customer_id = shopify_customer_id(customer.get("id")) if isinstance(customer, dict) else None
    if customer_id is None:
        raise InvalidPayload("not a customers/data_request body: missing customer.id")
    data_request = payload.get("data_request")
    request_id = data_request.get("id") if isinstance(data_request, dict) else None
    if type(request_id) is not int or not 0 < request_id < 2**63:
        raise InvalidPayload("not a customers/data_request body: missing data_request.id")
    orders = payload.get("orders_requested", [])
    if not isinstance(orders, list):
        raise InvalidPayload("customers/data_request needs orders_requested (a list)")
    email = customer.get("email")
    return DataRequestBody(
        shop_domain=shop_domain.strip().lower(),
        request_id=request_id,
        customer_id=customer_id,
        email=email.strip()[:254] if isinstance(email, str) else "",
        orders_requested=tuple(orders),
    )
