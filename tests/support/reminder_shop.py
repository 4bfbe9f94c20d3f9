"""The shop as the reminder tests meet it: own candles at 55 % margin, a discount code set.

Import `reminder_shop` where a test asks for `shop`; the fixture is named `shop`.
"""

from decimal import Decimal

import pytest

from automation.models import MarginRule, ReminderSettings


@pytest.fixture(name="shop")
def reminder_shop(db) -> ReminderSettings:
    """Own candles at 55 % margin, a discount code configured (a 40 € basket gets the
    discount reminder)."""
    MarginRule.objects.create(vendor="Elbkerzen", rate=Decimal("0.55"), note="own candles")
    config = ReminderSettings.load()
    config.discount_code = "ELBE10"
    config.save()
    return config
