"""The durable inbox: store each delivery once, claim it, hand it to its topic's handler.

A delivery's way through the intake, one module a step: `record` stores it and enqueues its
job; the job's `process` claims the row, gives a topic worked off in batches to `backlog`,
parses the body (`sources.events`), runs the handler (`handling.HANDLERS`, which never calls
back here) and leaves the outcome to `outcomes`, in the handler's transaction. `sweeper`
resumes what no job will finish.
"""

import functools
import logging
from collections.abc import Iterable
from typing import NamedTuple

from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from automation.intake import backlog, outcomes
from automation.intake.handling import BATCH_HANDLERS, HANDLERS, Outcome
from automation.intake.sources import Incoming
from automation.intake.sources.events import parse_event
from automation.models import Delivery
from automation.platform import notes, rows, scheduling
from automation.platform.db_timeouts import intake_transaction
from automation.platform.log_context import delivery_context
from automation.platform.queues import job_is_alive

logger = logging.getLogger(__name__)


# --- intake --------------------------------------------------------------------------------


class Recorded(NamedTuple):
    """What the intake answers with: the stored row's id and status."""

    pk: int
    status: str


def record(incoming: Incoming) -> Recorded | None:
    """Store a verified delivery; None when it duplicates a stored one (counted on that row).

    The database's unique constraint decides duplicates, so concurrent copies make one row.
    The job is enqueued only after the row has committed.
    """
    invalid = bool(incoming.invalid_reason)
    status = Delivery.Status.INVALID if invalid else Delivery.Status.RECEIVED
    # Short lock and statement limits (db_timeouts): a locked table costs the sender a fast 503
    # and a retry, not a worker held past its 5 s. Inside a caller's transaction a savepoint
    # keeps an IntegrityError from poisoning it.
    try:
        with intake_transaction():
            pk = rows.insert(
                Delivery,
                source=incoming.source,
                shop_domain=incoming.shop_domain,
                topic=incoming.topic,
                webhook_id=incoming.webhook_id,
                event_id=incoming.event_id,
                triggered_at=incoming.triggered_at,
                api_version=incoming.api_version,
                body=incoming.body,
                status=status,
                last_error=incoming.invalid_reason,
                processed_at=timezone.now() if invalid else None,
            )
            if not invalid:
                transaction.on_commit(lambda: scheduling.enqueue_delivery(pk))
    except IntegrityError:
        if not _count_duplicate(incoming):
            raise
        return None
    return Recorded(pk, status)


def _count_duplicate(incoming: Incoming) -> bool:
    if incoming.source == Delivery.Source.STRIPE:
        if not incoming.event_id:
            return False
        same = Delivery.objects.filter(source=incoming.source, event_id=incoming.event_id)
    else:
        same = Delivery.objects.filter(
            source=incoming.source,
            shop_domain=incoming.shop_domain,
            topic=incoming.topic,
            webhook_id=incoming.webhook_id,
        )
    with intake_transaction():
        return same.update(duplicate_count=F("duplicate_count") + 1) > 0


def replay(delivery_ids: Iterable[int]) -> int:
    """Send failed, dead or refused deliveries through the same path again; returns how many.

    The merchant's replay is a fresh start: the row's attempts begin at 0 again.

    A refused one (a `shop/redact` whose uninstall could not be confirmed) is checked anew.
    """
    replayed = 0
    for delivery_id in delivery_ids:
        with transaction.atomic():
            taken = Delivery.objects.filter(
                pk=delivery_id,
                status__in=[Delivery.Status.FAILED, Delivery.Status.DEAD, Delivery.Status.REFUSED],
            ).update(status=Delivery.Status.RECEIVED, last_error="", attempts=0)
            if taken:
                replayed += 1
                transaction.on_commit(lambda pk=delivery_id: _enqueue_unless_alive(pk))
    return replayed


def _enqueue_unless_alive(delivery_id: int) -> None:
    if not job_is_alive(scheduling.job_id_for(delivery_id)):
        scheduling.enqueue_delivery(delivery_id)


# --- processing ------------------------------------------------------------------------------


def claim(delivery_id: int) -> Delivery | None:
    """Move a `received` or `failed` row to `processing` and load it, in one statement.

    The conditional UPDATE decides who processes the delivery; RETURNING spares the worker a
    second round trip to load the row it just claimed. Every claim counts an attempt, and a row
    whose attempts are spent is not claimed again (the sweeper ends it `dead`).
    """
    claimed = rows.execute(
        _claim_sql(),
        [
            Delivery.Status.PROCESSING,
            connection.ops.adapt_datetimefield_value(timezone.now()),
            delivery_id,
            Delivery.Status.RECEIVED,
            Delivery.Status.FAILED,
            scheduling.delivery_attempt_limit(),
        ],
    )
    return rows.load(Delivery, claimed[0]) if claimed else None


# Hand-written SQL. Needed for correctness: the conditional UPDATE (only from `received` or
# `failed`) is the claim, and its row count decides which worker processes the delivery; the ORM's
# update() cannot return the row. Kept for speed too: RETURNING plus `rows.load()` costs half of
# the same statement through `Delivery.objects.raw()` (docs/PERFORMANCE.md, "Hand-written claim
# statement").
@functools.cache
def _claim_sql() -> str:
    return (
        f"UPDATE {connection.ops.quote_name(Delivery._meta.db_table)} "  # noqa: S608 (model names)
        "SET status = %s, attempts = attempts + 1, processing_started_at = %s "
        "WHERE id = %s AND status IN (%s, %s) AND attempts < %s "
        f"RETURNING {rows.columns(Delivery)}"
    )


def process(delivery_id: int, *, final_attempt: bool) -> str:
    """Process one delivery with its id on every log line of the way."""
    with delivery_context(delivery_id):
        return _process(delivery_id, final_attempt=final_attempt)


def _process(delivery_id: int, *, final_attempt: bool) -> str:
    """Claim the delivery, run its handler, record the outcome; returns the final status.

    Safe to run twice: only a `received` or `failed` row can be claimed. A failure propagates
    so RQ retries, until the final attempt or a permanent error makes the row `dead` with one
    alert (`outcomes.failed`).
    """
    delivery = claim(delivery_id)
    if delivery is None:
        # Debug, not info: in a burst most jobs find their delivery taken by another's batch.
        logger.debug("delivery %s not claimable (already taken or finished)", delivery_id)
        return "skipped"
    # The row's count decides too: RQ's retries start afresh when a job is enqueued again.
    final_attempt = final_attempt or delivery.attempts >= scheduling.delivery_attempt_limit()
    batching = BATCH_HANDLERS.get((delivery.source, delivery.topic))
    if batching is not None:
        return backlog.process(delivery, batching, final_attempt=final_attempt)
    handler = HANDLERS.get((delivery.source, delivery.topic))
    if handler is None:
        return outcomes.finish(
            delivery,
            Outcome(Delivery.Status.IGNORED, notes.note("no_handler", topic=delivery.topic)),
        )
    try:
        # Parsed once, here: the handler gets the typed event (automation/intake/sources/events.py).
        event = parse_event(delivery.source, delivery.topic, delivery.body, delivery.shop_domain)
        # Effects and outcome commit together: one commit per delivery, and no window in which
        # the effects are committed but the row still says `processing`. An outcome's `retry`
        # is raised once its effects committed; follow-ups are scheduled after the commit.
        with transaction.atomic():
            outcome = handler(event, delivery)
            if outcome.retry is None:
                outcomes.finish(delivery, outcome)
        if outcome.retry is not None:
            raise outcome.retry
        outcomes.follow_up(delivery, outcome)
    except Exception as err:
        return outcomes.failed(delivery, err, final_attempt=final_attempt)
    return outcome.status
