"""The admin index: the merchant's sections first, in the order of the daily work; the technical
records in one section that only superusers see and open."""

import re

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext

from automation.models import Claim
from automation.ui.admin_site import OTHER, SECTIONS, TECHNICAL, section_of

pytestmark = pytest.mark.django_db

TECHNICAL_URLS = (
    "/admin/automation/claim/",
    "/admin/authtoken/tokenproxy/",
    "/admin/axes/accessattempt/",
    "/admin/axes/accesslog/",
    "/admin/axes/accessfailurelog/",
)


def _captions(page: str) -> list[str]:
    return re.findall(r'<a href="[^"]*" class="section"[^>]*>([^<]+)</a>', page)


def _staff_with_every_permission() -> User:
    """A staff member whose group gave every permission there is, technical ones included."""
    user = User.objects.create_user("team", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.all())
    return user


def test_every_registered_model_has_a_section():
    """A new admin entry must be placed on purpose: nothing falls into "other" unnoticed."""
    unplaced = [m.__name__ for m in admin.site._registry if section_of(m) == OTHER]
    assert unplaced == []


def test_the_superuser_sees_the_merchant_sections_first_and_technical_last(admin_client):
    with translation.override("de"):
        page = admin_client.get("/admin/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
        expected = [gettext(str(title)) for _name, title, _keys in SECTIONS]
    assert _captions(page) == expected
    assert page.index("Beobachtete Produkte") < page.index("Zustellungen")
    technical = page.index(f">{expected[-1]}</a>")
    for entry in ("Tokens", "Zugriffsversuche", "Django-RQ", str(Claim._meta.verbose_name_plural)):
        with translation.override("de"):
            entry = gettext(entry)
        assert page.index(entry, technical) > technical


def test_a_staff_member_with_every_permission_sees_no_technical_section(client):
    client.force_login(_staff_with_every_permission())
    page = client.get("/admin/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    captions = _captions(page)
    assert "Technik" not in captions and str(SECTIONS[-1][1]) not in captions
    assert "/admin/automation/claim/" not in page
    assert "/admin/axes/" not in page and "/admin/authtoken/" not in page
    assert "/admin/automation/watchedproduct/" in page


@pytest.mark.parametrize("url", TECHNICAL_URLS)
def test_a_staff_member_cannot_open_a_technical_list(client, url):
    client.force_login(_staff_with_every_permission())
    response = client.get(url)
    assert response.status_code == 403
    assert b'id="changelist"' not in response.content


@pytest.mark.parametrize("url", TECHNICAL_URLS)
def test_the_superuser_opens_every_technical_list(admin_client, url):
    response = admin_client.get(url)
    assert response.status_code == 200
    assert b'id="changelist"' in response.content
    assert response.context["cl"].opts.model_name == url.split("/")[-2]


def test_an_apps_own_page_keeps_its_models(admin_client):
    page = admin_client.get(reverse("admin:app_list", args=["automation"])).content.decode()
    assert "/admin/automation/watchedproduct/" in page
    assert "/admin/automation/claim/" in page


def test_the_sections_name_no_model_twice():
    keys = [key for _name, _title, section in SECTIONS for key in section]
    assert len(keys) == len(set(keys))
    assert SECTIONS[-1][0] == TECHNICAL
