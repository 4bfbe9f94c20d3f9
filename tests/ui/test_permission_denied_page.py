"""A permission error is a German page in the admin's frame with a way back, not a bare
"403 Forbidden"."""

import pytest
from django.contrib.auth.models import User
from django.utils import translation
from django.utils.translation import gettext

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    """A staff member without any permission."""
    client.force_login(User.objects.create_user("aushilfe", password="pw", is_staff=True))
    return client


def _german(text: str) -> str:
    with translation.override("de"):
        return gettext(text)


def test_a_staff_member_without_permission_gets_a_german_page_with_a_way_home(staff_client):
    response = staff_client.get("/admin/automation/delivery/", HTTP_ACCEPT_LANGUAGE="de")
    page = response.content.decode()
    assert response.status_code == 403
    assert '<html lang="de"' in page
    assert _german("No access") in page
    assert "aushilfe" in page
    assert '<a class="button" href="/admin/">' in page
    assert "Start</a>" in page  # the admin's breadcrumbs, in Django's own German
    assert "403 Forbidden" not in page


def test_the_page_leads_back_to_where_the_user_came_from(staff_client):
    response = staff_client.get(
        "/admin/automation/delivery/",
        HTTP_ACCEPT_LANGUAGE="de",
        HTTP_REFERER="http://testserver/admin/",
    )
    assert 'href="http://testserver/admin/">' in response.content.decode()


def test_a_foreign_referer_is_no_way_back(staff_client):
    response = staff_client.get(
        "/admin/automation/delivery/",
        HTTP_ACCEPT_LANGUAGE="de",
        HTTP_REFERER="https://evil.example/phish",
    )
    assert response.status_code == 403
    assert "evil.example" not in response.content.decode()


def test_the_queue_dashboard_refuses_a_staff_member_in_german(staff_client):
    response = staff_client.get("/admin/rq/", HTTP_ACCEPT_LANGUAGE="de")
    assert response.status_code == 403
    assert _german("No access") in response.content.decode()


def test_a_refusal_before_sign_in_is_still_a_german_page(rf):
    """A 403 raised before the authentication middleware ran has no user: no admin frame,
    but the same page and the way to the start page."""
    from automation.ui.admin_site import permission_denied

    request = rf.get("/admin/automation/delivery/")
    with translation.override("de"):
        response = permission_denied(request)
        response.render()
    page = response.content.decode()
    assert response.status_code == 403
    assert _german("No access") in page
    assert 'href="/admin/"' in page
