"""Shopify's `checkouts/create|update` and `orders/create` bodies, each checked for its shape.

Shopify signs the body only, so a captured body of one topic can be re-sent under another:
each parser refuses a body that lacks its topic's shape.
"""

import contextlib
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from automation.intake.sources.checkout_version import (
    CheckoutVersion,
    email_fields,
    line_item,
    plain_first_name,
)
from automation.intake.sources.fields import (
    amount,
    json_object,
    optional_id,
    phone,
    raw_email,
    shopify_customer_id,
    text,
    timestamp,
)
from automation.models import CheckoutState
from automation.platform.addresses import identifying_address
from automation.platform.exceptions import InvalidPayload

# Keys of Shopify's order that a checkout does not have. The order resource (the body of
# `orders/create`, https://shopify.dev/docs/api/admin-rest/latest/resources/order, example
# order 450789469) carries `order_number`, `financial_status`, `confirmation_number` and the
# `checkout_token`/`checkout_id` of the checkout it completed, besides a `token` and an
# `updated_at` of its own; the checkout payload of `checkouts/create|update`
# (https://shopify.dev/docs/api/webhooks?reference=toml#list-of-topics-checkouts/create, the
# abandoned checkout resource https://shopify.dev/docs/api/admin-rest/latest/resources/
# abandoned-checkouts) carries none of them.
ORDER_ONLY_KEYS = frozenset(
    {"order_number", "financial_status", "confirmation_number", "checkout_token", "checkout_id"}
)
# A checkout payload always has `abandoned_checkout_url` ("The recovery URL that's sent to a
# customer so they can recover their checkout", same pages), null at most: no other Shopify
# body has the key.
CHECKOUT_ONLY_KEY = "abandoned_checkout_url"
# Global ids of a checkout, should a checkout body carry one (an order's names
# gid://shopify/Order/…, https://shopify.dev/docs/api/usage/gids).
CHECKOUT_GID_PREFIXES = ("gid://shopify/Checkout/", "gid://shopify/AbandonedCheckout/")
# Shopify's order payload carries its numeric `id` and `admin_graphql_api_id`
# "gid://shopify/Order/<id>"
# (https://shopify.dev/docs/api/webhooks?reference=toml#list-of-topics-orders/create).
ORDER_GID_PREFIX = "gid://shopify/Order/"


def check_checkout_shape(payload: dict) -> None:
    """Refuse a body that is not a checkout: an order's (or another object's) re-sent as one.

    Shopify signs the body only, so a captured `orders/create` body can be re-sent with
    `X-Shopify-Topic: checkouts/update`; it has a `token` and an `updated_at` like a checkout
    and would be stored as a bogus one.
    """
    order_keys = sorted(ORDER_ONLY_KEYS & payload.keys())
    if order_keys:
        raise InvalidPayload(f"not a checkout body: it has {', '.join(order_keys)}, as an order")
    gid = payload.get("admin_graphql_api_id")
    if gid is not None and not (isinstance(gid, str) and gid.startswith(CHECKOUT_GID_PREFIXES)):
        raise InvalidPayload(f"not a checkout body: admin_graphql_api_id names {gid!r}"[:300])
    if CHECKOUT_ONLY_KEY not in payload:
        raise InvalidPayload(f"not a checkout body: no {CHECKOUT_ONLY_KEY}")


def parse_shopify_checkout(payload: object, shop_domain: str) -> CheckoutVersion:
    """Validate a `checkouts/create|update` body; anything unusable raises InvalidPayload."""
    payload = json_object(payload)
    token = text(payload.get("token"), "token", 255, required=True)
    check_checkout_shape(payload)
    lines = payload.get("line_items") or []
    if not isinstance(lines, list):
        raise InvalidPayload("line_items must be a list")
    consent = payload.get("buyer_accepts_marketing", False)
    if not isinstance(consent, bool):
        raise InvalidPayload("buyer_accepts_marketing must be true or false")
    customer = payload.get("customer") if isinstance(payload.get("customer"), dict) else {}
    billing = payload.get("billing_address")
    billing = billing if isinstance(billing, dict) else {}
    first_name = customer.get("first_name") or billing.get("first_name")
    return CheckoutVersion(
        source=CheckoutState.Source.SHOPIFY,
        token=token,
        updated_at=timestamp(payload.get("updated_at"), "updated_at", required=True),
        shop_domain=shop_domain,
        **email_fields(raw_email(payload.get("email"), "email")),
        first_name=plain_first_name(first_name),
        customer_id=shopify_customer_id(customer.get("id")),
        phone=phone(customer.get("phone"), payload.get("phone")),
        accepts_marketing=consent,
        completed_at=timestamp(payload.get("completed_at"), "completed_at", required=False),
        recovery_url=text(payload.get("abandoned_checkout_url"), "abandoned_checkout_url", 2000),
        total_price=amount(payload.get("total_price", "0"), "total_price"),
        currency=text(payload.get("currency"), "currency", 3).upper(),
        line_items=[line_item(raw) for raw in lines[:500]],
    )


@dataclass(frozen=True)
class OrderEvent:
    """An `orders/create` body, checked: the checkout it completes and whom it names."""

    order_id: int
    # "" for an order without a checkout (a draft or POS order): nothing to complete.
    checkout_token: str = ""
    # When the order was placed; None when the body has no `created_at` (the handler uses now).
    created_at: datetime | None = None
    # The customer as the body names them, for the redaction pseudonyms and, normalised, to
    # attribute the order to a reminder decision for the same address.
    named_email: str = ""
    customer_id: int | None = None
    phone: str = ""
    # The order's total in the shop's currency; None when the body has none we can read.
    total_price: Decimal | None = None
    currency: str = ""


def parse_order(payload: object) -> OrderEvent:
    """Check an `orders/create` body's shape; InvalidPayload when it is not an order.

    Only the body is signed, so it must carry an order's numeric `id` and, if any, an Order
    gid. An order names its customer like a checkout does (`email`, `contact_email`, `phone`,
    `customer`). `created_at` is read only for an order that completes a checkout or names an
    address (the two ways an order is attributed to a reminder decision). `total_price` ("the
    sum of all line item prices, discounts, shipping, taxes, and tips in the shop currency",
    the order resource above) is its value; an unreadable one leaves the value unknown
    rather than refusing the order that completes a checkout.
    """
    payload = json_object(payload)
    if optional_id(payload.get("id")) is None:
        raise InvalidPayload("not an orders/create body: id must be a positive integer")
    gid = payload.get("admin_graphql_api_id")
    if gid is not None and not (isinstance(gid, str) and gid.startswith(ORDER_GID_PREFIX)):
        raise InvalidPayload(f"not an orders/create body: admin_graphql_api_id names {gid!r}"[:300])
    customer = payload.get("customer") if isinstance(payload.get("customer"), dict) else {}
    email = next(
        (
            address
            for value in (payload.get("email"), payload.get("contact_email"), customer.get("email"))
            if (address := identifying_address(value))
        ),
        "",
    )
    token = payload.get("checkout_token")
    token = token.strip()[:255] if isinstance(token, str) else ""
    created_at = None
    if token:
        created_at = timestamp(payload.get("created_at"), "created_at", required=False)
    elif email:  # only for attribution by address: an unreadable time is "now", not a refusal
        with contextlib.suppress(InvalidPayload):
            created_at = timestamp(payload.get("created_at"), "created_at", required=False)
    try:
        total = amount(payload.get("total_price"), "total_price")
    except InvalidPayload:
        total = None
    currency = payload.get("currency")
    return OrderEvent(
        order_id=payload["id"],
        checkout_token=token,
        created_at=created_at,
        named_email=email,
        customer_id=shopify_customer_id(customer.get("id")),
        phone=phone(customer.get("phone"), payload.get("phone")),
        total_price=total,
        currency=currency.strip().upper()[:3] if isinstance(currency, str) else "",
    )
