"""A delivery that kills its worker is not claimed for ever: every claim counts an attempt (a
job's, a batch's, one a dead worker left `processing`), and at the limit the row is `dead` with
one alert. A batch loads no more stored body bytes than DELIVERY_BATCH_MAX_BYTES allows."""

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from rq.job import Job

from automation.intake import backlog, inbox, sweeper
from automation.models import Delivery
from automation.platform import scheduling
from tests.support.signing import post_shopify
from tests.support.watching import watch

pytestmark = pytest.mark.django_db(transaction=True)

Status = Delivery.Status
ITEM = 808950810
STORE = 24826418


def alerts() -> list:
    return [message for message in mail.outbox if "Delivery gave up" in message.subject]


def worker_killed(delivery: Delivery, queue, settings) -> None:
    """The worker that claimed the row dies: no outcome is recorded, its job is gone, and the
    row's lease (2 × DELIVERY_JOB_TIMEOUT) runs out."""
    queue.empty()
    started = timezone.now() - timedelta(seconds=settings.DELIVERY_JOB_TIMEOUT * 2 + 3600)
    Delivery.objects.filter(pk=delivery.pk).update(processing_started_at=started)


def test_a_delivery_whose_worker_dies_every_time_ends_dead_with_one_alert(
    client, queue, handler, settings
):
    settings.DELIVERY_RETRY_INTERVALS = [10, 60, 300]
    limit = scheduling.delivery_attempt_limit()
    post_shopify(client, {"n": 1})
    delivery = Delivery.objects.get()

    for attempt in range(1, limit + 1):
        # Given the worker claims the delivery and is killed before recording anything
        claimed = inbox.claim(delivery.pk)
        assert claimed is not None, f"attempt {attempt} could not claim"
        assert claimed.attempts == attempt
        worker_killed(delivery, queue, settings)
        # When the sweeper finds it `processing` past its lease
        sweeper.sweep()
        row = Delivery.objects.get(pk=delivery.pk)
        if attempt < limit:
            # Then the attempt counts and the job comes back with only the retries left
            assert (row.status, row.attempts) == (Status.FAILED, attempt)
            assert str(sweeper.STOPPED_MID_JOB) == row.last_error
            job = Job.fetch(scheduling.job_id_for(delivery.pk), connection=queue.connection)
            assert (job.retries_left or 0) == limit - 1 - attempt  # None: none left
            assert alerts() == []

    # And at the limit it is dead, with one alert
    assert (row.status, row.attempts) == (Status.DEAD, limit)
    assert len(alerts()) == 1
    assert inbox.claim(delivery.pk) is None
    sweeper.sweep()
    assert len(alerts()) == 1
    assert handler.calls == []


def test_a_row_at_its_last_attempt_is_final_even_with_a_fresh_rq_retry_table(
    client, queue, handler, settings
):
    """RQ's retries started afresh (a job enqueued anew): the row's own count ends it."""
    handler.behaviour = "fail"
    limit = scheduling.delivery_attempt_limit()
    post_shopify(client, {"n": 1})
    delivery = Delivery.objects.get()
    Delivery.objects.filter(pk=delivery.pk).update(status=Status.FAILED, attempts=limit - 1)

    with pytest.raises(RuntimeError, match="on purpose"):
        inbox.process(delivery.pk, final_attempt=False)

    row = Delivery.objects.get(pk=delivery.pk)
    assert (row.status, row.attempts) == (Status.DEAD, limit)
    assert len(alerts()) == 1


def test_a_received_row_whose_attempts_are_spent_goes_dead_on_the_sweep(
    client, queue, handler, settings
):
    """Handed back by a batch after its last claim: no job may claim it, the sweeper ends it."""
    settings.DELIVERY_SWEEP_AFTER = 0
    limit = scheduling.delivery_attempt_limit()
    post_shopify(client, {"n": 1})
    delivery = Delivery.objects.get()
    queue.empty()
    Delivery.objects.filter(pk=delivery.pk).update(
        attempts=limit, received_at=timezone.now() - timedelta(minutes=5)
    )
    assert inbox.claim(delivery.pk) is None

    sweeper.sweep()
    sweeper.sweep()
    assert Delivery.objects.get(pk=delivery.pk).status == Status.DEAD
    assert len(alerts()) == 1


def test_a_replay_starts_the_attempts_afresh(client, queue, handler, settings):
    limit = scheduling.delivery_attempt_limit()
    post_shopify(client, {"n": 1})
    delivery = Delivery.objects.get()
    Delivery.objects.filter(pk=delivery.pk).update(status=Status.DEAD, attempts=limit)

    assert inbox.replay([delivery.pk]) == 1
    assert inbox.process(delivery.pk, final_attempt=False) == Status.DONE
    assert Delivery.objects.get(pk=delivery.pk).attempts == 1


# --- the batch's byte bound -------------------------------------------------------------------


def send_level(client, available: int, minute: int, padding: int) -> Delivery:
    post_shopify(
        client,
        {
            "inventory_item_id": ITEM,
            "location_id": STORE,
            "available": available,
            "updated_at": f"2026-11-26T16:{minute:02d}:00+01:00",
            "padding": "x" * padding,  # a field the parser does not read: a larger body
        },
        topic="inventory_levels/update",
    )
    return Delivery.objects.order_by("-pk").first()


def test_a_batch_never_loads_more_body_bytes_than_the_bound(client, queue, settings):
    watch(ITEM, "555", customer_id="1234567890")
    sent = [send_level(client, 9 - minute, minute, padding=1000) for minute in range(6)]
    size = len(bytes(sent[0].body))
    settings.DELIVERY_BATCH_MAX_BYTES = 3 * size + size // 2  # the leader and two followers

    leader = inbox.claim(sent[0].pk)
    followers = backlog.claim_backlog(leader)

    loaded = len(bytes(leader.body)) + sum(len(bytes(f.body)) for f in followers)
    assert loaded <= settings.DELIVERY_BATCH_MAX_BYTES
    assert sorted(f.pk for f in followers) == [d.pk for d in sent[1:3]]
    left = Delivery.objects.filter(pk__in=[d.pk for d in sent[3:]])
    assert set(left.values_list("status", "attempts")) == {(Status.RECEIVED, 0)}


def test_a_leader_at_the_byte_bound_takes_no_followers_and_the_others_finish_alone(
    client, run_worker, settings
):
    watch(ITEM, "555", customer_id="1234567890")
    sent = [send_level(client, 9 - minute, minute, padding=2000) for minute in range(3)]
    settings.DELIVERY_BATCH_MAX_BYTES = len(bytes(sent[0].body))

    leader = inbox.claim(sent[0].pk)
    assert backlog.claim_backlog(leader) == []
    Delivery.objects.filter(pk=leader.pk).update(status=Status.RECEIVED)
    run_worker()
    rows = Delivery.objects.filter(pk__in=[d.pk for d in sent]).order_by("pk")
    assert [(row.status, row.attempts) for row in rows] == [(Status.DONE, 2), (Status.DONE, 1)] + [
        (Status.DONE, 1)
    ]


def test_a_follower_with_only_its_last_attempt_left_is_left_to_its_own_job(client, queue):
    watch(ITEM, "555", customer_id="1234567890")
    leader, last_chance, fresh = (send_level(client, 5 - m, m, padding=0) for m in range(3))
    Delivery.objects.filter(pk=last_chance.pk).update(
        attempts=scheduling.delivery_attempt_limit() - 1
    )

    followers = backlog.claim_backlog(inbox.claim(leader.pk))
    assert [f.pk for f in followers] == [fresh.pk]
