"""The sweeper: resume deliveries that no live job will finish (Redis lost it, a worker died).

Runs every minute from the cron; it ends a row whose attempts are spent `dead` with one alert.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext_lazy

from automation.models import Delivery
from automation.platform import alerts, scheduling
from automation.platform.queues import LIVE_JOB_STATES, default_queue, job_states

logger = logging.getLogger(__name__)


# How many rows of each kind one sweep looks at (one Redis round trip per kind): a backlog is
# worked off a batch a minute instead of one run holding a worker for long.
SWEEP_BATCH = 500


def _without_live_job(delivery_ids: list[int]) -> list[int]:
    """The ids whose job RQ no longer holds alive (Redis lost it, or the worker died)."""
    states = job_states(scheduling.job_id_for(pk) for pk in delivery_ids)
    return [pk for pk in delivery_ids if states[scheduling.job_id_for(pk)] not in LIVE_JOB_STATES]


def sweep() -> int:
    """Resume deliveries no live job will finish; returns how many were enqueued or ended.

    `received` rows: Redis was down at intake, or a worker died mid-job. `failed` rows: their
    RQ retry lived only in Redis, which lost it (restarted empty); without this they would
    stay `failed` for good, neither retried nor `dead` nor alerted.
    """
    # Hand back jobs whose worker died (RQ would otherwise wait for its next maintenance).
    default_queue().started_job_registry.cleanup()
    now = timezone.now()
    _fail_abandoned(now)
    settled_before = now - timedelta(seconds=settings.DELIVERY_SWEEP_AFTER)
    waiting = Delivery.objects.filter(
        status=Delivery.Status.RECEIVED, received_at__lt=settled_before
    ).order_by("received_at")  # the (status, received_at) index
    candidates = dict(waiting.values_list("pk", "attempts")[:SWEEP_BATCH])
    limit = scheduling.delivery_attempt_limit()
    enqueued = 0
    for pk in _without_live_job(list(candidates)):
        attempts = candidates[pk]
        if attempts >= limit:  # handed back after its last claim: no attempt is left
            enqueued += _dead_at_limit(pk, Delivery.Status.RECEIVED, attempts)
        else:  # a handed-back row keeps the attempts it has spent
            enqueued += scheduling.enqueue_delivery(pk, attempts_made=attempts)
    resumed = _resume_failed(now, settled_before)
    if enqueued or resumed:
        logger.info(
            "sweeper enqueued %s waiting and resumed %s failed deliveries", enqueued, resumed
        )
    return enqueued + resumed


# What a row left `processing` by a job that never finished says: the worker was killed (out of
# memory, a deploy, a host gone) or the job ran past its timeout. Shown in the admin.
STOPPED_MID_JOB = gettext_lazy(
    "the worker stopped while processing this delivery (killed, out of memory or past its timeout)"
)


def _fail_abandoned(now: datetime) -> None:
    """Rows `processing` past their lease: their job's worker died without recording anything.

    Each was claimed, so its attempt counts: below the limit the row goes `failed` and
    `_resume_failed` gives it the retries it has left, after their waits; at the limit it goes
    `dead` with one alert. Handing it back as `received` with a fresh retry table let a body
    that kills its worker (one too large for its memory) be claimed again without end.
    """
    stuck_before = now - timedelta(seconds=settings.DELIVERY_JOB_TIMEOUT * 2)
    abandoned = Delivery.objects.filter(
        status=Delivery.Status.PROCESSING, processing_started_at__lt=stuck_before
    )
    limit = scheduling.delivery_attempt_limit()
    # Failed when its attempt started (the latest moment known alive): its retry wait counts
    # from there, so a short one has passed already and the same sweep resumes it.
    abandoned.filter(attempts__lt=limit).update(
        status=Delivery.Status.FAILED,
        last_error=str(STOPPED_MID_JOB),
        processed_at=F("processing_started_at"),
    )
    for pk, attempts in abandoned.values_list("pk", "attempts")[:SWEEP_BATCH]:
        _dead_at_limit(pk, Delivery.Status.PROCESSING, attempts, error=str(STOPPED_MID_JOB))


def _resume_failed(now: datetime, settled_before: datetime) -> int:
    """Give `failed` rows whose retry Redis lost the attempts they have left, when due.

    The row counts its attempts (the claim adds one), so the retry table tells what is left:
    the lost retry runs once its interval after the failure has passed, with the remaining
    retries; a row whose attempts are spent goes `dead` with one alert, as on the last try.
    """
    failed = Delivery.objects.filter(status=Delivery.Status.FAILED, processed_at__lt=settled_before)
    candidates = list(
        failed.order_by("processed_at").values_list("pk", "attempts", "processed_at")[:SWEEP_BATCH]
    )
    lost = set(_without_live_job([pk for pk, _, _ in candidates]))
    intervals = list(settings.DELIVERY_RETRY_INTERVALS)
    resumed = 0
    for pk, attempts, failed_at in candidates:
        if pk not in lost:
            continue
        if attempts >= scheduling.delivery_attempt_limit():
            resumed += _dead_at_limit(pk, Delivery.Status.FAILED, attempts)
        elif now >= failed_at + timedelta(seconds=intervals[max(attempts, 1) - 1]):
            resumed += scheduling.enqueue_delivery(pk, attempts_made=attempts)
    return resumed


def _dead_at_limit(delivery_id: int, status: str, attempts: int, *, error: str = "") -> bool:
    """Every attempt was made: `dead`, and the row count lets only one sweeper alert."""
    changes: dict = {"status": Delivery.Status.DEAD, "processed_at": timezone.now()}
    if error:
        changes["last_error"] = error
    went_dead = Delivery.objects.filter(pk=delivery_id, status=status, attempts=attempts).update(
        **changes
    )
    if went_dead:
        delivery = Delivery.objects.get(pk=delivery_id)
        logger.error(
            "delivery %s is dead after %s attempts: %s", delivery_id, attempts, delivery.last_error
        )
        alerts.delivery_dead(delivery)
    return bool(went_dead)
