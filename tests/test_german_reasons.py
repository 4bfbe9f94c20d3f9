"""Reasons are stored in the shop's language, so the admin shows them in German.

A reason (why an ad group was paused, why a checkout got no reminder) is written once, by the
worker, in the active language: the shop's LANGUAGE_CODE there (German in production), the
merchant's own language for a change made in the admin. Tests run in English (pyproject's
LANGUAGE_CODE=en); these switch the shop to German as production has it.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone, translation

from automation import checkouts
from automation.decisions import (
    NO_DISCOUNT_CODE,
    Basket,
    Line,
    Probabilities,
    choose_reminder,
)
from automation.models import AdGroupAction, CheckoutState, ReminderSettings
from automation.sources.shopify_inventory import LevelUpdate
from tests.support.levels import apply_level
from tests.support.watching import watch

pytestmark = pytest.mark.django_db


@pytest.fixture
def german_shop(settings):
    """The worker of a German shop: no request, so the shop's LANGUAGE_CODE is active."""
    settings.LANGUAGE_CODE = "de"
    with translation.override("de"):
        yield


def test_a_sell_out_is_logged_in_german(german_shop):
    # Given Winterzauber watched with "pause at 0"
    watch(808950810, "555", customer_id="1234567890")
    # When the last candle is sold
    sold_out = LevelUpdate(808950810, 24826418, 0, datetime(2026, 11, 26, 10, tzinfo=UTC))
    apply_level(sold_out, source=AdGroupAction.Source.WEBHOOK)
    # Then the action log says why, in German
    assert AdGroupAction.objects.get().reason == "Winterzauber: Bestand 0 ≤ 0"
    # And so does the restock
    restocked = LevelUpdate(808950810, 24826418, 12, datetime(2026, 11, 26, 11, tzinfo=UTC))
    apply_level(restocked, source=AdGroupAction.Source.WEBHOOK)
    assert AdGroupAction.objects.first().reason == "Winterzauber: Bestand 12 > 0"


def test_a_reminder_decision_is_explained_in_german(german_shop):
    basket = Basket(total=Decimal("40.00"), lines=[Line(price=Decimal("40.00"), quantity=1)])
    choice = choose_reminder(
        basket,
        [],
        Probabilities(p0=Decimal("0.04"), p_plain=Decimal("0.08")),
        default_rate=Decimal("0.40"),
        discount_available=False,
        discount_unavailable_reason=NO_DISCOUNT_CODE,
    )
    assert choice.reason == (
        "einfache Erinnerung: ΔE 0,64; Rabatt nicht möglich (kein Rabattcode eingetragen)"
    )


def test_a_skipped_checkout_says_why_in_german(german_shop):
    checkout = CheckoutState.objects.create(
        source=CheckoutState.Source.SHOPIFY,
        token="b7d1c0a9",
        email="kundin@example.com",
        updated_at=timezone.now() - timedelta(hours=2),
        completed_at=timezone.now(),
        total_price=Decimal("40.00"),
    )
    reason = checkouts.skip_reason(checkout, ReminderSettings.load())
    assert reason == "Checkout abgeschlossen"
