"""Personal data: masked addresses for logs, pseudonyms for links, Shopify's privacy topics.

A delivery and a checkout carry pseudonyms of the customer's e-mail, Shopify customer id and
phone number, so `customers/redact` finds them by whichever of the three the request names.

Shopify signs only the body: the topic and shop headers travel unsigned, so a captured body
of any topic can be re-sent under a privacy topic. Each body is checked at the edge for its
topic's shape and for naming the shop of the delivery's header
(automation/sources/shopify_privacy.py; a mismatch ends `invalid` with the reason), and
`shop/redact`, which wipes the whole shop, also asks the shop's Admin API whether our access
really ended before it deletes anything.
"""

import enum
import hashlib
import logging
import re
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Q

from . import alerts, claims, shopify_access
from .adapters.shopify_admin import ShopifyAdminError, ShopifyCredentialsError
from .addresses import address_key, identifying_address
from .handling import Outcome, handles
from .models import CheckoutState, DataRequest, Delivery, ReminderDecision
from .sources.shopify_privacy import DataRequestBody, RedactRequest, ShopRedactRequest

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


def _identifiers(request: RedactRequest) -> list[str]:
    """Which identifiers the request carries, for the note (never the values)."""
    named = [("id", True), ("e-mail", request.email), ("phone", phone_ref(request.phone))]
    return [name for name, present in named if present]


@handles("shopify", "customers/redact")
def handle_customer_redact(request: RedactRequest, delivery: Delivery) -> Outcome:
    """Delete the customer's checkouts and decisions, drop their raw bodies; by id, e-mail or
    phone, whichever the request carries."""
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
    by = ", ".join(_identifiers(request))
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
    shopify_access.admin_client). Raises AccessCheckUnavailable when the answer may change by
    waiting, so the delivery is retried instead of refused or carried out.
    """
    client = shopify_access.admin_client()
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
def handle_shop_redact(request: ShopRedactRequest, delivery: Delivery) -> Outcome:
    """Delete everything we keep of the shop, once its body and the Admin API agree.

    Shopify sends `shop/redact` 48 hours after the app was uninstalled
    (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance). So before wiping,
    the shop's Admin API must refuse us (our access ended); while it still answers, the request
    is refused, nothing is deleted and the merchant is told.
    """
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


@handles("shopify", "customers/data_request")
def handle_data_request(request: DataRequestBody, delivery: Delivery) -> Outcome:
    """Record the request so the merchant can answer it from the admin."""
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
