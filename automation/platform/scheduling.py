"""Every enqueue: deliveries, reminder evaluations and promotion edges, with their job ids and
retry tables.

Jobs are enqueued by dotted path ("automation.jobs.process_delivery"), so nothing below the entry
points imports them: RQ stores the path and the worker imports it. Each job id names its work
(a delivery, a checkout version, a promotion edge), so a second enqueue replaces the first and the
sweeper and catch-ups can ask Redis whether a job is still alive. Each capability retries on its
own table: DELIVERY_RETRY_INTERVALS, REMINDER_RETRY_INTERVALS, PROMOTION_RETRY_INTERVALS.
It imports no capability: the capabilities import it (a checkout's follow-up, a promotion's save).
"""

import logging
from datetime import datetime

from django.conf import settings
from redis.exceptions import RedisError
from rq import Callback, Retry
from rq.exceptions import NoSuchJobError
from rq.job import Job

from automation.models import CheckoutState, Promotion
from automation.platform.queues import default_queue, redis_client

logger = logging.getLogger(__name__)

# The RQ entry points, by dotted path (automation/jobs.py).
PROCESS_DELIVERY = "automation.jobs.process_delivery"
EVALUATE_CHECKOUT = "automation.jobs.evaluate_checkout"
RUN_PROMOTION_EDGE = "automation.jobs.run_promotion_edge"
# Their failure callbacks: RQ runs them after each failed attempt; they alert after the last.
EVALUATION_GAVE_UP = Callback("automation.jobs.evaluation_gave_up")
PROMOTION_EDGE_GAVE_UP = Callback("automation.jobs.promotion_edge_gave_up")


def _retry(intervals: list[int]) -> Retry | None:
    """RQ's Retry for the waits left; None when no retry is left (the next run is the last)."""
    return Retry(max=len(intervals), interval=intervals) if intervals else None


# --- deliveries ------------------------------------------------------------------------------


def job_id_for(delivery_id: int) -> str:
    """One RQ job id per delivery, so the sweeper can see whether a job is still alive."""
    return f"delivery-{delivery_id}"


def delivery_attempt_limit() -> int:
    """How many times a delivery may be claimed in all: the first attempt and one per retry wait.

    The row's `attempts` counts every claim (a job's, a batch's, one a dead worker left
    behind), so the limit holds even when RQ's own retry count starts afresh.
    """
    return 1 + len(settings.DELIVERY_RETRY_INTERVALS)


def enqueue_delivery(delivery_id: int, *, attempts_made: int = 0) -> bool:
    """Put the delivery's job on the queue; on a Redis outage the row waits for the sweeper.

    `attempts_made` > 0 resumes a delivery whose RQ retries were lost (Redis restarted empty, a
    worker died mid-job): the job gets only the retries (and their intervals) that were left,
    so the row still goes `dead` after `delivery_attempt_limit()` attempts in all.
    """
    intervals = list(settings.DELIVERY_RETRY_INTERVALS)[attempts_made:]
    queue = default_queue()
    try:
        # One pipeline: RQ would otherwise spend a separate round trip registering the queue.
        with queue.connection.pipeline() as pipe:
            queue.enqueue_call(
                PROCESS_DELIVERY,
                args=(delivery_id,),
                job_id=job_id_for(delivery_id),
                # No retries left: the job's next run is its last (jobs.process_delivery).
                retry=_retry(intervals),
                timeout=settings.DELIVERY_JOB_TIMEOUT,
                result_ttl=0,  # the outcome lives on the delivery row
                description=f"process delivery {delivery_id}",
                pipeline=pipe,
            )
            pipe.execute()
    except RedisError as err:
        logger.warning("delivery %s stays received, Redis unavailable: %s", delivery_id, err)
        return False
    return True


# --- reminder evaluations --------------------------------------------------------------------


def evaluation_job_id(checkout: CheckoutState) -> str:
    """One evaluation job per checkout version: repeated messages schedule it only once."""
    version = int(checkout.updated_at.timestamp() * 1_000_000)
    return f"reminder-{checkout.pk}-{version}"


def schedule_evaluation(checkout: CheckoutState, *, at: datetime) -> datetime:
    """Ask RQ's scheduler to evaluate this version at `at` (the caller knows when it is due)."""
    default_queue().enqueue_at(
        at,
        EVALUATE_CHECKOUT,
        checkout.pk,
        checkout.updated_at.isoformat(),
        job_id=evaluation_job_id(checkout),
        retry=_retry(list(settings.REMINDER_RETRY_INTERVALS)),
        on_failure=EVALUATION_GAVE_UP,
        description=f"evaluate reminder for checkout {checkout.pk}",
    )
    return at


# --- promotion edges -------------------------------------------------------------------------

# A promotion's edges, each with its own job: its start and its end.
PROMOTION_EDGES = ("start", "end")


def promotion_job_id(promotion_id: int, edge: str) -> str:
    """One job per promotion edge: rescheduling replaces it."""
    return f"promotion-{promotion_id}-{edge}"


def cancel_promotion(promotion_id: int) -> None:
    """Remove the promotion's scheduled jobs (deleting or rescheduling it)."""
    queue = default_queue()
    for edge in PROMOTION_EDGES:
        try:
            job = Job.fetch(promotion_job_id(promotion_id, edge), connection=redis_client())
        except NoSuchJobError:
            continue
        queue.scheduled_job_registry.remove(job)
        job.delete()


def schedule_promotion(promotion: Promotion) -> None:
    """(Re)schedule the edges that have not run yet at their exact instants."""
    cancel_promotion(promotion.pk)
    queue = default_queue()
    intervals = list(settings.PROMOTION_RETRY_INTERVALS)
    for edge, instant, ran in (
        ("start", promotion.start_at, promotion.started_at),
        ("end", promotion.end_at, promotion.ended_at),
    ):
        if instant is None or ran is not None:
            continue
        queue.enqueue_at(
            instant,
            RUN_PROMOTION_EDGE,
            promotion.pk,
            edge,
            instant.isoformat(),
            job_id=promotion_job_id(promotion.pk, edge),
            retry=_retry(intervals),
            on_failure=PROMOTION_EDGE_GAVE_UP,
            description=f"promotion {promotion.pk} {edge}",
        )
