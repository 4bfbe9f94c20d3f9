"""`send_test_webhook`: every bundled topic in --help, Stripe events signed like Stripe, --now.

The real intake answers (live_server); what it stored is what the command sent.
"""

import json
import time
from datetime import datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from automation.management.commands.send_test_webhook import Command, bundled_topics
from automation.models import Delivery
from automation.platform import connections

pytestmark = pytest.mark.django_db(transaction=True)


def help_text() -> str:
    return Command().create_parser("manage.py", "send_test_webhook").format_help()


def test_help_lists_every_topic_with_its_sample_body():
    text = help_text()
    topics = dict(bundled_topics())
    assert {"inventory_levels/update", "checkouts/create", "checkout.session.expired"} <= set(
        topics
    )
    for topic, path in topics.items():
        line = next(line for line in text.splitlines() if f" {topic} " in line)
        assert line.rstrip().endswith(f"automation/samples/{path.parent.name}/{path.name}")
    assert "--now" in text


def test_a_stripe_event_is_signed_with_stripes_scheme_and_accepted(live_server, redis):
    # When the merchant sends the bundled Stripe sample to the Stripe intake
    call_command(
        "send_test_webhook", "checkout.session.expired", url=f"{live_server.url}/webhooks/stripe/"
    )
    # Then the intake verified its Stripe-Signature and stored it as a Stripe delivery
    delivery = Delivery.objects.get()
    assert (delivery.source, delivery.topic) == ("stripe", "checkout.session.expired")
    # And each run is a new event (its own id), not a repeat the intake would count as duplicate
    call_command(
        "send_test_webhook", "checkout.session.expired", url=f"{live_server.url}/webhooks/stripe/"
    )
    assert Delivery.objects.count() == 2


def test_a_stripe_event_is_signed_with_the_secret_entered_on_the_page(live_server, redis, settings):
    settings.STRIPE_WEBHOOK_SECRETS = []
    connections.store(stripe_webhook_secret="whsec_entered_on_the_page")

    call_command(
        "send_test_webhook", "checkout.session.expired", url=f"{live_server.url}/webhooks/stripe/"
    )

    assert Delivery.objects.get().source == "stripe"


def test_a_stripe_event_with_a_wrong_secret_is_refused(live_server, redis):
    with pytest.raises(CommandError, match="400"):
        call_command(
            "send_test_webhook",
            "checkout.session.expired",
            url=f"{live_server.url}/webhooks/stripe/",
            secret="whsec_wrong",
        )
    assert not Delivery.objects.exists()


def test_now_dates_a_shopify_checkout_at_this_moment(live_server, redis):
    # Given the bundled checkout, which carries a fixed date in the past
    call_command(
        "send_test_webhook", "checkouts/create", url=f"{live_server.url}/webhooks/shopify/"
    )
    old = json.loads(bytes(Delivery.objects.get().body))
    assert datetime.fromisoformat(old["updated_at"]) < timezone.now() - timedelta(days=1)
    Delivery.objects.all().delete()
    # When it is sent with --now
    call_command(
        "send_test_webhook",
        "checkouts/create",
        "--now",
        url=f"{live_server.url}/webhooks/shopify/",
    )
    # Then its checkout is dated now, so the reminder comes only after the configured delay
    body = json.loads(bytes(Delivery.objects.get().body))
    for field in ("created_at", "updated_at"):
        assert abs(datetime.fromisoformat(body[field]) - timezone.now()) < timedelta(seconds=30)


def test_now_dates_a_stripe_session_at_this_moment(live_server, redis):
    call_command(
        "send_test_webhook",
        "checkout.session.expired",
        "--now",
        url=f"{live_server.url}/webhooks/stripe/",
    )
    body = json.loads(bytes(Delivery.objects.get().body))
    assert abs(body["created"] - time.time()) < 30


def test_now_is_refused_for_a_topic_without_a_checkout():
    with pytest.raises(CommandError, match="checkouts only"):
        call_command("send_test_webhook", "inventory_levels/update", "--now")
