"""Who receives alerts: ALERT_EMAILS, else every active staff user with an address; the set-up
page's "Alerts" section is red when nobody would, and shows the addresses only to who runs the
mail set-up (page_access.ALERT_RECIPIENTS)."""

import pytest
from django.contrib.auth.models import Permission
from django.core import mail
from django.utils import timezone

from automation.models import BrakeEpisode
from automation.platform import alerts

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def section(html: str, key: str) -> str:
    start = html.index(f'id="setup-{key}"')
    return html[start : html.find("</section>", start)]


def test_alert_emails_win_over_the_staff_users(settings, django_user_model):
    settings.ALERT_EMAILS = ["inhaberin@elbkerzen.example"]
    django_user_model.objects.create_user("lager", email="lager@elbkerzen.example", is_staff=True)
    assert alerts.recipients() == ["inhaberin@elbkerzen.example"]


def test_without_alert_emails_every_active_staff_user_with_an_address(settings, django_user_model):
    settings.ALERT_EMAILS = []
    users = django_user_model.objects
    users.create_superuser("inhaberin", email="inhaberin@elbkerzen.example", password="x")
    users.create_user("lager", email="lager@elbkerzen.example", is_staff=True)
    users.create_user("doppelt", email="LAGER@elbkerzen.example", is_staff=True)
    users.create_user("ohne", email="", is_staff=True)
    users.create_user("weg", email="weg@elbkerzen.example", is_staff=True, is_active=False)
    users.create_user("kundin", email="kundin@elbkerzen.example")
    users.create_user("root", email="root@elbkerzen.example", is_superuser=True)  # no staff
    assert alerts.recipients() == ["inhaberin@elbkerzen.example", "lager@elbkerzen.example"]


def test_the_brake_alert_reaches_the_admin_without_alert_emails(settings, django_user_model):
    settings.ALERT_EMAILS = []
    django_user_model.objects.create_superuser(
        "inhaberin", email="inhaberin@elbkerzen.example", password="x"
    )
    episode = BrakeEpisode.objects.create(started_at=timezone.now(), reason="7 of 20")
    alerts.brake_engaged(episode.pk)
    (alert,) = mail.outbox
    assert alert.to == ["inhaberin@elbkerzen.example"]


def test_nobody_to_alert_is_red_on_the_set_up_page(client, settings, django_user_model):
    settings.ALERT_EMAILS = []
    admin = django_user_model.objects.create_superuser("inhaberin", email="", password="x")
    client.force_login(admin)
    answer = client.get("/admin/setup/", **EN)
    assert answer.status_code == 302  # first asked for an address (tests/ui/test_first_login.py)
    html = client.get("/admin/setup/", **EN).content.decode()
    alerts_section = section(html, "alerts")
    assert "light-red" in alerts_section
    assert "Nobody receives alerts" in alerts_section
    assert 'href="/admin/setup/email/"' in alerts_section
    assert 'href="/admin/auth/user/"' in alerts_section

    admin.email = "inhaberin@elbkerzen.example"
    admin.save()
    alerts_section = section(client.get("/admin/setup/", **EN).content.decode(), "alerts")
    assert "light-green" in alerts_section
    assert "inhaberin@elbkerzen.example" in alerts_section
    assert "Nobody receives alerts" not in alerts_section


def test_the_addresses_are_shown_only_to_who_runs_the_mail_set_up(
    client, settings, django_user_model
):
    settings.ALERT_EMAILS = ["inhaberin@elbkerzen.example", "lager@elbkerzen.example"]
    helper = django_user_model.objects.create_user(
        "aushilfe", email="aushilfe@elbkerzen.example", password="x", is_staff=True
    )
    helper.user_permissions.add(Permission.objects.get(codename="view_delivery"))
    client.force_login(helper)
    alerts_section = section(client.get("/admin/setup/", **EN).content.decode(), "alerts")
    assert "inhaberin@elbkerzen.example" not in alerts_section
    assert "2 addresses" in alerts_section

    helper.user_permissions.add(Permission.objects.get(codename="change_remindersettings"))
    helper = django_user_model.objects.get(pk=helper.pk)  # a fresh permission cache
    client.force_login(helper)
    alerts_section = section(client.get("/admin/setup/", **EN).content.decode(), "alerts")
    assert "inhaberin@elbkerzen.example, lager@elbkerzen.example" in alerts_section


def test_the_set_up_page_says_where_shopify_s_own_reminder_is_switched_off(admin_client):
    html = admin_client.get("/admin/setup/", **EN).content.decode()
    shopify = section(html, "shopify")
    assert "Marketing → Automations" in shopify and "two reminders" in shopify
    assert (
        'href="https://help.shopify.com/de/manual/promoting-marketing/create-marketing/'
        'migrate-abandoned-checkout"' in shopify
    )
