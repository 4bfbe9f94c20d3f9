"""Redis killed with work scheduled and started empty: the minute's cron entries finish it all.

Given a delivery waiting for its RQ retry and a reminder evaluation waiting for its due time,
both only in Redis; when Redis dies and comes back with nothing; then the cron entries that run
every minute (automation/cron.py, as `rqcron` runs them) and a worker finish every piece of
work exactly once: the delivery `done` (or `dead` with one alert when its attempts are spent),
the checkout one decision and at most one mail.
"""

import time
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.utils import timezone
from redis import Redis
from rq import Queue, SimpleWorker
from rq.cron import CronScheduler

from automation.models import (
    CheckoutState,
    Delivery,
    ReminderDecision,
)
from automation.platform import scheduling
from automation.platform.queues import job_is_alive, redis_client
from automation.reminders import catch_up as reminder_catch_up
from tests.reminders.test_checkouts import EMAIL, checkout_body
from tests.support.private_redis import needs_redis_server
from tests.support.reminder_shop import reminder_shop  # noqa: F401 (the `shop` fixture)
from tests.support.signing import post_shopify

pytestmark = [
    pytest.mark.django_db(transaction=True),
    needs_redis_server,
    pytest.mark.usefixtures("not_bought"),
]

Status = Delivery.Status


def work(*, with_scheduler: bool = True) -> None:
    """Real burst workers on the current Redis until nothing is queued or due.

    A burst worker's scheduler moves due jobs once, at start, so a job that a job schedules
    for now needs another round (as tests/conftest.py's run_worker does).
    """
    connection = Redis.from_url(django_settings.REDIS_URL)
    queue = Queue("default", connection=connection)
    for _ in range(10):
        SimpleWorker([queue], connection=connection).work(burst=True, with_scheduler=with_scheduler)
        due = queue.scheduled_job_registry.get_jobs_to_schedule(int(time.time()))
        if not queue.count and not (with_scheduler and due):
            return
    raise AssertionError("the queue did not drain")


def run_minute_cron() -> None:
    """Run every entry automation/cron.py registers to run each minute, as rqcron would."""
    scheduler = CronScheduler(connection=redis_client())
    scheduler.load_config_from_file("automation.cron")
    for entry in scheduler.get_jobs():
        if entry.interval and entry.interval <= 60:
            entry.func(*entry.args, **entry.kwargs)


def alerts() -> list:
    return [message for message in mail.outbox if "Delivery gave up" in message.subject]


def reminders() -> list:
    return [message for message in mail.outbox if message.to == [EMAIL]]


def age_failures(seconds: float) -> None:
    """Let the time pass since the last failure (the lost retry's interval)."""
    Delivery.objects.filter(status=Status.FAILED).update(
        processed_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_everything_scheduled_before_redis_lost_its_data_finishes(
    client, private_redis, handler, shop, settings
):
    settings.DELIVERY_RETRY_INTERVALS = [600, 600]
    settings.DELIVERY_SWEEP_AFTER = 1
    # given: a delivery whose first attempt failed, its retry scheduled in Redis for 10 minutes
    handler.behaviour = "fail"
    post_shopify(client, {"n": 1})
    work(with_scheduler=False)
    failed = Delivery.objects.get(topic="test/topic")
    assert (failed.status, failed.attempts) == (Status.FAILED, 1)
    assert job_is_alive(scheduling.job_id_for(failed.pk))
    # and a checkout whose reminder evaluation is due in 3 seconds, waiting in RQ's scheduler
    due_in = 3
    delay = shop.reminder_delay_minutes * 60
    post_shopify(client, checkout_body((delay - due_in) / 60), topic="checkouts/update")
    work()
    checkout = CheckoutState.objects.get()
    assert job_is_alive(scheduling.evaluation_job_id(checkout))
    assert not ReminderDecision.objects.exists()

    # when Redis dies and comes back with nothing
    private_redis.restart_empty()
    handler.behaviour = "done"
    time.sleep(due_in + settings.DELIVERY_SWEEP_AFTER + 0.5)  # the evaluation is overdue now
    age_failures(600)  # and so is the lost retry
    run_minute_cron()
    work()
    run_minute_cron()  # a second minute finds nothing left to do
    work()

    # then every piece of work finished, once
    failed.refresh_from_db()
    assert (failed.status, failed.attempts) == (Status.DONE, 2)
    assert handler.calls == [failed.pk, failed.pk]
    (decision,) = ReminderDecision.objects.all()
    assert decision.checkout_version == checkout.updated_at
    assert decision.sent_at is not None
    assert len(reminders()) == 1
    assert alerts() == []
    assert set(Delivery.objects.values_list("status", flat=True)) == {Status.DONE}


def test_a_checkout_whose_evaluation_redis_lost_gets_one_decision_and_one_mail(
    client, private_redis, shop, settings
):
    settings.DELIVERY_SWEEP_AFTER = 1
    delay = shop.reminder_delay_minutes * 60
    post_shopify(client, checkout_body((delay - 1) / 60), topic="checkouts/update")
    work()  # the evaluation now waits in RQ's scheduler, due in a second
    private_redis.restart_empty()
    time.sleep(1 + settings.DELIVERY_SWEEP_AFTER + 0.5)

    run_minute_cron()
    assert reminder_catch_up.catch_up() == 0  # scheduled again once, not twice
    work()
    run_minute_cron()
    work()

    (decision,) = ReminderDecision.objects.all()
    assert decision.checkout_version == CheckoutState.objects.get().updated_at
    assert decision.arm == "discount"
    assert decision.sent_at is not None
    assert len(reminders()) == 1


def test_a_lost_retry_waits_for_its_interval_and_keeps_the_remaining_retries(
    client, private_redis, handler, settings
):
    settings.DELIVERY_RETRY_INTERVALS = [600, 600, 600]
    handler.behaviour = "fail"
    post_shopify(client, {"n": 1})
    work(with_scheduler=False)
    private_redis.restart_empty()

    age_failures(120)  # the retry was due in 600 s: not yet
    run_minute_cron()
    assert Delivery.objects.get().status == Status.FAILED
    assert handler.calls == [Delivery.objects.get().pk]

    age_failures(601)
    run_minute_cron()
    work(with_scheduler=False)  # the second attempt fails too, and RQ keeps its next retry
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Status.FAILED, 2)
    job = Queue("default", connection=redis_client()).fetch_job(scheduling.job_id_for(delivery.pk))
    # three retries in all: one used before the loss, one just now, one left
    assert job.retries_left == 1
    assert job.get_status() == "scheduled"
    run_minute_cron()  # the retry is alive in Redis now: nothing is enqueued twice
    assert len(handler.calls) == 2


def test_a_lost_last_retry_runs_once_more_then_goes_dead_with_one_alert(
    client, private_redis, handler, settings
):
    settings.DELIVERY_RETRY_INTERVALS = [600]
    handler.behaviour = "fail"
    post_shopify(client, {"n": 1})
    work(with_scheduler=False)  # attempt 1 of 2 fails; the retry waits in Redis
    private_redis.restart_empty()

    age_failures(601)
    run_minute_cron()
    work()  # attempt 2 is the last: it fails, and the delivery is given up
    run_minute_cron()

    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Status.DEAD, 2)
    assert len(handler.calls) == 2
    assert len(alerts()) == 1


def test_a_failed_row_with_every_attempt_spent_goes_dead_once_with_one_alert(
    private_redis, settings
):
    """A failed row that already had all its attempts (the retry table was shortened, say)."""
    settings.DELIVERY_RETRY_INTERVALS = [60, 60]
    delivery = Delivery.objects.create(
        source="shopify",
        topic="test/topic",
        webhook_id="spent",
        body=b"{}",
        status=Status.FAILED,
        attempts=3,
        last_error="RuntimeError: handler failed on purpose",
        processed_at=timezone.now() - timedelta(hours=1),
    )

    run_minute_cron()
    run_minute_cron()

    delivery.refresh_from_db()
    assert delivery.status == Status.DEAD
    assert delivery.last_error == "RuntimeError: handler failed on purpose"
    (alert,) = alerts()
    assert f"#{delivery.pk}" in alert.subject
    assert Queue("default", connection=redis_client()).count == 0  # nothing was enqueued


def test_an_overdue_evaluation_still_in_redis_is_not_scheduled_twice(
    client, private_redis, shop, settings
):
    """The scheduler was down, not Redis: the job is still there and will run when it is back."""
    settings.DELIVERY_SWEEP_AFTER = 1
    delay = shop.reminder_delay_minutes * 60
    post_shopify(client, checkout_body((delay - 1) / 60), topic="checkouts/update")
    work()
    time.sleep(1 + settings.DELIVERY_SWEEP_AFTER + 0.5)

    assert reminder_catch_up.catch_up() == 0
    work()  # the scheduler is back
    assert ReminderDecision.objects.count() == 1
    assert len(reminders()) == 1


def test_catch_up_leaves_decided_completed_and_long_abandoned_checkouts_alone(
    client, private_redis, shop, settings
):
    post_shopify(client, checkout_body(120), topic="checkouts/update")
    work()
    assert ReminderDecision.objects.count() == 1  # decided in time
    late = reminder_catch_up.CATCH_UP_WINDOW + timedelta(minutes=shop.reminder_delay_minutes + 5)
    for token, changes in [
        ("completed", {"completed_at": timezone.now().isoformat()}),
        ("too-late", {}),
    ]:
        body = checkout_body(late.total_seconds() / 60, token=token, **changes)
        post_shopify(client, body, topic="checkouts/update")
    private_redis.restart_empty()  # the late checkouts' evaluations are lost before they ran

    assert reminder_catch_up.catch_up() == 0
    assert Queue("default", connection=redis_client()).scheduled_job_registry.count == 0
    assert ReminderDecision.objects.count() == 1
