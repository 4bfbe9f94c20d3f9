"""The merchant's mail service: reminders sent through it, its bounces and complaints suppress.

Given EMAIL_SERVICE=brevo (or postmark), reminders leave through anymail's backend for it. The
service's tracking webhook (its documented samples, tests/fixtures/mail_service/) is stored as a
delivery, its job puts a hard bounce or a spam complaint on the suppression list, and the next
reminder to that address is skipped with the reason; a soft bounce changes nothing.
"""

import base64
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.core.checks import run_checks

from automation.intake import inbox, sweeper
from automation.intake.sources.mail_service import SOURCE, Kind, parse_tracking
from automation.models import Delivery, ReminderDecision
from automation.models import SuppressedAddress as Suppressed
from automation.platform.exceptions import InvalidPayload
from automation.platform.notes import text_of
from automation.platform.pseudonyms import email_ref
from automation.reminders import checkouts
from automation.reminders.deploy_checks import MAIL_WEBHOOKS_CLOSED_ID
from tests.reminders.test_checkouts import EMAIL, checkout_body
from tests.support.reminder_shop import reminder_shop  # noqa: F401 (the `shop` fixture)
from tests.support.signing import post_shopify

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]

FIXTURES = Path(__file__).parent.parent / "fixtures" / "mail_service"
SECRET = "elbkerzen-hook:k7Qw-2mZ"
OLD_SECRET = "old-hook:rotated-away"
Reason = Suppressed.Reason
BOUNCED = text_of(checkouts.suppressed_reason(Reason.HARD_BOUNCE))
COMPLAINED = text_of(checkouts.suppressed_reason(Reason.SPAM_COMPLAINT))

# service: (webhook path, the field naming the recipient)
SERVICES = {
    "brevo": ("/anymail/brevo/tracking/", "email"),
    "postmark": ("/anymail/postmark/tracking/", "Email"),
}


def sample(name: str, email: str = EMAIL) -> dict:
    """A documented sample, addressed to `email` (its only change)."""
    service = name.split("_", 1)[0]
    body = json.loads((FIXTURES / f"{name}.json").read_text())
    body[SERVICES[service][1]] = email
    return body


def post_event(client, name: str, auth: str | None = SECRET, body: dict | None = None):
    """POST a sample to its service's tracking URL, with basic auth as the service sends it."""
    path = SERVICES[name.split("_", 1)[0]][0]
    headers = {}
    if auth is not None:
        headers["HTTP_AUTHORIZATION"] = "Basic " + base64.b64encode(auth.encode()).decode()
    return client.post(
        path,
        data=json.dumps(body if body is not None else sample(name)),
        content_type="application/json",
        **headers,
    )


@pytest.fixture
def webhook_secret(settings):
    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": [SECRET, OLD_SECRET]}


def next_reminder(client, run_worker, checkout_id: str = "after-the-event") -> ReminderDecision:
    """A new abandoned checkout of the same address, evaluated: its decision."""
    mail.outbox.clear()
    post_shopify(client, checkout_body(token=checkout_id), topic="checkouts/update")
    run_worker()
    return ReminderDecision.objects.get(checkout__token=checkout_id)


# --- tracking webhooks ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "reason", "skipped_because"),
    [
        ("brevo_hard_bounce", Reason.HARD_BOUNCE, BOUNCED),
        ("postmark_hard_bounce", Reason.HARD_BOUNCE, BOUNCED),
        ("brevo_complaint", Reason.SPAM_COMPLAINT, COMPLAINED),
        ("postmark_spam_complaint", Reason.SPAM_COMPLAINT, COMPLAINED),
    ],
)
def test_hard_bounce_or_complaint_stops_the_next_reminder(
    client, run_worker, shop, webhook_secret, name, reason, skipped_because
):
    response = post_event(client, name)
    assert response.status_code == 200

    (delivery,) = Delivery.objects.filter(source=SOURCE)
    assert delivery.status == Delivery.Status.RECEIVED  # stored before the answer
    run_worker()

    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.DONE, delivery.last_error
    assert delivery.result.endswith("k***@example.com suppressed")
    assert delivery.customer_ref == email_ref(EMAIL)  # customers/redact finds the body
    suppressed = Suppressed.objects.get()
    assert (suppressed.email, suppressed.reason) == (EMAIL, reason)
    assert suppressed.detail.startswith(name.split("_", 1)[0])

    decision = next_reminder(client, run_worker)
    assert (decision.arm, decision.reason, decision.sent_at) == ("none", skipped_because, None)
    assert not mail.outbox


def test_an_unsubscribe_at_the_service_suppresses_and_a_resubscribe_is_not_stored(
    client, run_worker, shop, webhook_secret
):
    change = json.loads((FIXTURES / "postmark_subscription_change.json").read_text())
    unsubscribed = change | {"Recipient": EMAIL}
    resubscribed = unsubscribed | {"SuppressSending": False, "SuppressionReason": None}

    assert post_event(client, "postmark_x", body=resubscribed).status_code == 200
    assert not Delivery.objects.exists()  # anymail's `subscribed`: nothing to do
    assert post_event(client, "postmark_x", body=unsubscribed).status_code == 200
    run_worker()

    assert Suppressed.objects.get().reason == Reason.SERVICE_UNSUBSCRIBE
    decision = next_reminder(client, run_worker)
    assert decision.reason == text_of(checkouts.suppressed_reason(Reason.SERVICE_UNSUBSCRIBE))
    assert not mail.outbox


def test_the_bounce_reason_names_the_receiving_servers_answer(
    client, run_worker, shop, webhook_secret
):
    post_event(client, "postmark_hard_bounce")
    run_worker()

    assert Suppressed.objects.get().detail == (
        "postmark: smtp;550 5.1.1 The email account that you tried to reach does not exist. "
        "The server was unable to deliver your message (ex: unknown user, mailbox not found)."
    )


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("brevo_soft_bounce", {}),
        ("postmark_soft_bounce", {}),
        # Brevo's `deferred` and Postmark's `Transient` bounce type: anymail's `deferred`
        ("brevo_soft_bounce", {"event": "deferred"}),
        ("postmark_soft_bounce", {"Type": "Transient", "TypeCode": 2}),
    ],
    ids=["brevo", "postmark", "brevo-deferred", "postmark-transient"],
)
def test_soft_bounce_suppresses_nothing_and_the_next_reminder_goes_out(
    client, run_worker, shop, webhook_secret, name, changes
):
    assert post_event(client, name, body=sample(name) | changes).status_code == 200
    run_worker()

    delivery = Delivery.objects.get(source=SOURCE)
    assert delivery.status == Delivery.Status.DONE
    assert delivery.result.endswith("soft bounce: k***@example.com not suppressed")
    assert not Suppressed.objects.exists()
    decision = next_reminder(client, run_worker)
    assert decision.sent_at is not None
    assert [message.to for message in mail.outbox] == [[EMAIL]]


@pytest.mark.parametrize("name", ["brevo_hard_bounce", "postmark_hard_bounce"])
def test_the_same_event_twice_is_one_delivery_and_one_suppression(
    client, run_worker, webhook_secret, name
):
    assert post_event(client, name).status_code == 200
    assert post_event(client, name).status_code == 200
    run_worker()

    (delivery,) = Delivery.objects.filter(source=SOURCE)
    assert delivery.duplicate_count == 1
    assert Suppressed.objects.count() == 1


def test_a_second_event_for_a_suppressed_address_keeps_the_first_reason(
    client, run_worker, webhook_secret
):
    post_event(client, "brevo_hard_bounce")
    run_worker()
    post_event(client, "postmark_spam_complaint")
    run_worker()

    assert Delivery.objects.filter(source=SOURCE, status=Delivery.Status.DONE).count() == 2
    assert list(Suppressed.objects.values_list("reason", flat=True)) == [Reason.HARD_BOUNCE]
    latest = Delivery.objects.filter(source=SOURCE).order_by("-pk").first()
    assert latest.result.endswith("was already suppressed")


def test_an_unsubscribed_address_that_bounces_stays_unsubscribed(
    client, run_worker, webhook_secret
):
    Suppressed.objects.create(email=EMAIL)  # the unsubscribe link's reason
    post_event(client, "brevo_hard_bounce")
    run_worker()

    assert list(Suppressed.objects.values_list("reason", flat=True)) == [Reason.UNSUBSCRIBE_LINK]


def test_an_old_secret_still_in_the_list_is_accepted_while_rotating(
    client, run_worker, webhook_secret
):
    assert post_event(client, "brevo_hard_bounce", auth=OLD_SECRET).status_code == 200
    assert Delivery.objects.filter(source=SOURCE).count() == 1


@pytest.mark.parametrize(
    "auth",
    [None, "elbkerzen-hook:wrong", "elbkerzen-hook", ""],
    ids=["none", "wrong", "user", "empty"],
)
def test_missing_or_wrong_basic_auth_is_refused_and_nothing_is_stored(
    client, run_worker, webhook_secret, auth
):
    response = post_event(client, "brevo_hard_bounce", auth=auth)

    assert response.status_code == 400  # anymail's AnymailWebhookValidationFailure
    run_worker()
    assert not Delivery.objects.exists()
    assert not Suppressed.objects.exists()


def test_without_a_configured_secret_the_webhooks_refuse_everything(client, settings):
    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": []}

    response = post_event(client, "postmark_hard_bounce", auth=None)

    assert response.status_code == 403
    assert "ANYMAIL_WEBHOOK_SECRET" in response.json()["error"]
    assert not Delivery.objects.exists()


def test_events_nothing_acts_on_are_answered_but_not_stored(client, webhook_secret):
    delivered = sample("brevo_hard_bounce") | {"event": "delivered", "reason": None}
    opened = sample("postmark_hard_bounce") | {"RecordType": "Open"}

    assert post_event(client, "brevo_hard_bounce", body=delivered).status_code == 200
    assert post_event(client, "postmark_hard_bounce", body=opened).status_code == 200
    assert not Delivery.objects.exists()


def test_a_stored_event_whose_job_redis_lost_is_resumed_by_the_sweeper(
    client, run_worker, redis, settings, webhook_secret
):
    """Received and stored, then Redis restarts empty before the job ran: nothing is lost."""
    assert post_event(client, "brevo_hard_bounce").status_code == 200
    redis.flushdb()
    Delivery.objects.update(
        received_at=Delivery.objects.get().received_at
        - timedelta(seconds=settings.DELIVERY_SWEEP_AFTER + 1)
    )

    assert sweeper.sweep() == 1
    run_worker()

    assert Suppressed.objects.get().reason == Reason.HARD_BOUNCE


def test_a_stored_body_that_is_not_a_tracking_event_is_invalid(run_worker, webhook_secret):
    """Bodies are checked again when processed: a row written with another shape does nothing."""
    recorded = inbox.record(
        inbox.Incoming(
            source=SOURCE,
            topic="bounced",
            body=json.dumps({"service": "brevo", "event_type": "bounced"}).encode(),
            webhook_id="brevo:forged",
        )
    )
    run_worker()

    delivery = Delivery.objects.get(pk=recorded.pk)
    assert delivery.status == Delivery.Status.INVALID
    assert "esp_event" in delivery.last_error
    assert not Suppressed.objects.exists()


# --- sending through the service -------------------------------------------------------------


def test_a_reminder_goes_through_anymails_backend(client, run_worker, shop, settings):
    """anymail's test backend: the message as anymail hands it to the service's API."""
    settings.EMAIL_BACKEND = "anymail.backends.test.EmailBackend"

    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()

    (message,) = mail.outbox
    params = message.anymail_test_params
    assert [str(address) for address in params["to"]] == [EMAIL]
    assert "Winterzauber" in params["text_body"] and "ELBE10" in params["html_body"]
    assert params["extra_headers"]["List-Unsubscribe"].startswith("<http")
    assert params["extra_headers"]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert message.anymail_status.status == {"sent"}
    assert ReminderDecision.objects.get().sent_at is not None


def test_a_reminder_reaches_brevos_api_with_the_key_and_unsubscribe_headers(
    client, run_worker, shop, settings, httpserver
):
    """Brevo's real backend against a local stand-in of its send endpoint
    (https://developers.brevo.com/reference/sendtransacemail: POST /v3/smtp/email, `api-key`
    header, 201 with `messageId`)."""
    settings.EMAIL_BACKEND = "anymail.backends.brevo.EmailBackend"
    settings.ANYMAIL = {
        **settings.ANYMAIL,
        "BREVO_API_KEY": "xkeysib-test",
        "BREVO_API_URL": httpserver.url_for("/v3/"),
    }
    httpserver.expect_oneshot_request(
        "/v3/smtp/email", method="POST", headers={"api-key": "xkeysib-test"}
    ).respond_with_json({"messageId": "<202612020300.1@smtp-relay.mailin.fr>"}, status=201)

    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()

    httpserver.check_assertions()
    # the same local server also answers the "paid meanwhile?" question (tests/support/vendors)
    (request,) = [request for request, _ in httpserver.log if request.path == "/v3/smtp/email"]
    sent = json.loads(request.data)
    assert sent["to"] == [{"email": EMAIL}]
    assert sent["headers"]["List-Unsubscribe"].startswith("<http")
    assert ReminderDecision.objects.get().sent_at is not None


def test_healthz_names_the_mail_service(client, alive_service, settings):
    settings.EMAIL_REQUIRE_SERVER = True
    settings.EMAIL_BACKEND = "anymail.backends.postmark.EmailBackend"

    assert client.get("/healthz").json()["mail"] == "ok (postmark)"


# --- settings ----------------------------------------------------------------------------------


def _settings_in_a_fresh_process(**environment: str) -> subprocess.CompletedProcess:
    code = (
        "from django.conf import settings; "
        "print(settings.EMAIL_BACKEND); print(sorted(settings.ANYMAIL.items()))"
    )
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
        env={k: v for k, v in os.environ.items() if k not in ("EMAIL_URL",)} | environment,
        cwd=django_settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("environment", "backend", "key"),
    [
        ({"EMAIL_SERVICE": "brevo", "BREVO_API_KEY": "xkeysib-1"}, "brevo", "BREVO_API_KEY"),
        (
            {"EMAIL_SERVICE": "Postmark", "POSTMARK_SERVER_TOKEN": "pm-1"},
            "postmark",
            "POSTMARK_SERVER_TOKEN",
        ),
    ],
)
def test_email_service_selects_anymails_backend_with_its_key(environment, backend, key):
    result = _settings_in_a_fresh_process(**environment)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"anymail.backends.{backend}.EmailBackend"
    assert f"('{key}', '{environment[key]}')" in lines[1]
    assert "('REQUESTS_TIMEOUT', 10.0)" in lines[1]


def test_smtp_stays_the_default(tmp_path):
    result = _settings_in_a_fresh_process(EMAIL_URL="smtp+tls://u:p@smtp.example.com:587")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "django.core.mail.backends.smtp.EmailBackend"


@pytest.mark.parametrize(
    ("environment", "named"),
    [
        ({"EMAIL_SERVICE": "brevo"}, "set BREVO_API_KEY"),
        ({"EMAIL_SERVICE": "postmark"}, "set POSTMARK_SERVER_TOKEN"),
        ({"EMAIL_SERVICE": "mailchimp"}, "EMAIL_SERVICE must be"),
        ({"EMAIL_SERVICE_TIMEOUT": "0"}, "EMAIL_SERVICE_TIMEOUT"),
    ],
)
def test_a_service_without_its_key_or_an_unknown_one_names_the_setting(environment, named):
    result = _settings_in_a_fresh_process(**environment)

    assert result.returncode != 0
    assert named in result.stderr


def test_the_webhook_secret_is_read_as_a_list_for_rotation():
    result = _settings_in_a_fresh_process(ANYMAIL_WEBHOOK_SECRET="a:b, c:d")

    assert result.returncode == 0, result.stderr
    assert "('WEBHOOK_SECRET', ['a:b', 'c:d'])" in result.stdout


def test_the_admin_list_shows_why_each_address_is_suppressed(admin_client):
    Suppressed.objects.create(
        email="weg@example.com", reason=Reason.HARD_BOUNCE, detail="brevo: 550"
    )
    Suppressed.objects.create(email="telefon@example.com", reason="asked by phone")

    page = admin_client.get(
        "/admin/automation/suppressedaddress/", HTTP_ACCEPT_LANGUAGE="en"
    ).content.decode()

    assert "hard bounce (reported by the mail service)" in page
    assert "brevo: 550" in page
    assert "asked by phone" in page  # the merchant's own words, as written


@pytest.mark.parametrize(
    "path", ["/anymail/mailgun/tracking/", "/anymail/brevo/inbound/", "/anymail/postmark/inbound/"]
)
def test_only_the_tracking_webhooks_of_our_services_are_mounted(client, webhook_secret, path):
    response = client.post(
        path,
        data=json.dumps(sample("brevo_hard_bounce")),
        content_type="application/json",
        HTTP_AUTHORIZATION="Basic " + base64.b64encode(SECRET.encode()).decode(),
    )

    assert response.status_code == 404
    assert not Delivery.objects.exists()


GOOD_BODY = {
    "service": "brevo",
    "event_type": "bounced",
    "recipient": EMAIL,
    "timestamp": "2018-03-06T19:10:23+00:00",
    "esp_event": {"event": "hard_bounce", "email": EMAIL},
}


@pytest.mark.parametrize(
    ("changes", "refused"),
    [
        ({"service": "mailgun"}, "unknown mail service"),
        ({"event_type": "opened"}, "unexpected event type"),
        ({"esp_event": ["hard_bounce"]}, "esp_event must be an object"),
        ({"recipient": "kim at example.org"}, "recipient is no e-mail"),
        ({"recipient": None}, "recipient is no e-mail"),
    ],
)
def test_a_stored_body_of_the_wrong_shape_is_refused_with_the_reason(changes, refused):
    with pytest.raises(InvalidPayload, match=refused):
        parse_tracking(GOOD_BODY | changes)


def test_a_stored_body_reads_as_the_services_own_field_says():
    assert parse_tracking(GOOD_BODY).kind is Kind.HARD_BOUNCE
    soft = GOOD_BODY | {"esp_event": {"event": "soft_bounce"}}
    assert parse_tracking(soft).kind is Kind.SOFT_BOUNCE
    # Postmark's suppression after a hard bounce names it in SuppressionReason, not Type
    change = GOOD_BODY | {"service": "postmark", "esp_event": {"SuppressionReason": "HardBounce"}}
    assert parse_tracking(change).kind is Kind.HARD_BOUNCE


def test_check_deploy_warns_when_a_service_sends_without_its_webhook_secret(settings):
    settings.EMAIL_SERVICE = "brevo"
    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": []}
    assert MAIL_WEBHOOKS_CLOSED_ID in {m.id for m in run_checks(include_deployment_checks=True)}

    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": [SECRET]}
    assert MAIL_WEBHOOKS_CLOSED_ID not in {m.id for m in run_checks(include_deployment_checks=True)}

    settings.EMAIL_SERVICE = "smtp"  # no service, no webhooks to secure
    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": []}
    assert MAIL_WEBHOOKS_CLOSED_ID not in {m.id for m in run_checks(include_deployment_checks=True)}
