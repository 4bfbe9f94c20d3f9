"""Stripe Checkout outside the US: consent recorded by the shop in the session's metadata.

`consent.promotions` exists only for sessions created with `consent_collection.promotions=auto`,
which Stripe offers to US merchants only
(https://docs.stripe.com/payments/checkout/promotional-emails-consent). A German shop's sessions
carry Stripe's published shape (tests/fixtures/stripe/, from stripe/openapi) with the shop's own
opt-in in `metadata[STRIPE_CONSENT_METADATA_KEY]`.
"""

import json

import pytest
from django.conf import settings
from django.core import mail

from automation.intake.sources import stripe_checkouts
from automation.models import CheckoutState, Delivery, ReminderDecision, ReminderSettings
from automation.platform.exceptions import InvalidPayload
from tests.reminders.test_checkouts import (
    EMAIL,
    RECOVERY_URL,
    STRIPE_SESSION,
    stripe_event,
    stripe_session,
)
from tests.support.signing import post_stripe

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]

NO_CONSENT = "no marketing consent"


@pytest.fixture
def shop(db) -> ReminderSettings:
    """A discount code configured; Stripe sessions carry no lines, so the default margin counts."""
    config = ReminderSettings.load()
    config.discount_code = "ELBE10"
    config.save()
    return config


def consent_given(value: str = "true") -> dict:
    """The shop's own opt-in, recorded when it created the session."""
    return {settings.STRIPE_CONSENT_METADATA_KEY: value}


def only_decision() -> ReminderDecision:
    (decision,) = ReminderDecision.objects.all()
    return decision


def test_german_session_with_the_shops_consent_in_metadata_gets_a_reminder(
    client, run_worker, shop
):
    """Fails before: without `consent.promotions` every session was "no marketing consent"."""
    session = stripe_session(metadata=consent_given())
    assert session["consent"]["promotions"] is None  # as Stripe sends it outside the US
    post_stripe(client, stripe_event(session))
    run_worker()

    decision = only_decision()
    # 11 % × (16 € − 4 € off) − 4 % × 16 € = 0.68 beats plain's (8 % − 4 %) × 16 € = 0.64
    assert decision.arm == "discount"
    assert NO_CONSENT not in decision.reason
    assert decision.sent_at is not None
    (message,) = mail.outbox
    assert message.to == [EMAIL]
    assert RECOVERY_URL in message.body


@pytest.mark.parametrize(
    ("value", "consent"),
    [
        ("true", True),
        ("TRUE", True),
        (" yes ", True),
        ("1", True),
        ("opt_in", True),
        ("Opt_In", True),
        ("false", False),
        ("no", False),
        ("0", False),
        ("opt_out", False),
        ("", False),
        ("true-ish", False),
    ],
)
def test_metadata_values_that_count_as_consent(value, consent):
    version = stripe_checkouts.parse_stripe_session(
        stripe_event(stripe_session(metadata=consent_given(value)))
    )
    assert version.accepts_marketing is consent
    assert (value.strip().lower() in stripe_checkouts.STRIPE_CONSENT_VALUES) is consent


def test_the_metadata_key_is_a_setting(settings):
    settings.STRIPE_CONSENT_METADATA_KEY = "newsletter_ok"
    mine = stripe_session(metadata={"newsletter_ok": "yes"})
    default_key = stripe_session(metadata={"marketing_consent": "true"})
    assert stripe_checkouts.parse_stripe_session(stripe_event(mine)).accepts_marketing is True
    assert (
        stripe_checkouts.parse_stripe_session(stripe_event(default_key)).accepts_marketing is False
    )


def test_an_explicit_opt_out_at_stripe_beats_the_metadata(client, run_worker, shop):
    session = stripe_session(
        metadata=consent_given(), consent={"promotions": "opt_out", "terms_of_service": None}
    )
    post_stripe(client, stripe_event(session))
    run_worker()
    assert not mail.outbox
    assert NO_CONSENT in only_decision().reason


def test_no_consent_at_all_is_skipped(client, run_worker, shop):
    post_stripe(client, stripe_event(stripe_session()))
    run_worker()
    assert not mail.outbox
    assert NO_CONSENT in only_decision().reason
    assert Delivery.objects.get().status == Delivery.Status.DONE


def test_the_prefilled_customer_email_is_the_fallback_address(client, run_worker, shop):
    """Fails before: only `customer_details.email` was read, so no address, no mail."""
    session = stripe_session(
        metadata=consent_given(), customer_details=None, customer_email="Kundin@Example.com"
    )
    # the domain lower-cased at the edge, the local part as given (automation/platform/addresses.py)
    assert (
        stripe_checkouts.parse_stripe_session(stripe_event(session)).email == "Kundin@example.com"
    )
    post_stripe(client, stripe_event(session))
    run_worker()
    (message,) = mail.outbox
    assert message.to == ["Kundin@example.com"]


def test_the_typed_address_wins_over_the_prefilled_one():
    session = stripe_session(customer_email="prefilled@example.com")
    assert stripe_checkouts.parse_stripe_session(stripe_event(session)).email == EMAIL


def test_the_published_fixture_parses_as_it_is():
    published = json.loads(STRIPE_SESSION.read_text())
    version = stripe_checkouts.parse_stripe_session(stripe_event(published))
    assert version.token == published["id"]
    assert version.email == "example@example.com"
    assert version.accepts_marketing is False  # consent.promotions null, metadata {}
    assert (version.total_price, version.currency, version.recovery_url) == (0, "", "")
    assert version.completed_at is None


def test_the_published_fixture_end_to_end_is_a_clear_skip(client, run_worker, shop):
    post_stripe(client, stripe_event())
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DONE
    assert only_decision().reason.startswith(NO_CONSENT)
    assert not mail.outbox


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        # consent given, but the published nulls: no recovery link, no address
        ({"status": "expired"}, "no recovery link"),
        ({"customer_details": None}, "no e-mail address"),
        ({"customer_details": {"email": None, "phone": None}}, "no e-mail address"),
    ],
)
def test_consent_with_the_fixtures_nulls_is_skipped_with_its_reason(
    client, run_worker, shop, changes, reason
):
    published = json.loads(STRIPE_SESSION.read_text())
    post_stripe(client, stripe_event(published, metadata=consent_given(), **changes))
    run_worker()
    assert only_decision().reason == reason
    assert not mail.outbox


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"metadata": ["marketing_consent"]}, "metadata must be an object"),
        ({"customer_email": 42}, "customer_email"),
        ({"amount_total": "4000"}, "amount_total"),
    ],
)
def test_malformed_session_ends_invalid_with_the_reason(client, run_worker, changes, reason):
    post_stripe(client, stripe_event(stripe_session(**changes)))
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID
    assert reason in delivery.last_error
    with pytest.raises(InvalidPayload):
        stripe_checkouts.parse_stripe_session(stripe_event(stripe_session(**changes)))


def test_null_metadata_is_no_consent_not_an_error():
    version = stripe_checkouts.parse_stripe_session(stripe_event(stripe_session(metadata=None)))
    assert version.accepts_marketing is False


def test_completed_session_in_the_published_shape_marks_the_checkout_completed(
    client, run_worker, shop
):
    session = stripe_session(status="complete", metadata=consent_given())
    post_stripe(client, stripe_event(session, "checkout.session.completed"))
    run_worker()
    post_stripe(client, stripe_event(stripe_session(metadata=consent_given())))
    run_worker()
    assert CheckoutState.objects.get().completed_at is not None
    assert only_decision().reason == "checkout completed"
    assert not mail.outbox
