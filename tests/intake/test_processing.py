"""End to end: signed POST → real RQ worker → outcome on the row; retries, dead letters, replay."""

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from automation import jobs
from automation.intake import inbox
from automation.models import Delivery
from automation.platform import scheduling
from automation.platform.exceptions import InvalidPayload, PermanentError
from tests.support.postgres import kill_django_connection
from tests.support.signing import post_shopify

pytestmark = pytest.mark.django_db(transaction=True)


def test_topic_without_handler_ends_ignored(client, run_worker):
    post_shopify(client, {"id": 1}, topic="collections/update")
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.IGNORED
    assert delivery.result == "no handler for collections/update"
    assert delivery.attempts == 1
    assert delivery.processed_at is not None


def test_registered_handler_runs_once_and_ends_done(client, run_worker, handler):
    post_shopify(client, {"id": 1})
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DONE
    assert handler.calls == [delivery.pk]


def test_always_failing_handler_goes_dead_after_the_last_retry_with_one_alert(
    client, run_worker, handler, settings
):
    handler.behaviour = "fail"
    post_shopify(client, {"id": 1})
    run_worker()

    delivery = Delivery.objects.get()
    attempts = len(settings.DELIVERY_RETRY_INTERVALS) + 1
    assert attempts >= 5
    assert delivery.status == Delivery.Status.DEAD
    assert delivery.attempts == attempts
    assert len(handler.calls) == attempts
    assert "handler failed on purpose" in delivery.last_error
    assert len(mail.outbox) == 1
    alert = mail.outbox[0]
    assert alert.to == ["merchant@elbkerzen.example"]
    assert "test/topic" in alert.subject
    assert f"/admin/automation/delivery/{delivery.pk}/change/" in alert.body
    assert delivery.webhook_id in alert.body


def test_failing_attempt_leaves_the_row_failed_for_the_retry(client, queue, handler):
    handler.behaviour = "fail"
    post_shopify(client, {"id": 1})
    delivery = Delivery.objects.get()
    with pytest.raises(RuntimeError):
        inbox.process(delivery.pk, final_attempt=False)
    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.FAILED
    assert "RuntimeError" in delivery.last_error
    assert not mail.outbox


def test_permanent_error_goes_dead_at_once_without_retries(client, run_worker):
    calls = []

    def permanent(_event, delivery):
        calls.append(delivery.pk)
        raise PermanentError("ad group does not exist")

    inbox.HANDLERS[("shopify", "test/permanent")] = permanent
    try:
        post_shopify(client, {"id": 1}, topic="test/permanent")
        run_worker()
    finally:
        del inbox.HANDLERS[("shopify", "test/permanent")]
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DEAD
    assert len(calls) == 1
    assert len(mail.outbox) == 1


def test_handler_rejecting_the_payload_ends_invalid_with_the_reason(client, run_worker):
    def reject(_event, delivery):
        raise InvalidPayload("inventory_item_id must be an integer")

    inbox.HANDLERS[("shopify", "test/invalid")] = reject
    try:
        post_shopify(client, {"id": 1}, topic="test/invalid")
        run_worker()
    finally:
        del inbox.HANDLERS[("shopify", "test/invalid")]
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID
    assert delivery.last_error == "inventory_item_id must be an integer"
    assert not mail.outbox


def test_running_the_job_twice_processes_once(client, queue, handler):
    post_shopify(client, {"id": 1})
    delivery = Delivery.objects.get()
    assert jobs.process_delivery(delivery.pk) == "done"
    assert jobs.process_delivery(delivery.pk) == "skipped"
    assert handler.calls == [delivery.pk]


def test_dead_delivery_replayed_from_the_admin_is_processed(
    client, admin_client, run_worker, handler
):
    handler.behaviour = "fail"
    post_shopify(client, {"id": 1})
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DEAD

    handler.behaviour = "done"
    response = admin_client.post(
        "/admin/automation/delivery/",
        {"action": "replay", "_selected_action": [delivery.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert "Replaying 1 deliveries." in response.content.decode()
    run_worker()
    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.DONE


def test_replay_skips_deliveries_that_are_neither_failed_nor_dead(client, queue):
    post_shopify(client, {"id": 1})
    assert inbox.replay([Delivery.objects.get().pk]) == 0


def _age(delivery_id: int, seconds: int) -> None:
    Delivery.objects.filter(pk=delivery_id).update(
        received_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_redis_outage_during_intake_is_recovered_by_the_sweeper(
    client, settings, run_worker, handler
):
    working_url = settings.REDIS_URL
    settings.REDIS_URL = "redis://127.0.0.1:1/15"
    assert post_shopify(client, {"id": 1}).status_code == 200
    settings.REDIS_URL = working_url
    delivery = Delivery.objects.get()

    assert jobs.sweep_deliveries() == 0  # too young: the intake's own job may still come
    _age(delivery.pk, 61)
    assert jobs.sweep_deliveries() == 1
    assert jobs.sweep_deliveries() == 0  # its job is queued: not enqueued twice
    run_worker()

    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.DONE
    assert handler.calls == [delivery.pk]


def test_sweeper_revives_a_delivery_whose_worker_died_mid_job(client, queue, settings, handler):
    post_shopify(client, {"id": 1})
    delivery = Delivery.objects.get()
    queue.empty()  # the job is gone with its worker
    long_ago = timezone.now() - timedelta(hours=1)
    Delivery.objects.filter(pk=delivery.pk).update(
        status=Delivery.Status.PROCESSING, processing_started_at=long_ago, received_at=long_ago
    )
    assert jobs.sweep_deliveries() == 1
    assert queue.job_ids == [f"delivery-{delivery.pk}"]


@pytest.mark.postgres(reason="a server-side connection killed (pg_terminate_backend)")
def test_worker_survives_a_lost_database_connection(client, run_worker, handler, requires_postgres):
    """A PostgreSQL restart kills the worker's connection; the next job reconnects."""
    post_shopify(client, {"id": 1})
    run_worker()
    post_shopify(client, {"id": 2})
    kill_django_connection()

    run_worker()
    assert list(Delivery.objects.order_by("pk").values_list("status", flat=True)) == [
        "done",
        "done",
    ]


def test_delivery_job_carries_its_retries_timeout_and_no_stored_result(queue, settings):
    from rq.job import Job

    assert scheduling.enqueue_delivery(4242)
    job = Job.fetch("delivery-4242", connection=queue.connection)
    assert job.retries_left == len(settings.DELIVERY_RETRY_INTERVALS)
    assert job.timeout == settings.DELIVERY_JOB_TIMEOUT
    assert job.result_ttl == 0
    assert queue.job_ids == ["delivery-4242"]
    assert queue.name in [known.name for known in type(queue).all(connection=queue.connection)]
