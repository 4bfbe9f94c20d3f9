"""The admin's frame names the shop and leads to the dashboard, in German."""

import pytest
from django.conf import settings
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_the_header_is_the_shops_name_and_view_site_opens_the_dashboard(admin_client):
    page = admin_client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert settings.SHOP_NAME == "Elbkerzen"
    assert f'<a href="{reverse("admin:index")}">{settings.SHOP_NAME}</a>' in page
    assert "Django-Verwaltung" not in page and "Django administration" not in page
    assert f'<a href="{reverse("dashboard")}">Website anzeigen</a>' in page
    assert "API-Dokumentation" in page


def test_the_dashboard_has_the_same_frame(admin_client):
    page = admin_client.get(reverse("dashboard"), HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert f"| {settings.SHOP_NAME}</title>" in page
    assert "API-Dokumentation" in page
