"""One Redis client per process, shared by every enqueue; what RQ still holds of a job; and
how long the running job has left.

Building a client per request cost more than the enqueue itself (docs/PERFORMANCE.md, "One
Redis client per process"), and django-rq's `get_queue()` builds one per call unless given one.
Short socket timeouts keep a hanging Redis from pushing an answer past Shopify's 5 s limit.
"""

import functools
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import django_rq
from django.conf import settings
from redis import Redis
from rq import Queue, get_current_job
from rq.job import Job, JobStatus


@functools.cache
def _client_for(url: str) -> Redis:
    return Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2, health_check_interval=30)


def redis_client() -> Redis:
    """The process-wide client for `REDIS_URL` (read at call time, so tests can override it)."""
    return _client_for(settings.REDIS_URL)


def default_queue() -> Queue:
    """The queue jobs go to; enqueues happen immediately (callers defer them to commit)."""
    return _queue_for(settings.REDIS_URL)


@functools.cache
def _queue_for(url: str) -> Queue:
    return django_rq.get_queue("default", connection=_client_for(url), commit_mode="auto")


# A job in one of these states will still run (or runs now); any other state, or no job at all
# (Redis lost it, or its result expired), means nothing in Redis will run it any more.
LIVE_JOB_STATES = frozenset(
    {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.SCHEDULED, JobStatus.DEFERRED}
)


def job_states(job_ids: Iterable[str]) -> dict[str, JobStatus | None]:
    """Each job's RQ status as stored in its hash, None when Redis holds no such job.

    One round trip for the whole batch (RQ's `Job.fetch_many` pipelines the reads), so the
    sweeper can look at hundreds of rows a minute.
    """
    ids = list(job_ids)
    if not ids:
        return {}
    jobs = Job.fetch_many(ids, connection=redis_client())
    return {
        job_id: (job.get_status(refresh=False) if job is not None else None)
        for job_id, job in zip(ids, jobs, strict=True)
    }


def job_is_alive(job_id: str) -> bool:
    """True while RQ will still run the job: queued, scheduled (a retry), deferred or started."""
    return job_states([job_id])[job_id] in LIVE_JOB_STATES


def job_deadline() -> float | None:
    """The time.monotonic() by which this RQ job's Ads calls must end; None outside a job.

    The job's own RQ timeout (DELIVERY_JOB_TIMEOUT for a delivery) minus ADS_JOB_MARGIN for
    the work after the last call, counted from the job's start: one budget for all ad groups
    of the job, so RQ never kills a job in the middle of its own retries.
    """
    job = get_current_job()
    if job is None or job.started_at is None:
        return None
    timeout = job.timeout or Queue.DEFAULT_TIMEOUT
    if timeout < 0:  # RQ's "no timeout"
        return None
    ends_at = job.started_at + timedelta(seconds=timeout - settings.ADS_JOB_MARGIN)
    return time.monotonic() + (ends_at - datetime.now(UTC)).total_seconds()
