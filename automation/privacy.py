"""Personal data: masked addresses for logs, pseudonyms for links, Shopify's privacy topics.

A delivery and a checkout carry pseudonyms of the customer's e-mail, Shopify customer id and
phone number, so `customers/redact` finds them by whichever of the three the request names.

Shopify signs only the body: the topic and shop headers travel unsigned, so a captured body
of any topic can be re-sent under a privacy topic. Each handler therefore checks that the body
has its topic's shape and names the shop of the delivery's header (a mismatch ends `invalid`
with the reason), and `shop/redact`, which wipes the whole shop, also asks the shop's Admin API
whether our access really ended before it deletes anything.
"""

import enum
import hashlib
import json
import logging
import re
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Q

from . import alerts, claims, reconcile, shopify_access
from .adapters.shopify_admin import ShopifyAdminError, ShopifyCredentialsError
from .addresses import address_key, identifying_address
from .exceptions import InvalidPayload
from .inbox import Outcome, handles
from .models import CheckoutState, DataRequest, Delivery, ReminderDecision

logger = logging.getLogger(__name__)

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
    """A stable pseudonym of an address, for keys and links between rows.

    Made from the address's key (automation/addresses.py), so every spelling of one mailbox
    (`Kim@Bücher.de`, `kim@xn--bcher-kva.de`, `"kim"@bücher.de`) has one pseudonym: the body
    written under one spelling is found by a redaction naming another. A value that is no
    address falls back to its lower-cased text.
    """
    return hashlib.sha256((address_key(email) or email.strip().lower()).encode()).hexdigest()


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
    check_shop("customers/redact", request.shop_domain, delivery.shop_domain)
    # Checkouts and decisions store the normalised address (automation/addresses.py), bodies
    # its pseudonym: both are found by the address's key, whatever spelling the request uses
    # (an IDN domain in Unicode or in A-labels, a quoted local part, another case).
    email = identifying_address(request.email) or request.email
    refs = customer_refs(email, request.customer_id, request.phone)
    checkout_match = Q(customer_id_ref=refs["customer_id_ref"])
    body_match = Q(customer_id_ref=refs["customer_id_ref"])
    email_match = Q()
    if request.email:
        email_match = Q(email__iexact=email) | Q(email__iexact=request.email)
        checkout_match |= email_match
        # rows linked before addresses were normalised carry the pseudonym of the raw text
        legacy_ref = hashlib.sha256(request.email.strip().lower().encode()).hexdigest()
        body_match |= Q(customer_ref__in={refs["customer_ref"], legacy_ref})
    if "phone_ref" in refs:
        checkout_match |= Q(phone_ref=refs["phone_ref"])
        body_match |= Q(phone_ref=refs["phone_ref"])
    with transaction.atomic():
        checkouts = CheckoutState.objects.filter(checkout_match, shop_domain=delivery.shop_domain)
        count, _ = checkouts.delete()  # decisions cascade
        if request.email:
            # a decision outlives a checkout whose address changed since: it still names this one
            more, _ = ReminderDecision.objects.filter(
                email_match, checkout__shop_domain=delivery.shop_domain
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


# --- shop/redact ---------------------------------------------------------------------------

# Shopify's client credentials grant answers a shop that no longer has the app installed with
# HTTP 400 `app_not_installed` ("The application is not installed on this shop."), as reported
# on Shopify's developer forum
# (https://community.shopify.dev/t/client-credentials-grant-returning-app-not-installed-error-despite-app-being-installed/33287).
APP_NOT_INSTALLED = "app_not_installed"
# Admin API answers that mean our access ended: 401 (the token was revoked at uninstall) and
# 403 (https://shopify.dev/docs/api/usage/response-codes).
ACCESS_ENDED_STATUSES = frozenset({401, 403})
# One alert per shop in this period, however often a refused `shop/redact` arrives (a replayed
# body would otherwise mail the merchant once per copy).
REFUSED_ALERT_EVERY = timedelta(hours=24)


@dataclass(frozen=True)
class ShopRedactRequest:
    """A `shop/redact` body, checked: the shop by id and by its myshopify domain."""

    shop_id: int
    shop_domain: str


def parse_shop_redact(payload: dict, header_shop: str) -> ShopRedactRequest:
    """Check a `shop/redact` body's shape and shop; InvalidPayload when it is not one.

    Shopify documents the payload as `{"shop_id": 954889, "shop_domain": "{shop}.myshopify.com"}`
    (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance, "shop/redact").
    Both must be there and `shop_domain` must be the header's shop: an `inventory_levels/update`
    body re-sent as `shop/redact` carries neither, and wipes nothing.
    """
    shop_id = payload.get("shop_id")
    if type(shop_id) is not int or not 0 < shop_id < 2**63:
        raise InvalidPayload("not a shop/redact body: shop_id must be a positive integer")
    shop_domain = payload.get("shop_domain")
    if not isinstance(shop_domain, str) or not shop_domain.strip():
        raise InvalidPayload("not a shop/redact body: missing shop_domain")
    check_shop("shop/redact", shop_domain, header_shop)
    return ShopRedactRequest(shop_id=shop_id, shop_domain=shop_domain.strip().lower())


class AdminAccess(enum.StrEnum):
    """What the shop's Admin API says about our access."""

    ENDED = "ended"  # 401/403, or the app is no longer installed: the uninstall is real
    ACTIVE = "active"  # the shop answered: we are still installed
    UNCONFIRMED = "unconfirmed"  # we cannot ask (not configured, refused credentials, 404...)


@dataclass(frozen=True)
class AccessCheck:
    """The answer and, for the delivery's note and the alert, why."""

    access: AdminAccess
    reason: str


class AccessCheckUnavailable(Exception):
    """The Admin API could not answer now (5xx, network, throttled): the job retries."""


def check_admin_access() -> AccessCheck:
    """Ask the shop's Admin API whether our access still works, without changing anything.

    Uses the one configured Admin client (static token or client credentials,
    reconcile.admin_client). Raises AccessCheckUnavailable when the answer may change by
    waiting, so the delivery is retried instead of refused or carried out.
    """
    client = reconcile.admin_client()
    if client is None:
        return AccessCheck(
            AdminAccess.UNCONFIRMED,
            "Shopify Admin API not configured, so the uninstall cannot be confirmed "
            f"(set {shopify_access.missing_settings()})",
        )
    try:
        client.shop_info()
    except ShopifyCredentialsError as err:
        if err.code == APP_NOT_INSTALLED:
            return AccessCheck(AdminAccess.ENDED, "the app is no longer installed on the shop")
        return AccessCheck(AdminAccess.UNCONFIRMED, f"Shopify refused the credentials: {err}")
    except ShopifyAdminError as err:
        if err.status in ACCESS_ENDED_STATUSES:
            return AccessCheck(
                AdminAccess.ENDED, f"the shop's Admin API refuses our access (HTTP {err.status})"
            )
        if err.status is not None and 400 <= err.status < 500 and err.status != 429:
            return AccessCheck(AdminAccess.UNCONFIRMED, f"Shopify Admin API: {err}")
        raise AccessCheckUnavailable(
            f"could not ask the shop's Admin API whether our access ended: {err}"
        ) from err
    finally:
        client.close()
    return AccessCheck(AdminAccess.ACTIVE, "the shop's Admin API still accepts our access")


@handles("shopify", "shop/redact")
def handle_shop_redact(delivery: Delivery) -> Outcome:
    """Delete everything we keep of the shop, once its body and the Admin API agree.

    Shopify sends `shop/redact` 48 hours after the app was uninstalled
    (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance). So before wiping,
    the shop's Admin API must refuse us (our access ended); while it still answers, the request
    is refused, nothing is deleted and the merchant is told.
    """
    request = parse_shop_redact(_payload(delivery), delivery.shop_domain)
    check = check_admin_access()
    if check.access is not AdminAccess.ENDED:
        return _refuse_shop_redact(delivery, request, check)
    shop = delivery.shop_domain
    with transaction.atomic():
        checkouts, _ = CheckoutState.objects.filter(shop_domain=shop).delete()
        DataRequest.objects.filter(shop_domain=shop).delete()
        deliveries, _ = Delivery.objects.filter(shop_domain=shop).exclude(pk=delivery.pk).delete()
        Delivery.objects.filter(pk=delivery.pk).update(body=None)
    return Outcome(
        Delivery.Status.DONE,
        f"shop redacted ({check.reason}): {checkouts} checkout rows, {deliveries} deliveries",
    )


def _refuse_shop_redact(
    delivery: Delivery, request: ShopRedactRequest, check: AccessCheck
) -> Outcome:
    """Record the refusal and alert the merchant, at most once per shop and period."""
    if check.access is AdminAccess.ACTIVE:
        note = f"shop/redact refused, nothing deleted: {check.reason} (the app is still installed)"
    else:
        note = f"shop/redact refused, nothing deleted: {check.reason}"
    logger.warning("delivery %s: %s", delivery.pk, note)
    key = f"shop-redact-refused:{request.shop_domain}"
    if not claims.claim_once(key, REFUSED_ALERT_EVERY):
        return Outcome(Delivery.Status.REFUSED, f"{note}; merchant already alerted")
    subject = f"[Elbkerzen] shop/redact refused for {request.shop_domain}"
    if not alerts.send(subject, _refusal_text(delivery, note)):
        claims.release(key)  # the next refusal tries again
        return Outcome(Delivery.Status.REFUSED, f"{note}; the alert could not be sent")
    return Outcome(Delivery.Status.REFUSED, f"{note}; merchant alerted")


def _refusal_text(delivery: Delivery, note: str) -> str:
    return (
        "A signed shop/redact request asked us to delete every record of your shop.\n"
        "Shopify sends it 48 hours after the app was uninstalled, but we could not confirm "
        "that the app was uninstalled, so nothing was deleted.\n\n"
        f"Shop:        {delivery.shop_domain}\n"
        f"Webhook id:  {delivery.webhook_id or '-'}\n"
        f"Reason:      {note}\n\n"
        "If you did not uninstall the app, someone may have re-sent an old request: nothing "
        "needs to be done. If you did uninstall it, the shop's data is still stored here: fix "
        "the cause named above (e.g. set up Admin API access) and replay the delivery in the "
        "admin; it is checked again, and deletes once the Admin API refuses our access:\n"
        f"{alerts.admin_url(delivery)}"
    )


# --- customers/data_request -----------------------------------------------------------------


@dataclass(frozen=True)
class DataRequestBody:
    """A `customers/data_request` body, checked."""

    shop_domain: str
    request_id: int
    customer_id: int
    email: str = ""
    orders_requested: tuple = ()


def parse_data_request(payload: dict, header_shop: str) -> DataRequestBody:
    """Check a `customers/data_request` body's shape and shop; InvalidPayload when it is not one.

    Shopify documents `shop_id`, `shop_domain`, `orders_requested`, `customer {id, email, phone}`
    and `data_request {id}` (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance,
    "customers/data_request"). The shop, the customer's id and the request's id must be there.
    """
    shop_domain = payload.get("shop_domain")
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


@handles("shopify", "customers/data_request")
def handle_data_request(delivery: Delivery) -> Outcome:
    """Record the request so the merchant can answer it from the admin."""
    request = parse_data_request(_payload(delivery), delivery.shop_domain)
    DataRequest.objects.create(
        shop_domain=delivery.shop_domain,
        customer_email=request.email,
        customer_id=request.customer_id,
        orders_requested=list(request.orders_requested),
    )
    return Outcome(
        Delivery.Status.DONE,
        f"data request {request.request_id} recorded for {mask_email(request.email)}",
    )
