"""Personal data: masked addresses for logs, pseudonyms for links, Shopify's privacy topics.

A delivery and a checkout carry pseudonyms of the customer's e-mail, Shopify customer id and
phone number, so `customers/redact` finds them by whichever of the three the request names.
"""

import hashlib
import json
import re
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from .exceptions import InvalidPayload
from .inbox import Outcome, handles
from .models import CheckoutState, DataRequest, Delivery, ReminderDecision

# A phone number needs at least this many digits to be a usable key (shorter ones would join
# unrelated customers).
MIN_PHONE_DIGITS = 6


def mask_email(email: str) -> str:
    """`kundin@example.com` → `k***@example.com`: enough to recognise, not to harvest."""
    local, at, domain = (email or "").partition("@")
    if not at:
        return "***"
    return f"{local[:1]}***@{domain}"


def email_ref(email: str) -> str:
    """A stable pseudonym of an address, for keys and links between rows."""
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()


def customer_id_ref(customer_id: int | None) -> str:
    """A stable pseudonym of a Shopify customer id; "" without one.

    Namespaced, so an id never collides with the pseudonym of an address or a phone number.
    """
    if customer_id is None:
        return ""
    return hashlib.sha256(f"shopify-customer:{customer_id}".encode()).hexdigest()


def phone_digits(phone: str) -> str:
    """The digits of a phone number, so `+49 40 1234567` and `0049-40-1234567` are one key.

    Shopify stores customers' phones in E.164 (`+4940…`); the international prefix `00` is the
    same `+` typed differently. A national form (`040 …`) stays a different key: we have no
    country to expand it with.
    """
    digits = re.sub(r"\D", "", phone or "")
    if (phone or "").lstrip().startswith("00"):
        digits = digits.removeprefix("00")
    return digits if len(digits) >= MIN_PHONE_DIGITS else ""


def phone_ref(phone: str) -> str:
    """A stable pseudonym of a phone number; "" when it has too few digits to be one."""
    digits = phone_digits(phone)
    return hashlib.sha256(f"phone:{digits}".encode()).hexdigest() if digits else ""


def customer_refs(email: str = "", customer_id: int | None = None, phone: str = "") -> dict:
    """The Delivery fields that link a body to its customer; only the ones we have."""
    refs = {
        "customer_ref": email_ref(email) if email and "@" in email else "",
        "customer_id_ref": customer_id_ref(customer_id),
        "phone_ref": phone_ref(phone),
    }
    return {name: ref for name, ref in refs.items() if ref}


def shopify_customer_id(value: object) -> int | None:
    """A Shopify customer id (a positive 64-bit integer, also accepted as a digit string)."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    return value if type(value) is int and 0 < value < 2**63 else None


def _payload(delivery: Delivery) -> dict:
    payload = json.loads(bytes(delivery.body))
    if not isinstance(payload, dict):
        raise InvalidPayload("body is not a JSON object")
    return payload


@dataclass(frozen=True)
class RedactRequest:
    """A `customers/redact` body, checked: the customer by id, and e-mail or phone if sent."""

    shop_domain: str
    customer_id: int
    email: str = ""
    phone: str = ""
    orders_to_redact: tuple = ()

    def identifiers(self) -> list[str]:
        """Which identifiers the request carries, for the note (never the values)."""
        named = [("id", True), ("e-mail", self.email), ("phone", phone_ref(self.phone))]
        return [name for name, present in named if present]


def parse_customer_redact(payload: dict) -> RedactRequest:
    """Check a `customers/redact` body's shape for its topic; InvalidPayload when unusable.

    Shopify documents the payload as `shop_id`, `shop_domain`, `customer {id, email, phone}`
    and `orders_to_redact`, and notes that a customer may be known by a phone only
    (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance,
    "customers/redact"). The id and the order list are always there; e-mail and phone are
    optional, and one of the wrong type is treated as absent rather than refusing the request:
    redacting by id is still owed.
    """
    shop_domain = payload.get("shop_domain")
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
    email = customer.get("email")
    phone = customer.get("phone")
    return RedactRequest(
        shop_domain=shop_domain.strip(),
        customer_id=customer_id,
        email=email.strip() if isinstance(email, str) and "@" in email else "",
        phone=phone if isinstance(phone, str) else "",
        orders_to_redact=tuple(orders),
    )


@handles("shopify", "customers/redact")
def handle_customer_redact(delivery: Delivery) -> Outcome:
    """Delete the customer's checkouts and decisions, drop their raw bodies; by id, e-mail or
    phone, whichever the request carries."""
    request = parse_customer_redact(_payload(delivery))
    refs = customer_refs(request.email, request.customer_id, request.phone)
    checkout_match = Q(customer_id_ref=refs["customer_id_ref"])
    body_match = Q(customer_id_ref=refs["customer_id_ref"])
    if request.email:
        checkout_match |= Q(email__iexact=request.email)
        body_match |= Q(customer_ref=refs["customer_ref"])
    if "phone_ref" in refs:
        checkout_match |= Q(phone_ref=refs["phone_ref"])
        body_match |= Q(phone_ref=refs["phone_ref"])
    with transaction.atomic():
        checkouts = CheckoutState.objects.filter(checkout_match, shop_domain=delivery.shop_domain)
        count, _ = checkouts.delete()  # decisions cascade
        if request.email:
            # a decision outlives a checkout whose address changed since: it still names this one
            more, _ = ReminderDecision.objects.filter(
                email__iexact=request.email, checkout__shop_domain=delivery.shop_domain
            ).delete()
            count += more
        bodies = (
            Delivery.objects.filter(body_match, body__isnull=False)
            .exclude(pk=delivery.pk)
            .update(body=None)
        )
        Delivery.objects.filter(pk=delivery.pk).update(body=None, **refs)
    by = ", ".join(request.identifiers())
    return Outcome(
        Delivery.Status.DONE,
        f"customer redacted (by {by}): {count} rows deleted, {bodies} bodies dropped",
    )


@handles("shopify", "shop/redact")
def handle_shop_redact(delivery: Delivery) -> Outcome:
    """Delete everything we keep of the shop: checkouts, decisions, deliveries."""
    shop = delivery.shop_domain
    with transaction.atomic():
        checkouts, _ = CheckoutState.objects.filter(shop_domain=shop).delete()
        DataRequest.objects.filter(shop_domain=shop).delete()
        deliveries, _ = Delivery.objects.filter(shop_domain=shop).exclude(pk=delivery.pk).delete()
        Delivery.objects.filter(pk=delivery.pk).update(body=None)
    return Outcome(
        Delivery.Status.DONE, f"shop redacted: {checkouts} checkout rows, {deliveries} deliveries"
    )


@handles("shopify", "customers/data_request")
def handle_data_request(delivery: Delivery) -> Outcome:
    """Record the request so the merchant can answer it from the admin."""
    payload = _payload(delivery)
    customer = payload.get("customer") if isinstance(payload.get("customer"), dict) else {}
    email = customer.get("email") if isinstance(customer.get("email"), str) else ""
    customer_id = customer.get("id") if type(customer.get("id")) is int else None
    orders = payload.get("orders_requested")
    DataRequest.objects.create(
        shop_domain=delivery.shop_domain,
        customer_email=email[:254],
        customer_id=customer_id if customer_id and customer_id < 2**63 else None,
        orders_requested=orders if isinstance(orders, list) else [],
    )
    return Outcome(Delivery.Status.DONE, f"data request recorded for {mask_email(email)}")
