"""Before a reminder goes out, the vendor is asked whether the buyer paid meanwhile.

Our stored state learns of a purchase only from its webhook, and Shopify retries a failed
`orders/create` for hours: the order may exist at Shopify while we still think the checkout is
open. Shopify and Stripe answer here from their stand-ins (tests/support/vendors.py).
"""

import json
import time
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from automation.intake import inbox
from automation.models import CheckoutState, Delivery, ReminderDecision
from automation.reminders import checkouts, paid_check
from automation.shopify.queries import orders_for_checkout_search
from tests.reminders.test_checkouts import EMAIL, SAMPLES, checkout_body, shop, stripe_expired  # noqa: F401 (the `shop` fixture)
from tests.support.hanging import hanging_server
from tests.support.signing import post_shopify, post_stripe

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("not_bought", "shop"),
]

TOKEN = json.loads((SAMPLES / "shopify/checkouts_update.json").read_text())["token"]
OTHER_SHOP = "kerzenwerk.myshopify.com"


def only_decision() -> ReminderDecision:
    (decision,) = ReminderDecision.objects.all()
    return decision


def stored_checkout() -> CheckoutState:
    """Process the delivery now (its evaluation is scheduled, not run) and load the checkout."""
    inbox.process(Delivery.objects.get().pk, final_attempt=False)
    return CheckoutState.objects.get()


def iso(minutes_ago: float) -> str:
    return (timezone.now() - timedelta(minutes=minutes_ago)).isoformat()


# --- Shopify ---------------------------------------------------------------------------------


def test_an_order_shopify_has_but_whose_webhook_is_late_means_no_mail(
    client, run_worker, not_bought
):
    # given: the buyer paid 30 minutes ago; Shopify still retries orders/create
    not_bought.shopify.add_order(4711, checkout_token=TOKEN, email=EMAIL, created_at=iso(30))
    post_shopify(client, checkout_body(), topic="checkouts/update")

    run_worker()

    assert not mail.outbox
    decision = only_decision()
    assert (decision.arm, decision.sent_at) == ("none", None)
    assert decision.reason == "bought meanwhile: Shopify has order 4711"
    assert decision.inputs["would_send"] == "discount"  # 40 € at 55 %: ΔE 1.10 > plain 0.88
    (asked,) = [r for r in not_bought.shopify.requests if r.root == "orders"]
    assert f'checkout_token:"{TOKEN}"' in asked.variables["query"]


def test_an_order_from_the_same_address_through_another_checkout_means_no_mail(
    client, run_worker, not_bought
):
    not_bought.shopify.add_order(4712, checkout_token="another", email=EMAIL, created_at=iso(10))
    post_shopify(client, checkout_body(), topic="checkouts/update")

    run_worker()

    assert not mail.outbox
    assert only_decision().reason == "bought meanwhile: Shopify has order 4712"


def test_an_older_order_of_the_address_does_not_stop_the_reminder(client, run_worker, not_bought):
    not_bought.shopify.add_order(4713, checkout_token="old", email=EMAIL, created_at=iso(60 * 24))
    post_shopify(client, checkout_body(), topic="checkouts/update")

    run_worker()

    (message,) = mail.outbox
    assert message.to == [EMAIL]
    assert only_decision().sent_at is not None


def test_a_shopify_outage_retries_the_evaluation_which_then_sends_once(
    client, run_worker, not_bought, settings
):
    settings.REMINDER_RETRY_INTERVALS = [0]
    # both tries of the first attempt's request fail; the retried evaluation is answered
    not_bought.shopify.script(503, 503)
    post_shopify(client, checkout_body(), topic="checkouts/update")

    run_worker()

    assert len(mail.outbox) == 1
    assert only_decision().sent_at is not None
    asked = [r for r in not_bought.shopify.requests if r.root == "orders"]
    assert [r.answer for r in asked] == ["503", "503", "ok"]


def test_when_shopify_stays_unavailable_the_last_attempt_skips_with_the_reason(
    client, run_worker, not_bought, settings
):
    settings.REMINDER_RETRY_INTERVALS = [0]
    not_bought.shopify.script(*[503] * 4)
    post_shopify(client, checkout_body(), topic="checkouts/update")

    run_worker()

    assert not mail.outbox
    decision = only_decision()
    assert decision.arm == "none"
    assert decision.reason.startswith(
        "not sent: Shopify could not say whether the buyer paid meanwhile (Shopify Admin API "
        "answered HTTP 503)"
    )
    assert not CheckoutState.objects.get().completed_at


def test_an_attempt_that_is_not_the_last_raises_for_rqs_retry_and_decides_nothing(
    client, queue, not_bought
):
    post_shopify(client, checkout_body(), topic="checkouts/update")
    checkout = stored_checkout()
    not_bought.shopify.script(500, 500)

    with pytest.raises(paid_check.PaidUnknown):
        checkouts.evaluate(checkout.pk, checkout.updated_at, final_attempt=False)

    assert not ReminderDecision.objects.exists()
    assert not mail.outbox


def test_a_hanging_shopify_is_given_up_on_within_the_deadline(client, queue, settings):
    settings.REMINDER_PAID_CHECK_TIMEOUT = 0.3
    post_shopify(client, checkout_body(), topic="checkouts/update")
    checkout = stored_checkout()

    with hanging_server() as (url, _held):
        settings.SHOPIFY_ADMIN_URL = url
        started = time.monotonic()
        result = checkouts.evaluate(checkout.pk, checkout.updated_at)
        elapsed = time.monotonic() - started

    assert elapsed < 5
    assert result.startswith("skipped: not sent: Shopify could not say")
    assert "unreachable: ReadTimeout" in only_decision().reason
    assert not mail.outbox


def test_without_admin_api_access_no_reminder_is_sent_and_the_reason_says_what_to_set(
    client, run_worker, settings
):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = ""
    post_shopify(client, checkout_body(), topic="checkouts/update")

    run_worker()

    assert not mail.outbox
    reason = only_decision().reason
    assert reason.startswith(
        "not sent: cannot ask Shopify whether the buyer paid meanwhile (no Admin API access: set "
    )
    assert "SHOPIFY_ADMIN_TOKEN" in reason


def test_a_checkout_of_a_shop_our_admin_access_does_not_open_gets_no_reminder(
    client, run_worker, settings
):
    settings.SHOPIFY_SHOP_DOMAINS = [*settings.SHOPIFY_SHOP_DOMAINS, OTHER_SHOP]
    post_shopify(
        client,
        checkout_body(),
        topic="checkouts/update",
        HTTP_X_SHOPIFY_SHOP_DOMAIN=OTHER_SHOP,
    )

    run_worker()

    assert not mail.outbox
    assert only_decision().reason == (
        "not sent: cannot ask Shopify whether the buyer paid meanwhile (our Admin API access is "
        f"for elbkerzen.myshopify.com, not {OTHER_SHOP})"
    )


# --- Stripe ----------------------------------------------------------------------------------


def test_a_session_stripe_reports_complete_gets_no_reminder(client, run_worker, not_bought):
    body = stripe_expired()
    session_id = body["data"]["object"]["id"]
    not_bought.stripe.complete(session_id)

    post_stripe(client, body)
    run_worker()

    assert not mail.outbox
    assert only_decision().reason == (
        "bought meanwhile: Stripe reports the session complete (payment paid)"
    )
    assert not_bought.stripe.requests == [session_id]


def test_an_expired_session_at_stripe_gets_its_reminder(client, run_worker, not_bought):
    post_stripe(client, stripe_expired())
    run_worker()

    assert len(mail.outbox) == 1


def test_without_a_stripe_key_no_reminder_is_sent(client, run_worker, settings):
    settings.STRIPE_API_KEY = ""
    post_stripe(client, stripe_expired())
    run_worker()

    assert not mail.outbox
    assert only_decision().reason == (
        "not sent: cannot ask Stripe whether the buyer paid meanwhile (set STRIPE_API_KEY)"
    )


def test_a_stripe_outage_on_the_last_attempt_skips(client, queue, not_bought):
    not_bought.stripe.script.append(503)
    post_stripe(client, stripe_expired())
    checkout = stored_checkout()

    result = checkouts.evaluate(checkout.pk, checkout.updated_at)

    assert result == (
        "skipped: not sent: Stripe could not say whether the buyer paid meanwhile "
        "(Stripe answered HTTP 503)"
    )
    assert not mail.outbox


def test_a_token_with_quotes_cannot_widen_the_order_search():
    """The token comes from a webhook body: quoted, its quotes escaped, it stays one value."""
    since = timezone.now()
    search = orders_for_checkout_search('x" OR email:"*', "", since)

    assert search == 'checkout_token:"x\\" OR email:\\"*"'
