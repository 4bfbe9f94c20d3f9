"""Stripe's `checkout.session.expired|completed` events, read as a checkout version."""

from decimal import Decimal

from django.conf import settings

from automation.intake.sources.checkout_version import CheckoutVersion, email_fields
from automation.intake.sources.fields import (
    bounded,
    dig,
    epoch_instant,
    json_object,
    phone,
    raw_email,
    text,
)
from automation.models import CheckoutState
from automation.platform.exceptions import InvalidPayload

# Values of the merchant's own consent field in a Stripe session's metadata that mean "opted
# in" (compared lower-case, without surrounding spaces); see stripe_consent.
STRIPE_CONSENT_VALUES = frozenset({"true", "yes", "1", "opt_in"})


def stripe_consent(session: dict) -> bool:
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
    promotions = dig(session, "consent", "promotions")
    if promotions == "opt_out":
        return False
    if promotions == "opt_in":
        return True
    given = bounded((metadata or {}).get(settings.STRIPE_CONSENT_METADATA_KEY))
    return isinstance(given, str) and given.strip().lower() in STRIPE_CONSENT_VALUES


def parse_stripe_session(event: object) -> CheckoutVersion:
    """Validate a Stripe `checkout.session.*` event into a checkout version.

    Stripe's own object fixture (stripe/openapi `openapi/fixtures3.json`, copied to
    tests/fixtures/stripe/) has nulls in `amount_total`, `currency`, `customer_email` and
    `after_expiration.recovery.url`: each null parses to an empty value, and the evaluation
    then skips the checkout with its reason (no address, no consent, no recovery link).
    """
    event = json_object(event, "event is not a JSON object")
    session = dig(event, "data", "object")
    created = event.get("created")
    if not isinstance(session, dict):
        raise InvalidPayload("event has no data.object")
    if type(created) is not int:
        raise InvalidPayload("event has no valid created timestamp")
    created_at = epoch_instant(created, "created")
    amount = session.get("amount_total") or 0
    if type(amount) is not int or not 0 <= amount < 10**12:
        raise InvalidPayload("amount_total must be a non-negative integer (cents)")
    completed = session.get("status") == "complete"
    # `customer_details.email` is what the buyer typed (null before they got that far);
    # `customer_email` is the address the merchant prefilled when creating the session.
    typed = raw_email(dig(session, "customer_details", "email"), "customer email")
    prefilled = raw_email(session.get("customer_email"), "customer_email")
    return CheckoutVersion(
        source=CheckoutState.Source.STRIPE,
        token=text(session.get("id"), "session id", 255, required=True),
        updated_at=created_at,
        **email_fields(typed if typed.strip() else prefilled),
        first_name="",
        phone=phone(dig(session, "customer_details", "phone")),
        accepts_marketing=stripe_consent(session),
        completed_at=created_at if completed else None,
        recovery_url=text(
            dig(session, "after_expiration", "recovery", "url"), "recovery url", 2000
        ),
        total_price=(Decimal(amount) / 100).quantize(Decimal("0.01")),
        currency=text(session.get("currency"), "currency", 3).upper(),
    )
