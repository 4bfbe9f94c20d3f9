"""Bodies whose text no database or mail can take end `invalid` at once, with the reason.

A NUL (`\\u0000`) cannot go into PostgreSQL text or jsonb; a lone surrogate (`\\ud800`) cannot be
encoded as UTF-8 for the database or a mail. Retrying cannot change the body, so such a
delivery is not retried six times over 80 minutes and then alerted as `dead`: the first
attempt ends it `invalid`, naming the character and where it sits.
"""

import json

import pytest
from django.core import mail
from django.db import DataError

from automation.intake import inbox, outcomes
from automation.models import CheckoutState, Delivery, ReminderDecision
from automation.platform import notes
from automation.platform.exceptions import InvalidPayload
from automation.reminders import checkouts
from tests.reminders.test_checkouts import checkout_body
from tests.support.signing import post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

Status = Delivery.Status


@pytest.fixture(autouse=True)
def _retries_far_apart(settings):
    """Retries that would still be waiting when the test looks: any retry stays visible."""
    settings.DELIVERY_RETRY_INTERVALS = [600] * 5


def signed_checkout(client, body: dict) -> Delivery:
    # ensure_ascii keeps the escapes as Shopify would send them: `\u0000`, `\ud800`.
    post_shopify(client, json.dumps(body).encode(), topic="checkouts/update")
    return Delivery.objects.get()


def assert_ended_at_once(delivery: Delivery, queue) -> None:
    delivery.refresh_from_db()
    assert delivery.attempts == 1
    assert queue.scheduled_job_registry.count == 0  # no retry waiting
    assert queue.count == 0
    assert mail.outbox == []  # neither an alert nor a reminder


def line_with_title(title: str) -> list[dict]:
    line = checkout_body()["line_items"][0]
    return [line | {"title": title}]


@pytest.mark.postgres(
    reason="SQLite stores what PostgreSQL refuses (NUL, a lone surrogate in JSON)"
)
@pytest.mark.parametrize(
    ("changes", "character", "where"),
    [
        ({"token": "tok\u0000en"}, "a NUL character", "$.token"),
        ({"line_items": line_with_title("Winter\u0000zauber")}, "a NUL character", "$.line_items"),
        ({"line_items": line_with_title("Winter\ud800zauber")}, "(U+D800)", "$.line_items"),
    ],
    ids=["nul-in-text", "nul-in-json", "lone-surrogate-in-json"],
)
def test_unstorable_text_ends_invalid_at_the_first_attempt(
    client, queue, run_worker, changes, character, where
):
    delivery = signed_checkout(client, checkout_body(**changes))
    run_worker()

    assert_ended_at_once(delivery, queue)
    assert delivery.status == Status.INVALID
    assert character in delivery.last_error
    assert where in delivery.last_error
    assert "cannot be stored or sent" in delivery.last_error
    assert not CheckoutState.objects.exists()


def test_a_lone_surrogate_in_the_address_is_never_retried_nor_mailed(client, queue, run_worker):
    """The address is parsed at the edge (automation/platform/addresses.py): a lone surrogate makes
    it no address, so the checkout is kept without one and gets no reminder, on the first try."""
    delivery = signed_checkout(client, checkout_body(email="kundin\ud800@example.com"))
    run_worker()

    assert_ended_at_once(delivery, queue)
    assert delivery.status == Status.DONE
    decision = ReminderDecision.objects.get()
    assert (decision.reason, decision.sent_at) == (notes.text_of(checkouts.INVALID_EMAIL), None)


def test_a_nul_where_no_handler_keeps_it_does_not_cost_the_delivery(client, queue, run_worker):
    """Only text that is stored or sent counts: an order or a stock change is not lost."""
    delivery = signed_checkout(client, checkout_body(note="gift\u0000wrap"))
    run_worker()

    delivery.refresh_from_db()
    assert delivery.status == Status.DONE
    assert CheckoutState.objects.count() == 1


def test_a_data_error_of_another_cause_is_still_retried(client, queue, run_worker):
    def too_long(_event, delivery):
        raise DataError("value too long for type character varying(3)")

    inbox.HANDLERS[("shopify", "test/topic")] = too_long
    try:
        post_shopify(client, {"note": "no NUL and no surrogate here"})
        run_worker()
    finally:
        inbox.HANDLERS.pop(("shopify", "test/topic"))

    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Status.FAILED, 1)
    assert queue.scheduled_job_registry.count == 1  # the retry waits


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"a": ["x", {"b\u0000": 1}]}, "$.a[1] (a key)"),
        ({"a": [{"b": "ok"}, {"c": "\udfff"}]}, "$.a[1].c"),
        ({"a": "\U0001f56f candle, a valid pair"}, None),
    ],
)
def test_the_reason_names_where_the_character_sits(body, expected):
    delivery = Delivery(body=json.dumps(body).encode())
    reason = outcomes.unstorable_text(delivery, UnicodeEncodeError("utf-8", "", 0, 1, "x"))
    if expected is None:
        assert reason == ""
    else:
        assert f"in {expected}," in reason


def test_a_reason_quoting_the_hostile_text_is_stored_escaped(client, queue, run_worker):
    def quoting(_event, delivery):
        raise InvalidPayload("title 'Winter\x00zauber\ud800' is not allowed")

    inbox.HANDLERS[("shopify", "test/topic")] = quoting
    try:
        post_shopify(client, {"note": "the handler quotes its own text"})
        run_worker()
    finally:
        inbox.HANDLERS.pop(("shopify", "test/topic"))

    delivery = Delivery.objects.get()
    assert delivery.status == Status.INVALID
    assert delivery.last_error == "title 'Winter\\u0000zauber\\ud800' is not allowed"
