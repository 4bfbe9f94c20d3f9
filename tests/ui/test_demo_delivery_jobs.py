"""The demo drops its deliveries' jobs from the queue while a real worker runs.

Given a worker busy on one of the demo's delivery jobs, and more of them queued behind it:
dropping them deletes the queued ones, leaves the running one to its worker, and skips one
that finished (and vanished) after the drop began, instead of failing `demo_setup`.
"""

import pytest
from rq.job import Job

from automation.platform import scheduling
from automation.ui.dashboard.demo_history import _drop_delivery_jobs
from tests.support.worker_process import wait_for, worker_process

HOLD = "tests.support.worker_process.hold_until_gone"
NOTHING = "tests.support.worker_process.nothing"
QUEUED = 300  # enough that the drop is still busy when the held job has finished


def test_dropping_the_demo_jobs_leaves_a_running_job_to_its_worker(queue, redis):
    held_pk = 10_000
    queued_pks = list(range(1, QUEUED + 1))
    first_key = Job(scheduling.job_id_for(queued_pks[0]), connection=redis).key
    queue.enqueue_call(
        HOLD,
        args=(first_key.decode() if isinstance(first_key, bytes) else first_key, "held-done"),
        job_id=scheduling.job_id_for(held_pk),
        result_ttl=0,
    )
    with worker_process() as worker:
        wait_for(lambda: queue.started_job_registry.count, timeout=30, what="the worker's held job")
        for pk in queued_pks:
            queue.enqueue_call(NOTHING, job_id=scheduling.job_id_for(pk), result_ttl=0)

        # The held job is last: it ends (and RQ deletes it, result_ttl=0) as soon as the first
        # queued job is deleted, long before the drop reaches it.
        _drop_delivery_jobs([*queued_pks, held_pk])

        wait_for(lambda: redis.get("held-done"), timeout=10, what="the held job's end")
        # Freed, the worker may take a queued job the drop had not reached yet: that is its
        # job to run (result_ttl=0 deletes it when done), so wait until it is idle again.
        wait_for(lambda: not queue.started_job_registry.count, timeout=10, what="the worker idle")
        assert worker.poll() is None, "the worker still runs"
    assert queue.count == 0
    left = Job.fetch_many([scheduling.job_id_for(pk) for pk in queued_pks], connection=redis)
    assert left == [None] * QUEUED


pytestmark = pytest.mark.django_db
