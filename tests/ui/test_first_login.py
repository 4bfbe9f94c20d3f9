"""After signing in, a staff user without an address is asked for one, once: one field,
"Skip" skips for the session, a saved address receives the alerts; never a loop."""

import pytest

from automation.platform import alerts

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
PASSWORD = "kerzen-sind-hell-42"


@pytest.fixture
def no_alert_emails(settings):
    settings.ALERT_EMAILS = []


@pytest.fixture
def admin_without_address(django_user_model):
    return django_user_model.objects.create_superuser("inhaberin", email="", password=PASSWORD)


def sign_in(client, username="inhaberin"):
    answer = client.post(
        "/admin/login/?next=/admin/", {"username": username, "password": PASSWORD}, **EN
    )
    assert answer.status_code == 302 and answer["Location"] == "/admin/"
    return answer


def test_the_first_admin_page_asks_for_an_address_and_saving_sends_alerts_there(
    client, no_alert_emails, admin_without_address
):
    sign_in(client)
    asked = client.get("/admin/", **EN)
    assert asked.status_code == 302
    assert asked["Location"] == "/admin/setup/email/?next=%2Fadmin%2F"
    form = client.get(asked["Location"], **EN).content.decode()
    assert 'name="email"' in form and 'name="skip"' in form
    own = form[form.index('<form method="post" novalidate>') :]
    own = own[: own.index("</form>")]
    assert own.count("<input") == 5  # csrf, next, the one field, save, skip

    saved = client.post(
        "/admin/setup/email/",
        {"email": "inhaberin@elbkerzen.example", "next": "/admin/"},
        **EN,
    )

    assert saved.status_code == 302 and saved["Location"] == "/admin/"
    admin_without_address.refresh_from_db()
    assert admin_without_address.email == "inhaberin@elbkerzen.example"
    assert alerts.recipients() == ["inhaberin@elbkerzen.example"]
    assert client.get("/admin/", **EN).status_code == 200


def test_skip_is_remembered_for_the_session_and_never_loops(
    client, no_alert_emails, admin_without_address
):
    sign_in(client)
    asked = client.get("/admin/automation/heldchange/", **EN)
    assert asked["Location"].startswith("/admin/setup/email/")

    skipped = client.post(
        "/admin/setup/email/", {"skip": "1", "next": "/admin/automation/heldchange/"}
    )

    assert skipped["Location"] == "/admin/automation/heldchange/"
    for path in ("/admin/", "/admin/automation/heldchange/", "/admin/setup/"):
        assert client.get(path, **EN).status_code == 200
    admin_without_address.refresh_from_db()
    assert admin_without_address.email == ""


def test_asked_once_even_when_the_form_is_left_without_an_answer(
    client, no_alert_emails, admin_without_address
):
    sign_in(client)
    asked = client.get("/admin/", **EN)
    assert asked.status_code == 302
    assert asked["Location"].startswith("/admin/setup/email/")
    again = client.get("/admin/", **EN)
    assert again.status_code == 200
    assert b'href="/admin/automation/watchedproduct/"' in again.content  # the index, not the form
    admin_without_address.refresh_from_db()
    assert admin_without_address.email == ""


def test_an_invalid_address_is_refused_in_the_form(client, no_alert_emails, admin_without_address):
    sign_in(client)
    answer = client.post("/admin/setup/email/", {"email": "keine-adresse", "next": "/admin/"}, **EN)
    assert answer.status_code == 200
    assert "Enter a valid email address." in answer.content.decode()


def test_next_never_leads_off_the_site(client, no_alert_emails, admin_without_address):
    sign_in(client)
    answer = client.post("/admin/setup/email/", {"skip": "1", "next": "https://evil.example/"})
    assert answer["Location"] == "/admin/"


@pytest.mark.parametrize(
    "case", ["has an address", "alert emails set", "not staff", "a post", "a popup"]
)
def test_not_asked(client, settings, django_user_model, case):
    settings.ALERT_EMAILS = ["inhaberin@elbkerzen.example"] if case == "alert emails set" else []
    email = "lager@elbkerzen.example" if case == "has an address" else ""
    user = django_user_model.objects.create_user(
        "lager", email=email, password=PASSWORD, is_staff=case != "not staff", is_superuser=True
    )
    client.force_login(user)
    if case == "a post":
        answer = client.post("/admin/setup/", {"action": "nothing"}, **EN)
    elif case == "a popup":
        answer = client.get("/admin/automation/adgroup/?_popup=1", **EN)
    else:
        answer = client.get("/admin/", **EN)
    location = answer.get("Location", "")
    assert "/admin/setup/email/" not in location
