"""The API's documentation is linked from the admin and readable with the admin's session."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_every_admin_page_links_the_api_documentation(admin_client):
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert f'href="{reverse("api-docs")}"' in page


def test_the_schema_and_its_browsable_page_open_with_the_admin_session(admin_client):
    # Given the merchant logged in to the admin (a session cookie, no API token)
    schema = admin_client.get("/api/schema/")
    # Then the OpenAPI schema and the Swagger page that reads it both open
    assert schema.status_code == 200
    assert b"/api/watched-products/" in schema.content
    docs = admin_client.get(reverse("api-docs"))
    assert docs.status_code == 200
    assert reverse("api-schema").encode() in docs.content


def test_without_a_login_the_schema_stays_closed(client):
    # the token scheme is the first authentication the API offers, so it answers 401 asking for it
    for url in ("/api/schema/", reverse("api-docs")):
        response = client.get(url)
        assert response.status_code == 401, url
        assert response["WWW-Authenticate"] == "Token", url
        assert b"/api/watched-products/" not in response.content, url


def test_a_logged_in_non_staff_user_does_not_get_the_schema(client, django_user_model):
    user = django_user_model.objects.create_user("kunde", password="x")
    client.force_login(user)
    response = client.get("/api/schema/")
    assert response.status_code == 403
    assert b"/api/watched-products/" not in response.content
