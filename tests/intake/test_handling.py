"""The handler contract: a handler returns an Outcome; the inbox records it with the handler's
effects in one transaction, then runs its follow-ups, whatever they are; "effects committed,
retry the rest" fails the delivery for RQ's retry without undoing the effects."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from automation.intake import handling, inbox
from automation.models import CheckoutState, Delivery, StockLevel
from automation.platform import scheduling
from automation.platform.exceptions import PermanentAdsError, TransientAdsError
from automation.reminders import follow_ups
from tests.support.signing import post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

TOPIC = "test/contract"
LEVEL_AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def register():
    def put(handler):
        # A test-only topic has no parser, so its handler's event is None (sources/events.py).
        handling.HANDLERS[("shopify", TOPIC)] = handler

    yield put
    handling.HANDLERS.pop(("shopify", TOPIC), None)


def _effect() -> None:
    StockLevel.objects.create(inventory_item_id=1, location_id=1, available=0, updated_at=LEVEL_AT)


def _delivery(client) -> Delivery:
    post_shopify(client, {"id": 1}, topic=TOPIC)
    return Delivery.objects.get()


def test_effects_committed_retry_the_rest_keeps_the_effects_and_leaves_the_row_failed(
    client, queue, register
):
    def partly_done(*_args):
        _effect()  # the stock level: stored, whatever the Ads call did
        return handling.Outcome(
            Delivery.Status.DONE, "total available 0", retry=TransientAdsError("try later")
        )

    register(partly_done)
    delivery = _delivery(client)
    with pytest.raises(TransientAdsError, match="try later"):
        inbox.process(delivery.pk, final_attempt=False)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.last_error) == ("failed", "TransientAdsError: try later")
    assert StockLevel.objects.count() == 1


def test_a_permanent_rest_goes_dead_with_the_effects_kept(client, queue, register):
    register(
        lambda *_args: (
            _effect(),
            handling.Outcome(Delivery.Status.DONE, retry=PermanentAdsError("no such ad group")),
        )[1]
    )
    delivery = _delivery(client)
    assert inbox.process(delivery.pk, final_attempt=False) == Delivery.Status.DEAD
    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.DEAD
    assert StockLevel.objects.count() == 1


def test_a_failing_handler_leaves_no_half_of_its_effects(client, queue, register):
    def fails_midway(*_args):
        _effect()
        raise RuntimeError("after the first write")

    register(fails_midway)
    delivery = _delivery(client)
    with pytest.raises(RuntimeError):
        inbox.process(delivery.pk, final_attempt=False)
    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.FAILED
    assert StockLevel.objects.count() == 0  # one transaction with the outcome: rolled back


def _checkout() -> CheckoutState:
    return CheckoutState.objects.create(
        source=CheckoutState.Source.SHOPIFY, token="t-contract", updated_at=timezone.now()
    )


def test_follow_ups_are_scheduled_once_the_outcome_has_committed(client, queue, register):
    at = timezone.now() + timedelta(hours=1)
    seen = {}

    def schedules(*_args):
        checkout = _checkout()
        seen["checkout"] = checkout
        return handling.Outcome(
            Delivery.Status.DONE,
            "reminder evaluation scheduled",
            follow_ups=(follow_ups.ScheduleEvaluation(checkout, at),),
        )

    register(schedules)
    delivery = _delivery(client)
    assert inbox.process(delivery.pk, final_attempt=False) == Delivery.Status.DONE
    job_id = scheduling.evaluation_job_id(seen["checkout"])
    assert queue.scheduled_job_registry.get_job_ids() == [job_id]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.result) == ("done", "reminder evaluation scheduled")


@dataclass(frozen=True)
class NotesWhatItSees:
    """A follow-up the inbox knows nothing about: it notes what it finds when run."""

    seen: list

    def run(self) -> None:
        self.seen.append((connection.in_atomic_block, Delivery.objects.get().status))


def test_any_follow_up_runs_once_the_outcome_has_committed(client, queue, register):
    seen: list = []
    register(
        lambda *_args: (
            _effect(),
            handling.Outcome(Delivery.Status.DONE, follow_ups=(NotesWhatItSees(seen),)),
        )[1]
    )
    delivery = _delivery(client)
    assert inbox.process(delivery.pk, final_attempt=False) == Delivery.Status.DONE
    assert seen == [(False, Delivery.Status.DONE)]  # outside the transaction, outcome recorded
    assert StockLevel.objects.count() == 1


def test_a_follow_up_redis_refuses_fails_the_delivery_for_its_retry(
    client, queue, register, settings
):
    def schedules(*_args):
        return handling.Outcome(
            Delivery.Status.DONE,
            follow_ups=(follow_ups.ScheduleEvaluation(_checkout(), timezone.now()),),
        )

    register(schedules)
    delivery = _delivery(client)
    settings.REDIS_URL = "redis://127.0.0.1:1/11"  # nothing listens on port 1
    with pytest.raises(Exception, match="(?i)connect"):
        inbox.process(delivery.pk, final_attempt=False)
    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.FAILED
    assert "ConnectionError" in delivery.last_error
