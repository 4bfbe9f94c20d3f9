"""Abandoned checkouts: newest state wins, consent first, expected value decides, one reminder.

A reminder is evaluated REMINDER_DELAY after a checkout's last update (RQ's scheduler); the
evaluation exits quietly when the checkout changed since, so a checkout that keeps changing is
evaluated once, after it settles. A claim per checkout and one per address make the mail go
out at most once, whatever repeats or crashes: we prefer a missing reminder to two.
"""

import html
import json
import logging
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.html import strip_tags
from rq import Retry

from . import claims, reminder_mail
from .addresses import address_key, identifying_address, normalise_address
from .decisions import (
    NO_DISCOUNT_CODE,
    Basket,
    Line,
    MarginRule,
    Probabilities,
    ReminderChoice,
    choose_reminder,
    recent_discount,
)
from .exceptions import InvalidPayload
from .inbox import Outcome, handles
from .models import CheckoutState, Delivery, ReminderDecision, ReminderSettings, SuppressedAddress
from .models import MarginRule as MarginRuleRow
from .privacy import (
    customer_id_ref,
    customer_refs,
    email_ref,
    mask_email,
    phone_ref,
    shopify_customer_id,
)
from .queues import default_queue
from .sources import parse_timestamp

logger = logging.getLogger(__name__)

Status = Delivery.Status
Arm = ReminderDecision.Arm
CHECKOUT_CLAIM_TTL = timedelta(days=30)
# Values of the merchant's own consent field in a Stripe session's metadata that mean "opted
# in" (compared lower-case, without surrounding spaces); see parse_stripe_session.
STRIPE_CONSENT_VALUES = frozenset({"true", "yes", "1", "opt_in"})
# The skip reason of a checkout whose address does not normalise (automation/addresses.py).
INVALID_EMAIL = "invalid e-mail"
# A first name longer than this is cut: a greeting, not a place for text.
FIRST_NAME_MAX_CHARS = 40
RECOVERY_LINK_NOT_ALLOWED = "recovery link not allowed"
# Shopify served every checkout on checkout.shopify.com until July 2017, and on the domain the
# buyer shops on since: "the new format will be https://#{shop_domain}/#{shop.id}/checkouts/
# #{checkout.token}. If the merchant forces redirects to their primary shop domain, then all
# checkouts will occur on the primary domain" (https://shopify.dev/changelog/checkouts-will-
# occur-at-the-shop-domain-instead-of-checkout-shopify-com). `abandoned_checkout_url` is "the
# URL for the buyer to recover their checkout" (https://shopify.dev/docs/api/admin-graphql/
# latest/objects/AbandonedCheckout): on the shop's myshopify.com domain, its custom domain
# (SHOP_STOREFRONT_DOMAINS) or, in old links, Shopify's former checkout host.
SHOPIFY_CHECKOUT_HOSTS = frozenset({"checkout.shopify.com"})
# Stripe's recovery link: "after_expiration.recovery.url that you can embed in cart abandonment
# emails", shown as https://buy.stripe.com/r/live_asAb1724 (https://docs.stripe.com/payments/
# checkout/abandoned-carts); checkout.stripe.com is Checkout's own host (the session `url` in
# stripe/openapi's fixtures3.json, copied to tests/fixtures/stripe/). A custom domain for
# Checkout (https://docs.stripe.com/payments/checkout/custom-domains) goes into
# SHOP_STOREFRONT_DOMAINS.
STRIPE_CHECKOUT_HOSTS = frozenset({"buy.stripe.com", "checkout.stripe.com"})


@dataclass(frozen=True)
class CheckoutVersion:
    """One version of a checkout as a sender described it, validated."""

    source: str
    token: str
    updated_at: datetime
    shop_domain: str = ""
    # The normalised address (automation/addresses.py), "" when none was given or it is invalid.
    email: str = ""
    # An address was given that does not normalise: no reminder ("invalid e-mail").
    email_invalid: bool = False
    # The address the body names, read leniently, only for the redaction pseudonym.
    named_email: str = ""
    first_name: str = ""
    customer_id: int | None = None
    phone: str = ""
    accepts_marketing: bool = False
    completed_at: datetime | None = None
    recovery_url: str = ""
    total_price: Decimal = Decimal(0)
    currency: str = ""
    line_items: list[dict] = field(default_factory=list)


# --- parsing -------------------------------------------------------------------------------


def _text(value: object, name: str, limit: int, *, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidPayload(f"{name} must be a{' non-empty' if required else ''} string")
    if len(value) > limit:
        raise InvalidPayload(f"{name} is longer than {limit} characters")
    return value.strip()


def _amount(value: object, name: str) -> Decimal:
    if type(value) not in (str, int):
        raise InvalidPayload(f"{name} must be a decimal string")
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise InvalidPayload(f"{name} must be a decimal string") from None
    if not amount.is_finite() or not 0 <= amount < Decimal("1e10"):
        raise InvalidPayload(f"{name} must be a non-negative amount")
    return amount.quantize(Decimal("0.01"))


def _raw_email(value: object, name: str) -> str:
    """The sender's address field as given: a string or null, anything else is malformed."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidPayload(f"{name} must be a string")
    return value


def _email_fields(raw: str) -> dict:
    """The CheckoutVersion fields for the address a sender gave, parsed once, here."""
    if not raw.strip():
        return {}
    email = normalise_address(raw)
    return {
        "email": email or "",
        "email_invalid": email is None,
        "named_email": identifying_address(raw) or "",
    }


# A word of a name that is a link or points to one: a scheme (https:, javascript:), `//`, a
# `www.` host, an address, or a domain (`evil.example`, `evil.com/x`).
_LINK_WORD = re.compile(r"[a-z][a-z0-9+.-]*:\S|//|^www\.|@|[a-z0-9-]\.[a-z]{2,}", re.IGNORECASE)


def plain_first_name(value: object) -> str:
    """The first name as plain text for a greeting; "" when nothing of a name is left.

    Sign-up spam puts links and markup into name fields so that the shop's own mails carry
    them: tags (also ones hidden as entities) and link-like words are removed, control and
    format characters dropped, whitespace collapsed, and the rest cut to FIRST_NAME_MAX_CHARS.
    """
    if not isinstance(value, str):
        return ""
    text = value
    for _ in range(3):  # `&lt;b&gt;` is a tag once unescaped
        text = html.unescape(strip_tags(text))
    text = "".join(" " if ch.isspace() else ch for ch in text if ch.isprintable() or ch.isspace())
    words = text.replace("<", " ").replace(">", " ").split()
    name = " ".join(word for word in words if not _LINK_WORD.search(word))
    return name[:FIRST_NAME_MAX_CHARS].strip()


def _optional_id(value: object) -> int | None:
    return value if type(value) is int and 0 < value < 2**63 else None


def _phone(*candidates: object) -> str:
    """The first phone number given as a string; we keep only its pseudonym, for redaction."""
    return next((value[:64] for value in candidates if isinstance(value, str) and value), "")


def _timestamp(value: object, name: str, *, required: bool) -> datetime | None:
    if value is None and not required:
        return None
    parsed = parse_timestamp(value) if isinstance(value, str) else None
    if parsed is None:
        raise InvalidPayload(f"{name} must be an ISO 8601 timestamp with offset")
    return parsed


def _line(raw: object) -> dict:
    if not isinstance(raw, dict):
        raise InvalidPayload("line_items must be objects")
    quantity = raw.get("quantity")
    if type(quantity) is not int or not 0 <= quantity < 100_000:
        raise InvalidPayload("line item quantity must be a non-negative integer")
    return {
        "title": _text(raw.get("title"), "line item title", 500),
        "product_id": _optional_id(raw.get("product_id")),
        "variant_id": _optional_id(raw.get("variant_id")),
        "sku": _text(raw.get("sku"), "line item sku", 100),
        "vendor": _text(raw.get("vendor"), "line item vendor", 100),
        "quantity": quantity,
        "price": str(_amount(raw.get("price"), "line item price")),
    }


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
    if not isinstance(payload, dict):
        raise InvalidPayload("body is not a JSON object")
    token = _text(payload.get("token"), "token", 255, required=True)
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
        updated_at=_timestamp(payload.get("updated_at"), "updated_at", required=True),
        shop_domain=shop_domain,
        **_email_fields(_raw_email(payload.get("email"), "email")),
        first_name=plain_first_name(first_name),
        customer_id=shopify_customer_id(customer.get("id")),
        phone=_phone(customer.get("phone"), payload.get("phone")),
        accepts_marketing=consent,
        completed_at=_timestamp(payload.get("completed_at"), "completed_at", required=False),
        recovery_url=_text(payload.get("abandoned_checkout_url"), "abandoned_checkout_url", 2000),
        total_price=_amount(payload.get("total_price", "0"), "total_price"),
        currency=_text(payload.get("currency"), "currency", 3).upper(),
        line_items=[_line(raw) for raw in lines[:500]],
    )


def _dig(payload: dict, *keys: str) -> object:
    for key in keys:
        if not isinstance(payload, dict):
            return None
        payload = payload.get(key)
    return payload


def _stripe_consent(session: dict) -> bool:
    """Marketing consent of a Checkout Session: Stripe's own, else the merchant's metadata.

    `consent.promotions` is only set when the session was created with
    `consent_collection.promotions=auto`, which Stripe offers to US merchants only
    (https://docs.stripe.com/payments/checkout/promotional-emails-consent, "US only"; API
    reference: https://docs.stripe.com/api/checkout/sessions/object#checkout_session_object-consent).
    Elsewhere the merchant asks for consent in their own shop and records it in the session's
    `metadata` (string values, https://docs.stripe.com/metadata) under
    STRIPE_CONSENT_METADATA_KEY. A buyer's explicit `opt_out` at Stripe always wins.
    """
    metadata = session.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidPayload("metadata must be an object")
    promotions = _dig(session, "consent", "promotions")
    if promotions == "opt_out":
        return False
    if promotions == "opt_in":
        return True
    given = (metadata or {}).get(settings.STRIPE_CONSENT_METADATA_KEY)
    return isinstance(given, str) and given.strip().lower() in STRIPE_CONSENT_VALUES


def parse_stripe_session(event: object) -> CheckoutVersion:
    """Validate a Stripe `checkout.session.*` event into a checkout version.

    Stripe's own object fixture (stripe/openapi `openapi/fixtures3.json`, copied to
    tests/fixtures/stripe/) has nulls in `amount_total`, `currency`, `customer_email` and
    `after_expiration.recovery.url`: each null parses to an empty value, and the evaluation
    then skips the checkout with its reason (no address, no consent, no recovery link).
    """
    if not isinstance(event, dict):
        raise InvalidPayload("event is not a JSON object")
    session = _dig(event, "data", "object")
    created = event.get("created")
    if not isinstance(session, dict):
        raise InvalidPayload("event has no data.object")
    if type(created) is not int or not 0 < created < 2**40:
        raise InvalidPayload("event has no valid created timestamp")
    amount = session.get("amount_total") or 0
    if type(amount) is not int or not 0 <= amount < 10**12:
        raise InvalidPayload("amount_total must be a non-negative integer (cents)")
    completed = session.get("status") == "complete"
    # `customer_details.email` is what the buyer typed (null before they got that far);
    # `customer_email` is the address the merchant prefilled when creating the session.
    typed = _raw_email(_dig(session, "customer_details", "email"), "customer email")
    prefilled = _raw_email(session.get("customer_email"), "customer_email")
    return CheckoutVersion(
        source=CheckoutState.Source.STRIPE,
        token=_text(session.get("id"), "session id", 255, required=True),
        updated_at=datetime.fromtimestamp(created, tz=UTC),
        **_email_fields(typed if typed.strip() else prefilled),
        first_name="",
        phone=_phone(_dig(session, "customer_details", "phone")),
        accepts_marketing=_stripe_consent(session),
        completed_at=datetime.fromtimestamp(created, tz=UTC) if completed else None,
        recovery_url=_text(
            _dig(session, "after_expiration", "recovery", "url"), "recovery url", 2000
        ),
        total_price=(Decimal(amount) / 100).quantize(Decimal("0.01")),
        currency=_text(session.get("currency"), "currency", 3).upper(),
    )


# --- the stale guard ---------------------------------------------------------------------


def store_checkout(version: CheckoutVersion) -> CheckoutState | None:
    """Write the version unless a later one is stored; None when it is stale.

    A conditional UPDATE whose row count decides, and an INSERT the unique key protects; a
    stored completion is kept (a completed checkout never becomes open again).
    """
    fields = {
        "shop_domain": version.shop_domain,
        "email": version.email,
        "first_name": version.first_name,
        "accepts_marketing": version.accepts_marketing,
        "updated_at": version.updated_at,
        "recovery_url": version.recovery_url,
        "total_price": version.total_price,
        "currency": version.currency,
        "line_items": version.line_items,
    }
    # A later version without a customer id or phone keeps the known pseudonyms: a redaction
    # must still find the checkout.
    refs = {
        "customer_id_ref": customer_id_ref(version.customer_id),
        "phone_ref": phone_ref(version.phone),
    }
    fields.update({name: ref for name, ref in refs.items() if ref})
    same = CheckoutState.objects.filter(source=version.source, token=version.token)

    def update() -> int:
        return same.filter(updated_at__lte=version.updated_at).update(
            **fields, completed_at=Coalesce(F("completed_at"), Value(version.completed_at))
        )

    if not update():
        try:
            with transaction.atomic():
                CheckoutState.objects.create(
                    source=version.source,
                    token=version.token,
                    completed_at=version.completed_at,
                    **fields,
                )
        except IntegrityError:
            if not update():
                return None
    return same.get()


def mark_completed(source: str, token: str, when: datetime, shop_domain: str = "") -> bool:
    """Record a purchase; creates a completed placeholder if the checkout is not known yet."""
    same = CheckoutState.objects.filter(source=source, token=token)
    if same.filter(completed_at__isnull=True).update(completed_at=when):
        return True
    if same.exists():
        return False
    try:
        with transaction.atomic():
            CheckoutState.objects.create(
                source=source,
                token=token,
                shop_domain=shop_domain,
                updated_at=when,
                completed_at=when,
            )
    except IntegrityError:
        return bool(same.filter(completed_at__isnull=True).update(completed_at=when))
    return True


# --- scheduling ----------------------------------------------------------------------------


def _job_id(checkout: CheckoutState) -> str:
    """One evaluation job per checkout version: repeated messages schedule it only once."""
    version = int(checkout.updated_at.timestamp() * 1_000_000)
    return f"reminder-{checkout.pk}-{version}"


def reminder_due_at(checkout: CheckoutState, config: ReminderSettings) -> datetime:
    """When the reminder for this version is evaluated."""
    return checkout.updated_at + timedelta(minutes=config.reminder_delay_minutes)


def schedule_evaluation(checkout: CheckoutState, *, at: datetime | None = None) -> datetime:
    """Ask RQ's scheduler to evaluate this version at `at` (default: when it is due)."""
    from .jobs import evaluate_checkout

    due = at or reminder_due_at(checkout, ReminderSettings.load())
    intervals = list(settings.REMINDER_RETRY_INTERVALS)
    default_queue().enqueue_at(
        due,
        evaluate_checkout,
        checkout.pk,
        checkout.updated_at.isoformat(),
        job_id=_job_id(checkout),
        retry=Retry(max=len(intervals), interval=intervals),
        description=f"evaluate reminder for checkout {checkout.pk}",
    )
    return due


# --- handlers ------------------------------------------------------------------------------


def _body(delivery: Delivery) -> object:
    return json.loads(bytes(delivery.body))


def _remember_customer(delivery: Delivery, version: CheckoutVersion) -> None:
    """Link the body to its customer by pseudonyms, so `customers/redact` can drop it."""
    refs = customer_refs(version.named_email, version.customer_id, version.phone)
    if refs:
        Delivery.objects.filter(pk=delivery.pk).update(**refs)


def _remember_order_customer(delivery: Delivery, payload: dict) -> None:
    """An order body names its customer like a checkout does (`email`, `phone`, `customer`)."""
    customer = payload.get("customer") if isinstance(payload.get("customer"), dict) else {}
    email = next(
        (
            address
            for value in (payload.get("email"), payload.get("contact_email"), customer.get("email"))
            if (address := identifying_address(value))
        ),
        "",
    )
    refs = customer_refs(
        email,
        shopify_customer_id(customer.get("id")),
        _phone(customer.get("phone"), payload.get("phone")),
    )
    if refs:
        Delivery.objects.filter(pk=delivery.pk).update(**refs)


def _skip_invalid_email(checkout: CheckoutState) -> Outcome:
    """Decide at once: the address was refused at the edge and is not stored, so a later
    evaluation could only say "no e-mail address"."""
    _record(checkout, overwrite=False, arm=Arm.NONE, reason=INVALID_EMAIL)
    return Outcome(Status.DONE, f"checkout stored; no reminder: {INVALID_EMAIL}")


@handles("shopify", "checkouts/create", "checkouts/update")
def handle_shopify_checkout(delivery: Delivery) -> Outcome:
    """Store the newest checkout version and schedule its evaluation."""
    version = parse_shopify_checkout(_body(delivery), delivery.shop_domain)
    _remember_customer(delivery, version)
    checkout = store_checkout(version)
    if checkout is None:
        return Outcome(Status.STALE, "a newer version of this checkout is stored")
    if checkout.completed_at:
        return Outcome(Status.DONE, "checkout completed: no reminder")
    if version.email_invalid:
        return _skip_invalid_email(checkout)
    due = schedule_evaluation(checkout)
    return Outcome(Status.DONE, f"reminder evaluation scheduled for {due.isoformat()}")


@handles("shopify", "orders/create")
def handle_order(delivery: Delivery) -> Outcome:
    """An order for a checkout completes it: no reminder after that."""
    payload = _body(delivery)
    if not isinstance(payload, dict):
        raise InvalidPayload("body is not a JSON object")
    # Only the body is signed, so check it is an order: Shopify's order payload carries its
    # numeric `id` and `admin_graphql_api_id` "gid://shopify/Order/<id>"
    # (https://shopify.dev/docs/api/webhooks?reference=toml#list-of-topics-orders/create).
    if _optional_id(payload.get("id")) is None:
        raise InvalidPayload("not an orders/create body: id must be a positive integer")
    gid = payload.get("admin_graphql_api_id")
    if gid is not None and not (isinstance(gid, str) and gid.startswith("gid://shopify/Order/")):
        raise InvalidPayload(f"not an orders/create body: admin_graphql_api_id names {gid!r}"[:300])
    _remember_order_customer(delivery, payload)
    token = payload.get("checkout_token")
    if not isinstance(token, str) or not token.strip():
        return Outcome(Status.IGNORED, "order without checkout_token")
    when = _timestamp(payload.get("created_at"), "created_at", required=False) or timezone.now()
    mark_completed(CheckoutState.Source.SHOPIFY, token.strip()[:255], when, delivery.shop_domain)
    return Outcome(Status.DONE, "checkout marked completed")


@handles("stripe", "checkout.session.expired")
def handle_stripe_expired(delivery: Delivery) -> Outcome:
    """Stripe reports expiry late already: evaluate at once."""
    version = parse_stripe_session(_body(delivery))
    _remember_customer(delivery, version)
    checkout = store_checkout(version)
    if checkout is None:
        return Outcome(Status.STALE, "a newer version of this session is stored")
    if version.email_invalid:
        return _skip_invalid_email(checkout)
    schedule_evaluation(checkout, at=timezone.now())
    return Outcome(Status.DONE, "reminder evaluation enqueued")


@handles("stripe", "checkout.session.completed")
def handle_stripe_completed(delivery: Delivery) -> Outcome:
    version = parse_stripe_session(_body(delivery))
    _remember_customer(delivery, version)
    mark_completed(CheckoutState.Source.STRIPE, version.token, version.updated_at)
    return Outcome(Status.DONE, "checkout session marked completed")


# --- evaluation ----------------------------------------------------------------------------


def checkout_claim_key(checkout: CheckoutState) -> str:
    return f"reminder:{checkout.source}:{checkout.token}"


def address_claim_key(email: str) -> str:
    """The frequency cap's claim: one per address_key, whatever the spelling."""
    return f"reminder-to:{email_ref(address_key(email) or email)}"


CLAIM_TAKEN = "claim for this checkout already taken"
# Stored as the decision's reason (English, like the others) when production has no mail server.
NO_MAIL_SERVER = "no mail server configured"


def frequency_capped(config: ReminderSettings) -> str:
    return f"address got a reminder within {config.frequency_cap_days} days"


def recovery_link_hosts(checkout: CheckoutState) -> frozenset[str]:
    """The hosts a checkout's recovery link may point to: the shop's own and its vendor's."""
    own = set(settings.SHOP_STOREFRONT_DOMAINS)
    if checkout.source == CheckoutState.Source.STRIPE:
        return frozenset(own | STRIPE_CHECKOUT_HOSTS)
    shops = {domain.lower() for domain in [*settings.SHOPIFY_SHOP_DOMAINS, checkout.shop_domain]}
    return frozenset(own | (shops - {""}) | SHOPIFY_CHECKOUT_HOSTS)


def recovery_link_problem(url: str, hosts: frozenset[str]) -> str:
    """Why `url` may not go into a mail, or "" when it may.

    Only an https link to one of `hosts`, without a user name or another port: a body is
    signed by the sender but written by whoever made the checkout, and a `javascript:` link
    reached the HTML part. The reason names the host at most, never the rest of the link
    (its key opens the buyer's checkout).
    """
    if not url.isascii() or any(not ch.isprintable() or ch in " \\" for ch in url):
        return f"{RECOVERY_LINK_NOT_ALLOWED}: characters a link does not have"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return f"{RECOVERY_LINK_NOT_ALLOWED}: not a URL"
    if parts.scheme != "https":
        named = re.fullmatch(r"[a-z][a-z0-9+.-]{0,15}", parts.scheme)
        return f"{RECOVERY_LINK_NOT_ALLOWED}: " + (
            f"{parts.scheme}: is not https" if named else "not an https link"
        )
    if "@" in parts.netloc:
        return f"{RECOVERY_LINK_NOT_ALLOWED}: a user name before the host"
    if port not in (None, 443):
        return f"{RECOVERY_LINK_NOT_ALLOWED}: port {port}"
    if not parts.hostname:
        return f"{RECOVERY_LINK_NOT_ALLOWED}: no host"
    if parts.hostname not in hosts:
        return f"{RECOVERY_LINK_NOT_ALLOWED}: host {parts.hostname[:100]} is not the shop's"
    return ""


def skip_reason(checkout: CheckoutState, config: ReminderSettings) -> str:
    """Why this checkout gets no reminder at all, or "" when it may get one."""
    if checkout.completed_at:
        return "checkout completed"
    if not checkout.email:
        return "no e-mail address"
    key = address_key(checkout.email)
    if key is None:  # stored before addresses were normalised at the edge
        return INVALID_EMAIL
    if not checkout.accepts_marketing:
        return "no marketing consent (UWG §7)"
    if SuppressedAddress.objects.filter(email=key).exists():
        return "address unsubscribed"
    if claims.is_claimed(address_claim_key(key)):
        return frequency_capped(config)
    if claims.is_claimed(checkout_claim_key(checkout)):
        return CLAIM_TAKEN
    if not checkout.recovery_url:
        return "no recovery link"
    if problem := recovery_link_problem(checkout.recovery_url, recovery_link_hosts(checkout)):
        return problem
    if reminder_mail.mail_server_problem():
        return NO_MAIL_SERVER
    return ""


def _discount_block(checkout: CheckoutState, config: ReminderSettings) -> str:
    """Why the discount arm is unavailable, or "" when it may be offered."""
    if not config.discount_code.strip():
        return NO_DISCOUNT_CODE
    since = timezone.now() - timedelta(days=config.discount_cooldown_days)
    recent = ReminderDecision.objects.filter(
        email__iexact=checkout.email, arm=Arm.DISCOUNT, sent_at__gte=since
    )
    if recent.exists():
        return recent_discount(config.discount_cooldown_days)
    return ""


def decide(checkout: CheckoutState, config: ReminderSettings) -> tuple[ReminderChoice, dict]:
    """The expected-value choice for this checkout, and the inputs to keep with it."""
    basket = Basket(
        total=checkout.total_price,
        lines=tuple(
            Line(
                price=Decimal(line["price"]),
                quantity=line["quantity"],
                variant_id=line.get("variant_id"),
                product_id=line.get("product_id"),
                sku=line.get("sku", ""),
                vendor=line.get("vendor", ""),
            )
            for line in checkout.line_items
        ),
    )
    rows = list(MarginRuleRow.objects.all())
    rules = [
        MarginRule(
            rate=row.rate,
            variant_id=row.variant_id,
            product_id=row.product_id,
            sku=row.sku,
            vendor=row.vendor,
        )
        for row in rows
    ]
    probabilities = Probabilities(
        p0=config.p0,
        p_plain=config.p_plain,
        p_discount=config.p_discount,
        discount_rate=config.discount_rate,
    )
    blocked = _discount_block(checkout, config)
    choice = choose_reminder(
        basket,
        rules,
        probabilities,
        default_rate=config.default_margin_rate,
        discount_available=not blocked,
        discount_unavailable_reason=blocked,
    )
    inputs = {
        "total": str(checkout.total_price),
        "currency": checkout.currency,
        "lines": checkout.line_items,
        "margin_rules": [
            {"rate": str(rule.rate), "matches": str(row)}
            for rule, row in zip(rules, rows, strict=True)
        ],
        "default_margin_rate": str(config.default_margin_rate),
        "p0": str(config.p0),
        "p_plain": str(config.p_plain),
        "p_discount": str(config.p_discount),
        "discount_rate": str(config.discount_rate),
        "discount_available": not blocked,
    }
    return choice, inputs


def _record(checkout: CheckoutState, *, overwrite: bool, **fields) -> ReminderDecision:
    """One decision row per checkout version; a later run only overwrites it to send."""
    lookup = {"checkout": checkout, "checkout_version": checkout.updated_at}
    fields.setdefault("email", checkout.email)
    if overwrite:
        decision, _ = ReminderDecision.objects.update_or_create(**lookup, defaults=fields)
    else:
        decision, _ = ReminderDecision.objects.get_or_create(**lookup, defaults=fields)
    return decision


def _choice_fields(choice: ReminderChoice, inputs: dict) -> dict:
    return {
        "inputs": inputs,
        "margin": choice.margin,
        "discount_cost": choice.discount_cost,
        "delta_plain": choice.delta_plain,
        "delta_discount": choice.delta_discount,
        "arm": choice.arm,
        "reason": choice.reason[:500],
    }


def evaluate(checkout_id: int, version: datetime) -> str:
    """Decide about one checkout version and send at most one reminder; returns what happened."""
    checkout = CheckoutState.objects.filter(pk=checkout_id).first()
    if checkout is None:
        return "gone"
    if checkout.updated_at != version:
        return "superseded"
    config = ReminderSettings.load()
    reason = skip_reason(checkout, config)
    if reason:
        _record(checkout, overwrite=False, arm=Arm.NONE, reason=reason)
        return f"skipped: {reason}"
    choice, inputs = decide(checkout, config)
    if choice.arm == Arm.NONE:
        _record(checkout, overwrite=False, **_choice_fields(choice, inputs))
        return "none"

    checkout_key = checkout_claim_key(checkout)
    address_key = address_claim_key(checkout.email)
    if not claims.claim_once(checkout_key, CHECKOUT_CLAIM_TTL):
        _record(checkout, overwrite=False, arm=Arm.NONE, reason=CLAIM_TAKEN)
        return "skipped: claimed"
    if not claims.claim_once(address_key, timedelta(days=config.frequency_cap_days)):
        claims.release(checkout_key)
        _record(checkout, overwrite=False, arm=Arm.NONE, reason=frequency_capped(config))
        return "skipped: frequency cap"

    decision = _record(checkout, overwrite=True, **_choice_fields(choice, inputs), error="")
    try:
        reminder_mail.send(checkout, choice.arm, config)
    except Exception as err:
        claims.release(checkout_key)
        claims.release(address_key)
        ReminderDecision.objects.filter(pk=decision.pk).update(
            error=f"{type(err).__name__}: {err}"[:2000]
        )
        raise
    ReminderDecision.objects.filter(pk=decision.pk).update(sent_at=timezone.now())
    logger.info(
        "sent %s reminder to %s for checkout %s",
        choice.arm,
        mask_email(checkout.email),
        checkout.pk,
    )
    return f"sent {choice.arm}"
