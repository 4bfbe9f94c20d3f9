"""A worker killed mid-send, and the reminder through a real SMTP server on 127.0.0.1."""

import os
import signal
import subprocess
import sys
from decimal import Decimal
from email import message_from_bytes
from email.policy import default as default_policy

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.db import connection

from automation.intake import inbox
from automation.models import CheckoutState, Claim, Delivery, MarginRule, ReminderDecision
from automation.reminders import checkouts
from tests.reminders.test_checkouts import checkout_body
from tests.support.signing import post_shopify
from tests.support.smtp import free_port

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]

KILLED_WORKER = """
import django, os
os.environ["DJANGO_SETTINGS_MODULE"] = "elbkerzen.settings"
django.setup()
from django.conf import settings
settings.EMAIL_BACKEND = "tests.support.mail_backends.KillOnSendBackend"
from rq import SimpleWorker
from automation.platform.queues import default_queue
queue = default_queue()
SimpleWorker([queue], connection=queue.connection).work(burst=True, with_scheduler=True)
"""


def _database_url() -> str:
    name = connection.settings_dict["NAME"]
    if connection.vendor == "sqlite":
        return f"sqlite:///{name}"
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{name}"


def test_worker_killed_after_the_claim_and_before_sending_sends_nothing(client, queue):
    if connection.vendor == "sqlite" and ":memory:" in connection.settings_dict["NAME"]:
        pytest.skip("needs a database file or server shared with a subprocess")
    MarginRule.objects.create(vendor="Elbkerzen", rate=Decimal("0.55"))
    post_shopify(client, checkout_body(), topic="checkouts/update")
    inbox.process(Delivery.objects.get().pk, final_attempt=False)  # schedules the evaluation

    env = os.environ | {
        "DATABASE_URL": _database_url(),
        "REDIS_URL": django_settings.REDIS_URL,
        # the worker asks the test's Shopify stand-in whether the buyer paid (not_bought)
        "SHOPIFY_ADMIN_URL": django_settings.SHOPIFY_ADMIN_URL,
        "SHOPIFY_ADMIN_TOKEN": django_settings.SHOPIFY_ADMIN_TOKEN,
    }
    worker = subprocess.run(
        [sys.executable, "-c", KILLED_WORKER], env=env, cwd=django_settings.BASE_DIR, timeout=60
    )

    assert worker.returncode == -signal.SIGKILL
    checkout = CheckoutState.objects.get()
    assert Claim.objects.filter(key=f"reminder:shopify:{checkout.token}").exists()
    decision = ReminderDecision.objects.get()
    assert decision.sent_at is None
    # whatever runs the evaluation again (RQ's abandoned-job handling, a replay) sends nothing
    assert checkouts.evaluate(checkout.pk, checkout.updated_at).startswith("skipped")
    assert not mail.outbox


def test_reminder_goes_through_a_real_smtp_server(client, run_worker, smtp_server):
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()

    (raw,) = smtp_server.messages
    message = message_from_bytes(raw, policy=default_policy)
    assert message["To"] == "kundin@example.com"
    assert message["Subject"] == "Dein Warenkorb bei Elbkerzen wartet auf dich"
    assert "/unsubscribe/" in message["List-Unsubscribe"]
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    text = message.get_body(preferencelist=("plain",)).get_content()
    html = message.get_body(preferencelist=("html",)).get_content()
    assert "Winterzauber" in text
    assert "Winterzauber" in html
    assert ReminderDecision.objects.get().sent_at is not None


def test_smtp_down_fails_the_evaluation_and_keeps_the_claim_free(client, queue, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = free_port()  # nothing listens
    post_shopify(client, checkout_body(), topic="checkouts/update")
    inbox.process(Delivery.objects.get().pk, final_attempt=False)
    checkout = CheckoutState.objects.get()

    with pytest.raises(ConnectionRefusedError):
        checkouts.evaluate(checkout.pk, checkout.updated_at)
    assert not Claim.objects.exists()
    assert "ConnectionRefusedError" in ReminderDecision.objects.get().error
