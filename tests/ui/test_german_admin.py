"""The merchant's admin speaks German by default; English stays available."""

import pytest
from django.utils import translation

from automation.models import ReminderSettings

pytestmark = pytest.mark.django_db


def test_admin_speaks_german_for_a_german_browser(admin_client):
    page = admin_client.get("/admin/automation/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    # the app index lists each model under its plural name, first letter capitalised
    assert '<a href="/admin/automation/watchedproduct/">Beobachtete Produkte</a>' in page
    assert "Watched products" not in page


def test_help_texts_explain_the_shop_terms_in_german(admin_client):
    config = ReminderSettings.load()
    page = admin_client.get(
        f"/admin/automation/remindersettings/{config.pk}/change/", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert "ohne jede E-Mail" in page  # p0: completed without any mail


def test_english_stays_available(admin_client):
    page = admin_client.get("/admin/automation/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Watched products" in page


def test_default_language_is_german(settings):
    from django.conf import settings as live

    assert live.LANGUAGES == [("de", "Deutsch"), ("en", "English")]
    with translation.override("de"):
        assert str(ReminderSettings._meta.verbose_name) != "reminder settings"


def test_every_field_the_merchant_edits_has_a_help_text():
    from django.contrib import admin

    from automation.models import AdGroup, Location, MarginRule, Promotion, WatchedProduct

    for model in (WatchedProduct, AdGroup, Location, MarginRule, ReminderSettings, Promotion):
        form = admin.site._registry[model].get_form(None)
        for name, field in form.base_fields.items():
            # what the page shows: the model field's help text, or the form's own
            assert field.help_text, f"{model.__name__}.{name} has no help text"


def test_the_watched_product_form_explains_its_levels_in_german(admin_client):
    page = admin_client.get(
        "/admin/automation/watchedproduct/add/", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert "Pausieren bei" in page and "Wieder aktivieren über" in page
    assert "Die Anzeigengruppen pausieren, wenn der Bestand der gezählten Varianten" in page
    assert "alle Varianten (auch später hinzugefügte)" in page
