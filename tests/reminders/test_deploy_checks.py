"""Production refuses a mail backend that reaches no one: check --deploy, /healthz, reminders.

Given DEBUG off (EMAIL_REQUIRE_SERVER) and EMAIL_URL=consolemail:// (the default), a reminder was
printed into the worker's log with the customer's full address and counted as sent.
"""

import logging
import os
import subprocess
import sys
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from automation.models import Claim, MarginRule, ReminderDecision, ReminderSettings
from automation.platform import alerts
from automation.platform.mail_server import NOT_A_MAIL_SERVER
from automation.platform.notes import text_of
from automation.reminders.checkouts import NO_MAIL_SERVER
from automation.reminders.deploy_checks import NO_MAIL_SERVER_ID
from tests.reminders.test_checkouts import EMAIL, checkout_body
from tests.support.signing import post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

CONSOLE = "django.core.mail.backends.console.EmailBackend"
SMTP = "django.core.mail.backends.smtp.EmailBackend"


@pytest.fixture
def production(settings):
    """DEBUG off as in production: the refusal is on (conftest turns it off for other tests)."""
    settings.EMAIL_REQUIRE_SERVER = True
    settings.EMAIL_BACKEND = CONSOLE
    return settings


def _deploy_check_ids() -> set[str]:
    return {message.id for message in run_checks(include_deployment_checks=True)}


def _manage(*args: str, **environment: str) -> subprocess.CompletedProcess:
    """manage.py in a fresh process: the settings read DEBUG and EMAIL_URL as in production."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        env=os.environ | environment,
        cwd=django_settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("email_url", "refused"),
    [("consolemail://", True), ("smtp+tls://user:password@smtp.example.com:587", False)],
)
def test_manage_check_deploy_with_debug_off(email_url, refused):
    result = _manage("check", "--deploy", DEBUG="0", EMAIL_URL=email_url)

    assert (result.returncode != 0) is refused, result.stderr
    assert ("EMAIL_URL" in result.stderr) is refused


@pytest.mark.parametrize(("debug", "refused"), [("0", True), ("1", False)])
def test_debug_off_refuses_the_console_backend_and_development_keeps_it(debug, refused):
    code = (
        "from automation.platform.mail_server import mail_server_problem; "
        "print(mail_server_problem())"
    )
    result = _manage("shell", "-v", "0", "-c", code, DEBUG=debug, EMAIL_URL="consolemail://")

    assert result.returncode == 0, result.stderr
    expected = "EMAIL_URL names no mail server (consolemail://)" if refused else ""
    assert result.stdout.strip() == expected


@pytest.mark.parametrize("backend", sorted(NOT_A_MAIL_SERVER))
def test_check_deploy_fails_naming_email_url_for_a_backend_that_reaches_no_one(settings, backend):
    settings.EMAIL_BACKEND = backend

    with pytest.raises(SystemCheckError) as refused:
        call_command("check", "--deploy")

    assert "EMAIL_URL" in str(refused.value)
    assert NO_MAIL_SERVER_ID in str(refused.value)
    assert NOT_A_MAIL_SERVER[backend] in str(refused.value)


def test_check_deploy_accepts_an_smtp_server_and_plain_check_accepts_the_console(settings):
    settings.EMAIL_BACKEND = SMTP
    assert NO_MAIL_SERVER_ID not in _deploy_check_ids()

    settings.EMAIL_BACKEND = CONSOLE
    call_command("check")  # development (no --deploy) keeps its console backend


def test_healthz_names_mail_failing_in_production(client, alive_service, production):
    response = client.get("/healthz")

    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["mail"]
    assert body["mail"] == "error: EMAIL_URL names no mail server (consolemail://)"


def test_healthz_mail_is_ok_with_an_smtp_server_or_in_development(client, alive_service, settings):
    settings.EMAIL_REQUIRE_SERVER = True
    settings.EMAIL_BACKEND = SMTP
    assert client.get("/healthz").json()["mail"] == "ok (smtp)"

    settings.EMAIL_REQUIRE_SERVER = False  # DEBUG on
    settings.EMAIL_BACKEND = CONSOLE
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["mail"] == "ok (console)"


def test_reminder_is_skipped_not_sent_when_production_has_no_mail_server(
    client, run_worker, production, capsys
):
    MarginRule.objects.create(vendor="Elbkerzen", rate=Decimal("0.55"))
    config = ReminderSettings.load()
    config.discount_code = "ELBE10"
    config.save()

    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()

    (decision,) = ReminderDecision.objects.all()
    assert (decision.arm, decision.reason, decision.sent_at) == (
        "none",
        text_of(NO_MAIL_SERVER),
        None,
    )
    assert EMAIL not in capsys.readouterr().out  # the console backend printed nothing
    assert not mail.outbox
    assert not Claim.objects.exists()  # no address is capped by a mail that never left
    exposition = client.get("/metrics").content.decode()
    assert 'elbkerzen_reminder_decisions{arm="none",sent="no"} 1.0' in exposition
    assert 'sent="yes"} 1.0' not in exposition


def test_alert_is_not_sent_without_a_mail_server_and_says_why(production, capsys, caplog):
    with caplog.at_level(logging.WARNING, logger="automation.platform.alerts"):
        assert alerts.send("[Elbkerzen] test alert", "Delivery 7 gave up") is False

    assert "EMAIL_URL names no mail server" in caplog.text
    assert "[Elbkerzen] test alert" in caplog.text
    assert "Delivery 7 gave up" not in capsys.readouterr().out
