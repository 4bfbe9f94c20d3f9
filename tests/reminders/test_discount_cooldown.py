"""The discount cooldown: an address that got a discount recently is offered no second one.

The reason the decision records is `decisions.recent_discount(days)`, the one text the pure
rules' tests use too, so a test cannot pass against wording the code no longer writes.
"""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from automation.models import CheckoutState, MarginRule, ReminderDecision, ReminderSettings
from automation.reminders import checkouts
from automation.reminders.rules import DISCOUNT_COOLDOWN_DAYS, recent_discount

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("not_bought")]

ADDRESS = "kundin@example.org"


def own_candles_checkout(token: str) -> CheckoutState:
    """40 € of own candles at 55 %: the discount arm wins whenever it is available."""
    return CheckoutState.objects.create(
        source=CheckoutState.Source.SHOPIFY,
        token=token,
        email=ADDRESS,
        accepts_marketing=True,
        updated_at=timezone.now(),
        total_price=Decimal("40.00"),
        line_items=[{"price": "40.00", "quantity": 1, "variant_id": 1, "vendor": "Elbkerzen"}],
    )


@pytest.fixture
def config() -> ReminderSettings:
    MarginRule.objects.create(vendor="Elbkerzen", rate=Decimal("0.55"))
    settings = ReminderSettings.load()
    settings.discount_code = "ELBE10"
    settings.save()
    return settings


def discount_sent(days_ago: int) -> None:
    earlier = own_candles_checkout(f"earlier-{days_ago}")
    ReminderDecision.objects.create(
        checkout=earlier,
        checkout_version=earlier.updated_at,
        email=ADDRESS,
        arm=ReminderDecision.Arm.DISCOUNT,
        reason="discount",
        sent_at=timezone.now() - timedelta(days=days_ago),
    )


def test_a_discount_within_the_cooldown_closes_the_discount_arm(config):
    discount_sent(days_ago=3)
    choice, _ = checkouts.decide(own_candles_checkout("now"), config)
    assert choice.arm == "plain"
    assert choice.delta_discount is None
    assert choice.reason.endswith(
        f"discount unavailable ({recent_discount(DISCOUNT_COOLDOWN_DAYS)})"
    )


def test_a_discount_before_the_cooldown_leaves_it_open(config):
    discount_sent(days_ago=DISCOUNT_COOLDOWN_DAYS + 1)
    choice, _ = checkouts.decide(own_candles_checkout("now"), config)
    assert choice.arm == "discount"
