"""Personal data: masked addresses for logs, and Shopify's mandatory privacy topics."""

import hashlib
import json

from django.db import transaction

from .exceptions import InvalidPayload
from .inbox import Outcome, handles
from .models import CheckoutState, DataRequest, Delivery


def mask_email(email: str) -> str:
    """`kundin@example.com` → `k***@example.com`: enough to recognise, not to harvest."""
    local, at, domain = (email or "").partition("@")
    if not at:
        return "***"
    return f"{local[:1]}***@{domain}"


def email_ref(email: str) -> str:
    """A stable pseudonym of an address, for keys and links between rows."""
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()


def _payload(delivery: Delivery) -> dict:
    return json.loads(bytes(delivery.body))


@handles("shopify", "customers/redact")
def handle_customer_redact(delivery: Delivery) -> Outcome:
    """Delete the customer's checkouts, decisions and raw deliveries."""
    payload = _payload(delivery)
    customer = payload.get("customer")
    email = customer.get("email") if isinstance(customer, dict) else None
    if not isinstance(email, str) or "@" not in email:
        raise InvalidPayload("customers/redact needs customer.email")
    with transaction.atomic():
        checkouts = CheckoutState.objects.filter(
            shop_domain=delivery.shop_domain, email__iexact=email.strip()
        )
        count, _ = checkouts.delete()  # decisions cascade
        Delivery.objects.filter(customer_ref=email_ref(email)).update(body=None)
        Delivery.objects.filter(pk=delivery.pk).update(body=None, customer_ref=email_ref(email))
    return Outcome(Delivery.Status.DONE, f"redacted {mask_email(email)}: {count} rows deleted")


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
