"""Did the buyer pay meanwhile? The one question asked of the vendor before a reminder goes out.

Our stored state knows a purchase only once its webhook arrived: Shopify retries a failed
`orders/create` for up to four hours, and a lost one never arrives, so a buyer who paid would
still get "Dein Warenkorb wartet". Before a mail goes out we therefore ask the checkout's vendor:
Shopify for an order of the checkout's token, or from its address since the checkout
(automation.shopify.queries.ShopifyAdmin.order_for_checkout), Stripe for the session's status
(automation.stripe.checkout.retrieve_session). Three answers: bought, not bought, or unknown. An
unknown answer never sends: the evaluation is retried on REMINDER_RETRY_INTERVALS while the
vendor may answer later, and after that, or at once when we cannot ask at all (no Admin API
access, no Stripe key, a shop we have no access to), the reminder is skipped with the reason.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from django.conf import settings

from automation.models import CheckoutState
from automation.platform import connections
from automation.platform.notes import Note, note
from automation.shopify import access as shopify_access
from automation.shopify.queries import ShopifyAdmin
from automation.shopify.transport import ShopifyAdminError
from automation.stripe import checkout as stripe_checkout

logger = logging.getLogger(__name__)

# Per question: one more try of a throttled query and of a request that failed on the network;
# each request may take REMINDER_PAID_CHECK_TIMEOUT. The job's RQ retries do the rest.
THROTTLE_RETRIES = 1
TRANSPORT_ATTEMPTS = 2


class Paid(enum.StrEnum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Answer:
    """The vendor's answer; `reason` says it for the merchant (empty for NO)."""

    paid: Paid
    reason: Note | str = ""
    retry: bool = False
    """UNKNOWN only: asking again later may help (the vendor failed, not our configuration)."""


class PaidUnknown(Exception):
    """The vendor could not say whether the buyer paid: evaluate again later (RQ's retry)."""


def ask(checkout: CheckoutState) -> Answer:
    """Whether the buyer of `checkout` paid since; asks the vendor, never guesses."""
    if settings.REMINDER_PAID_CHECK == "stored":
        return Answer(Paid.NO)
    if checkout.source == CheckoutState.Source.STRIPE:
        return _ask_stripe(checkout)
    return _ask_shopify(checkout)


def _cannot_ask(vendor: str, why: Note) -> Answer:
    return Answer(Paid.UNKNOWN, note("paid_cannot_ask", vendor=vendor, why=why))


def _failed(vendor: str, error: Exception) -> Answer:
    logger.warning("%s could not say whether checkout was paid: %s", vendor, error)
    return Answer(
        Paid.UNKNOWN,
        note("paid_failed", vendor=vendor, error=str(error)[:200]),
        retry=True,
    )


def _ask_shopify(checkout: CheckoutState) -> Answer:
    tokens = shopify_access.token_source()
    if tokens is None:
        return _cannot_ask(
            "Shopify",
            note("paid_no_admin_access", settings=shopify_access.missing_settings()),
        )
    ours = shopify_access.admin_shop_domain()
    shop = checkout.shop_domain.lower()
    if shop and shop != ours:
        return _cannot_ask(
            "Shopify",
            note("paid_other_shop", ours=ours, shop=shop),
        )
    admin = ShopifyAdmin(
        settings.SHOPIFY_ADMIN_URL,
        tokens,
        settings.SHOPIFY_API_VERSION,
        timeout=settings.REMINDER_PAID_CHECK_TIMEOUT,
        max_retries=THROTTLE_RETRIES,
        transport_attempts=TRANSPORT_ATTEMPTS,
    )
    try:
        order = admin.order_for_checkout(checkout.token, checkout.email, checkout.updated_at)
    except ShopifyAdminError as err:
        return _failed("Shopify", err)
    finally:
        admin.close()
    if order is None:
        return Answer(Paid.NO)
    number = order.rsplit("/", 1)[-1]
    return Answer(
        Paid.YES,
        note("paid_shopify_order", order=number),
    )


def _ask_stripe(checkout: CheckoutState) -> Answer:
    key = connections.current().stripe_api_key.value
    if not key:
        return _cannot_ask("Stripe", note("paid_set_stripe_key"))
    try:
        session = stripe_checkout.retrieve_session(
            checkout.token,
            key,
            base_url=settings.STRIPE_API_URL,
            timeout=settings.REMINDER_PAID_CHECK_TIMEOUT,
        )
    except stripe_checkout.StripeError as err:
        return _failed("Stripe", err)
    if session.complete:
        return Answer(
            Paid.YES,
            note("paid_stripe_complete", payment=session.payment_status or "-"),
        )
    return Answer(Paid.NO)
