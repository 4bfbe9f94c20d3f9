"""Numbers, dates and money in German wherever the merchant or a customer reads them.

Django's localisation formats them (number_format with the locale's separators), so the tests
switch the language the way a request or the worker does and read the rendered text.
"""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import override_settings
from django.utils import translation

from automation.models import CheckoutState, ReminderSettings
from automation.reminders import mail as reminder_mail
from automation.ui.dashboard import charts
from automation.ui.dashboard import format as fmt


def _checkout(**fields) -> CheckoutState:
    values = {
        "email": "kundin@example.com",
        "first_name": "Kim",
        "line_items": [
            {"title": "Winterzauber", "quantity": 1, "price": "24.00"},
            {"title": "Adventskranz", "quantity": 1, "price": "1210.50"},
        ],
        "total_price": Decimal("1234.50"),
        "currency": "EUR",
        "recovery_url": "https://elbkerzen.myshopify.com/1/checkouts/ac/t/recover?key=k",
    }
    values.update(fields)
    return CheckoutState(**values)


@pytest.mark.parametrize("language", ["de", "en"])
def test_the_reminder_shows_prices_in_german_with_the_euro_sign(language):
    """Given a basket of 24 € and 1.210,50 €, when the reminder is built (whatever language the
    worker runs in), then both parts show "24,00 €" and the total "1.234,50 €"."""
    config = ReminderSettings(discount_code="ELBE10", discount_rate=Decimal("0.125"))
    with translation.override(language):
        message = reminder_mail.build(_checkout(), "discount", config)
    html = message.alternatives[0][0]
    for part in (message.body, html):
        assert "24,00 €" in part
        assert "1.210,50 €" in part
        assert "1.234,50 €" in part
        assert "12,5 %" in part
        assert "EUR" not in part
        assert "24.00" not in part


def test_another_currency_keeps_its_code():
    message = reminder_mail.build(
        _checkout(currency="CHF", total_price=Decimal("24")), "plain", ReminderSettings()
    )
    assert "Summe: 24,00 CHF" in message.body


@override_settings(USE_THOUSAND_SEPARATOR=False)
def test_dashboard_money_is_grouped_in_german_even_without_the_thousand_setting():
    with translation.override("de"):
        assert fmt.format_euros(Decimal("1234.5")) == "1.234,50 €"
        assert fmt.format_euros(Decimal("0.004")) == "< 0,01 €"
        assert fmt.format_clicks(Decimal("71.6667")) == "71,67"
        assert fmt.format_clicks(Decimal("1234.5")) == "1.234,50"
        assert fmt.format_percent(Decimal("0.125")) == "12,5 %"
        assert fmt.format_duration(timedelta(hours=43)) == "43 h"
        assert fmt.format_duration(timedelta(hours=1250)) == "1.250 h"
    with translation.override("en"):
        assert fmt.format_euros(Decimal("1234.5")) == "1,234.50 €"


@override_settings(USE_THOUSAND_SEPARATOR=False)
def test_chart_axis_and_totals_are_german_numbers():
    with translation.override("de"):
        assert fmt.number(1250) == "1.250"
        assert fmt.number(2.5) == "2,5"
        svg = charts.stacked_bar_chart(
            ["1. Dezember"], [charts.Series("erledigt", [1250])], title="t"
        )
    assert ">1.250<" in svg
    assert ">1250<" not in svg
