"""Decimal settings in the admin read and take German numbers: "0,04", not "0.0400"."""

import re
from decimal import Decimal

import pytest
from django.forms.models import model_to_dict
from django.test import override_settings
from django.utils import translation

from automation.models import AdGroup, MarginRule, ReminderSettings
from automation.ui.admin_forms import LocalizedDecimalField, shown_decimal

pytestmark = pytest.mark.django_db

SETTINGS_URL = "/admin/automation/remindersettings/{pk}/change/"


def _value_of(page: str, name: str) -> str:
    found = re.search(rf'<input[^>]*name="{name}"[^>]*>', page)
    assert found, f"no input {name}"
    return re.search(r'value="([^"]*)"', found.group(0)).group(1)


def _settings_form(config: ReminderSettings, **changes: str) -> dict:
    data = {k: ("" if v is None else v) for k, v in model_to_dict(config).items()}
    data.pop("id", None)
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("0.0400", "0.04"),
        ("0.1000", "0.10"),
        ("0.1250", "0.125"),
        ("1", "1.00"),
        ("30.00", "30.00"),
    ],
)
def test_a_stored_decimal_is_shown_without_the_columns_trailing_zeros(stored, shown):
    assert str(shown_decimal(Decimal(stored))) == shown


def test_the_reminder_settings_show_german_numbers(admin_client):
    config = ReminderSettings.load()
    page = admin_client.get(
        SETTINGS_URL.format(pk=config.pk), HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert _value_of(page, "p0") == "0,04"
    assert _value_of(page, "discount_rate") == "0,10"
    assert "0.0400" not in page and "0,0400" not in page


@pytest.mark.parametrize("typed", ["0,05", "0.05", " 0,05 "])
def test_the_reminder_settings_take_a_comma_or_a_point(admin_client, typed):
    config = ReminderSettings.load()
    response = admin_client.post(
        SETTINGS_URL.format(pk=config.pk),
        _settings_form(config, p0=typed, discount_rate="0,125"),
        HTTP_ACCEPT_LANGUAGE="de",
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    config.refresh_from_db()
    assert config.p0 == Decimal("0.05")
    assert config.discount_rate == Decimal("0.125")


def test_a_number_that_is_not_one_is_refused_in_german(admin_client):
    config = ReminderSettings.load()
    response = admin_client.post(
        SETTINGS_URL.format(pk=config.pk),
        _settings_form(config, p0="vier Prozent"),
        HTTP_ACCEPT_LANGUAGE="de",
    )
    assert response.status_code == 200
    assert "Bitte eine Zahl eingeben." in response.content.decode()
    config.refresh_from_db()
    assert config.p0 == Decimal("0.04")


@pytest.mark.parametrize("thousands", [False, True])
def test_a_point_alone_is_a_decimal_point_whatever_the_thousands_setting(thousands):
    """Django's own localize=True reads "0.125" as 125 once USE_THOUSAND_SEPARATOR is on."""
    field = LocalizedDecimalField(max_digits=8, decimal_places=4)
    with override_settings(USE_THOUSAND_SEPARATOR=thousands), translation.override("de"):
        assert field.clean("0.125") == Decimal("0.125")
        assert field.clean("1.250,5") == Decimal("1250.5")
        assert field.clean("0,04") == Decimal("0.04")


def test_the_margin_rules_list_edits_german_rates(admin_client):
    rule = MarginRule.objects.create(rate=Decimal("0.55"), vendor="Elbkerzen")
    page = admin_client.get(
        "/admin/automation/marginrule/", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert _value_of(page, "form-0-rate") == "0,55"
    response = admin_client.post(
        "/admin/automation/marginrule/",
        {
            "form-TOTAL_FORMS": "1",
            "form-INITIAL_FORMS": "1",
            "form-0-id": str(rule.pk),
            "form-0-rate": "0,6",
            "_save": "Sichern",
        },
        HTTP_ACCEPT_LANGUAGE="de",
    )
    assert response.status_code == 302
    rule.refresh_from_db()
    assert rule.rate == Decimal("0.6")


def test_an_ad_groups_click_price_is_german(admin_client):
    group = AdGroup.objects.create(
        customer_id="1234567890", ad_group_id="555", name="Kerzen", cost_per_click=Decimal("0.8")
    )
    page = admin_client.get(
        f"/admin/automation/adgroup/{group.pk}/change/", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert _value_of(page, "cost_per_click") == "0,80"
