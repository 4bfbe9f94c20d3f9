"""Abandoned checkouts: consent first, expected value decides, exactly one reminder."""

import json
import random
import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.core import mail
from django.utils import timezone

from automation.intake.sources import shopify_checkouts, stripe_checkouts
from automation.intake.sources.checkout_version import CheckoutVersion
from automation.models import (
    CheckoutState,
    Claim,
    Delivery,
    MarginRule,
    ReminderDecision,
    SuppressedAddress,
)
from automation.platform import claims
from automation.reminders import checkouts, handlers
from tests.support.reminder_shop import reminder_shop
from tests.support.signing import post_shopify, post_stripe

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]

SAMPLES = Path(checkouts.__file__).parents[1] / "samples"
# Stripe's own Checkout Session fixture, nulls included (its source: the README next to it).
STRIPE_SESSION = Path(__file__).parent.parent / "fixtures/stripe/checkout_session.json"
EMAIL = "kundin@example.com"
RECOVERY_URL = "https://buy.stripe.com/r/test_demo0001"


def checkout_body(minutes_ago: float = 120, **changes) -> dict:
    """The Shopify sample (40 € of Elbkerzen candles), last updated `minutes_ago`."""
    body = json.loads((SAMPLES / "shopify/checkouts_update.json").read_text())
    updated = timezone.now() - timedelta(minutes=minutes_ago)
    body["updated_at"] = updated.isoformat()
    body.update(changes)
    return body


# The `shop` fixture; the other reminder test modules import it from here by this name.
shop = reminder_shop


def decisions() -> list[ReminderDecision]:
    return list(ReminderDecision.objects.order_by("pk"))


def test_high_margin_basket_gets_the_discount_reminder(client, run_worker, shop):
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()

    (decision,) = decisions()
    assert decision.arm == "discount"
    assert (decision.margin, decision.discount_cost) == (Decimal("22.00"), Decimal("4.00"))
    assert (decision.delta_plain, decision.delta_discount) == (Decimal("0.8800"), Decimal("1.1000"))
    assert decision.sent_at is not None
    assert decision.inputs["p0"] == "0.0400"
    (message,) = mail.outbox
    assert message.to == [EMAIL]
    assert message.subject == "Dein Warenkorb bei Elbkerzen wartet auf dich"
    assert "ELBE10" in message.body
    assert "Winterzauber" in message.body
    assert "https://elbkerzen.myshopify.com/60673655038/checkouts/ac/" in message.body
    assert message.extra_headers["List-Unsubscribe"].startswith("<http://")
    assert "/unsubscribe/" in message.extra_headers["List-Unsubscribe"]
    html = message.alternatives[0][0]
    assert "ELBE10" in html


def test_low_margin_basket_gets_a_plain_reminder(client, run_worker, shop):
    MarginRule.objects.update(rate=Decimal("0.25"))
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()

    (decision,) = decisions()
    assert decision.arm == "plain"
    assert (decision.delta_plain, decision.delta_discount) == (Decimal("0.4000"), Decimal("0.2600"))
    (message,) = mail.outbox
    assert "ELBE10" not in message.body


def test_without_discount_code_the_discount_arm_is_unavailable(client, run_worker, shop):
    shop.discount_code = ""
    shop.save()
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()

    (decision,) = decisions()
    assert decision.arm == "plain"
    assert decision.delta_discount is None
    assert "no discount code configured" in decision.reason


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"buyer_accepts_marketing": False}, "no marketing consent"),
        ({"email": None}, "no e-mail address"),
        ({"completed_at": "2026-11-26T18:30:00+01:00"}, None),
    ],
    ids=["no-consent", "no-email", "completed"],
)
def test_no_mail_without_consent_email_or_when_completed(client, run_worker, shop, changes, reason):
    big = [
        {
            "product_id": 1,
            "variant_id": 1,
            "sku": "X",
            "vendor": "Elbkerzen",
            "quantity": 50,
            "price": "240.00",
            "title": "Großpackung",
        }
    ]
    post_shopify(
        client,
        checkout_body(line_items=big, total_price="12000.00", **changes),
        topic="checkouts/update",
    )
    run_worker()
    assert not mail.outbox
    if reason:
        (decision,) = decisions()
        assert decision.arm == "none"
        assert reason in decision.reason


def test_order_before_the_evaluation_means_no_mail(client, run_worker, shop):
    post_shopify(client, checkout_body(minutes_ago=1), topic="checkouts/update")  # due in 59 min
    order = json.loads((SAMPLES / "shopify/orders_create.json").read_text())
    post_shopify(client, order, topic="orders/create")
    run_worker()
    checkout = CheckoutState.objects.get()
    assert checkout.completed_at is not None

    assert checkouts.evaluate(checkout.pk, checkout.updated_at) == "skipped: checkout completed"
    assert not mail.outbox
    assert decisions()[0].reason == "checkout completed"


def test_order_arriving_before_the_checkout_keeps_it_completed(client, run_worker, shop):
    order = json.loads((SAMPLES / "shopify/orders_create.json").read_text())
    post_shopify(client, order, topic="orders/create")
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()
    assert CheckoutState.objects.get().completed_at is not None
    assert not mail.outbox


def test_duplicated_reordered_and_retried_events_give_one_decision_and_one_mail(
    client, run_worker, shop
):
    created = checkout_body(minutes_ago=130)
    updated = checkout_body(minutes_ago=125)
    webhook_ids = {"created": "wh-create-1", "updated": "wh-update-1"}
    sends = [("created", created), ("updated", updated)] * 3
    random.Random(3).shuffle(sends)
    for name, body in sends:
        post_shopify(
            client,
            body,
            topic=f"checkouts/{'create' if name == 'created' else 'update'}",
            HTTP_X_SHOPIFY_WEBHOOK_ID=webhook_ids[name],
        )
    # Shopify's own retry with a new webhook id, arriving late
    post_shopify(client, updated, topic="checkouts/update")
    run_worker()
    # the evaluation job runs a second time (e.g. a retried job)
    checkout = CheckoutState.objects.get()
    assert checkouts.evaluate(checkout.pk, checkout.updated_at).startswith("skipped")

    assert len(decisions()) == 1
    assert len(mail.outbox) == 1


def test_a_checkout_that_keeps_changing_is_evaluated_once_after_it_settles(
    client, run_worker, shop
):
    for minutes_ago in (150, 140, 130):
        post_shopify(client, checkout_body(minutes_ago=minutes_ago), topic="checkouts/update")
    run_worker()
    (decision,) = decisions()
    assert decision.checkout_version == CheckoutState.objects.get().updated_at
    assert len(mail.outbox) == 1


def test_evaluation_of_an_older_version_exits_quietly(client, run_worker, shop):
    post_shopify(client, checkout_body(minutes_ago=1), topic="checkouts/update")
    run_worker()
    checkout = CheckoutState.objects.get()
    older = checkout.updated_at - timedelta(minutes=5)
    assert checkouts.evaluate(checkout.pk, older) == "superseded"
    assert not decisions()


def test_stale_checkout_message_is_marked_stale(client, run_worker, shop):
    post_shopify(client, checkout_body(minutes_ago=1), topic="checkouts/update")
    post_shopify(client, checkout_body(minutes_ago=3), topic="checkouts/update")
    run_worker()
    post_shopify(client, checkout_body(minutes_ago=2), topic="checkouts/update")
    run_worker()
    assert Delivery.objects.order_by("-pk").first().status == Delivery.Status.STALE


def test_completed_checkout_never_reopens(shop):
    base = shopify_checkouts.parse_shopify_checkout(
        checkout_body(minutes_ago=10), "elbkerzen.myshopify.com"
    )
    done = CheckoutVersion(
        **{**base.__dict__, "completed_at": timezone.now(), "updated_at": base.updated_at}
    )
    handlers.store_checkout(done)
    later = CheckoutVersion(
        **{**base.__dict__, "updated_at": base.updated_at + timedelta(minutes=1)}
    )
    stored = handlers.store_checkout(later)
    assert stored.completed_at is not None
    assert stored.updated_at == later.updated_at


def test_send_failure_releases_the_claim_and_the_retry_sends_once(
    client, run_worker, shop, settings
):
    from tests.support.mail_backends import FailOnceBackend

    FailOnceBackend.failed = False
    settings.EMAIL_BACKEND = "tests.support.mail_backends.FailOnceBackend"
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()

    assert FailOnceBackend.failed
    assert len(mail.outbox) == 1
    (decision,) = decisions()
    assert decision.sent_at is not None
    assert decision.error == ""
    assert Claim.objects.filter(key__startswith="reminder:shopify:").count() == 1


def test_claim_is_taken_once_and_an_expired_claim_is_free_again():
    key = "reminder:shopify:abc"
    assert claims.claim_once(key, timedelta(days=30))
    assert not claims.claim_once(key, timedelta(days=30))
    Claim.objects.filter(key=key).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert claims.claim_once(key, timedelta(days=30))
    assert not claims.claim_once(key, timedelta(days=30))
    assert claims.delete_expired() == 0


def test_frequency_cap_skips_a_second_checkout_of_the_same_address(client, run_worker, shop):
    post_shopify(client, checkout_body(), topic="checkouts/update")
    post_shopify(client, checkout_body(token="another-checkout-token"), topic="checkouts/update")
    run_worker()
    assert len(mail.outbox) == 1
    reasons = sorted(d.reason for d in decisions())
    assert any("within 7 days" in reason for reason in reasons)


def test_unsubscribed_address_gets_nothing_more(client, run_worker, shop):
    SuppressedAddress.objects.create(email="Kundin@Example.com")
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()
    assert not mail.outbox
    assert decisions()[0].reason == "address unsubscribed"


def confirm_unsubscribe(client, path: str):
    """Open the unsubscribe page (it names the address and suppresses nothing), then press
    its button (it suppresses the address); the button's answer."""
    page = client.get(path)
    assert page.status_code == 200
    assert EMAIL in page.content.decode()
    assert not SuppressedAddress.objects.exists()

    done = client.post(path)
    assert done.status_code == 200
    assert SuppressedAddress.objects.get().email == EMAIL
    return done


def test_unsubscribe_link_confirms_then_suppresses(client, run_worker, shop):
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()
    link = mail.outbox[0].extra_headers["List-Unsubscribe"].strip("<>")
    path = link.removeprefix("http://127.0.0.1:8000")

    done = confirm_unsubscribe(client, path)
    assert "abgemeldet" in done.content.decode()


def test_tampered_unsubscribe_link_is_rejected(client):
    from automation.reminders.mail import unsubscribe_token

    token = unsubscribe_token(EMAIL)
    # Change the last two characters to ones they are not, whatever the key made them.
    tampered = token[:-2] + "".join("y" if c == "x" else "x" for c in token[-2:])
    response = client.post(f"/unsubscribe/{tampered}/")
    assert response.status_code == 400
    assert not SuppressedAddress.objects.exists()


def stripe_event(
    session: dict | None = None, event_type: str = "checkout.session.expired", **changes
) -> dict:
    """Stripe's published session (or `session`) with `changes`, in an event envelope."""
    session = session if session is not None else json.loads(STRIPE_SESSION.read_text())
    session.update(changes)
    return {
        "id": f"evt_test_{uuid.uuid4().hex[:24]}",
        "object": "event",
        "api_version": "2026-10-28",
        "created": int(timezone.now().timestamp()),
        "livemode": False,
        "type": event_type,
        "data": {"object": session},
    }


def stripe_session(**changes) -> dict:
    """The published session as a German shop's expired one: 40 €, a recovery link, no
    `consent` from Stripe (US only) and no consent recorded by the shop yet."""
    session = json.loads(STRIPE_SESSION.read_text())
    session.update(
        status="expired",
        amount_total=4000,
        currency="eur",
        customer_details={**session["customer_details"], "email": EMAIL},
    )
    session["after_expiration"]["recovery"]["url"] = RECOVERY_URL
    session.update(changes)
    return session


def stripe_expired(consent: str = "opt_in", **session) -> dict:
    """An expired session whose `consent.promotions` Stripe filled in (a US merchant)."""
    return stripe_event(
        stripe_session(consent={"promotions": consent, "terms_of_service": None}, **session)
    )


def test_stripe_expiry_with_consent_is_evaluated_at_once_on_the_default_margin(
    client, run_worker, shop
):
    post_stripe(client, stripe_expired())
    run_worker()
    (decision,) = decisions()
    assert decision.margin == Decimal("16.00")  # 40 € × the default 40 %
    # 11 % × (16 € − 4 € off) − 4 % × 16 € = 0.68 beats plain's (8 % − 4 %) × 16 € = 0.64
    assert decision.arm == "discount"
    (message,) = mail.outbox
    assert RECOVERY_URL in message.body


def test_stripe_expiry_without_consent_sends_nothing(client, run_worker, shop):
    post_stripe(client, stripe_expired(consent="opt_out"))
    run_worker()
    assert not mail.outbox
    assert "no marketing consent" in decisions()[0].reason


def test_stripe_completed_session_is_never_reminded(client, run_worker, shop):
    completed = stripe_event(stripe_session(status="complete"), "checkout.session.completed")
    post_stripe(client, completed)
    run_worker()
    post_stripe(client, stripe_expired())
    run_worker()
    assert not mail.outbox
    assert decisions()[0].reason == "checkout completed"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"token": None}, "token"),
        ({"updated_at": "gestern"}, "updated_at"),
        ({"total_price": 40.5}, "total_price"),
        ({"line_items": [{"quantity": "1", "price": "1.00"}]}, "quantity"),
        ({"buyer_accepts_marketing": "yes"}, "buyer_accepts_marketing"),
    ],
)
def test_malformed_checkout_ends_invalid(client, run_worker, shop, changes, reason):
    post_shopify(client, checkout_body(**changes), topic="checkouts/update")
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID
    assert reason in delivery.last_error


def test_logs_never_carry_the_full_address(client, run_worker, shop, caplog):
    caplog.set_level("DEBUG")
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()
    assert mail.outbox
    assert EMAIL not in caplog.text
    assert "k***@example.com" in caplog.text


def test_admin_warns_when_no_discount_code_is_configured(admin_client):
    response = admin_client.get("/admin/automation/remindersettings/", follow=True)
    assert response.status_code == 200
    assert "No discount code configured" in response.content.decode()


def test_margin_rule_needs_exactly_one_matcher(admin_client):
    response = admin_client.post(
        "/admin/automation/marginrule/add/", {"rate": "0.5", "sku": "A", "vendor": "B"}
    )
    assert "exactly one" in response.content.decode()
    assert not MarginRule.objects.exists()


def test_parse_stripe_session_reads_consent_email_link_and_amount():
    version = stripe_checkouts.parse_stripe_session(stripe_expired())
    assert version.accepts_marketing is True
    assert version.email == EMAIL
    assert version.total_price == Decimal("40.00")
    assert version.recovery_url == RECOVERY_URL
    assert isinstance(version.updated_at, datetime)
