"""A topic's backlog worked off in one job: the claimed delivery leads, the waiting ones follow.

For topics whose deliveries supersede each other (`handling.BATCH_HANDLERS`); each group of one
key runs in its own transaction with its outcomes.
"""

import functools
import logging
import time
from collections.abc import Hashable

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from automation.intake import outcomes
from automation.intake.handling import Batching, Outcome
from automation.intake.sources.events import Event, parse_event
from automation.models import Delivery
from automation.platform import queues, rows, scheduling

logger = logging.getLogger(__name__)


def process(leader: Delivery, batching: Batching, *, final_attempt: bool) -> str:
    """Process the claimed delivery (the leader) together with the backlog of its topic (the
    followers, whose own jobs find them taken); the leader's status, its failure as its own
    job's (`outcomes.failed`).

    A follower that failed is left `failed` for its own job or the sweeper;
    one the job did not reach goes back to `received`, its attempt counted, so a follower that
    stops the job is not taken along for ever.
    """
    followers = claim_backlog(leader)
    unfinished = {delivery.pk for delivery in followers}
    try:
        return _run_batch(leader, followers, batching, unfinished, final_attempt=final_attempt)
    finally:
        if unfinished:
            _hand_back(unfinished)


def _run_batch(
    leader: Delivery,
    followers: list[Delivery],
    batching: Batching,
    unfinished: set[int],
    *,
    final_attempt: bool,
) -> str:
    groups: dict[Hashable, list[tuple[Event, Delivery]]] = {}
    leader_key: Hashable = None
    leader_status = ""
    leader_error: Exception | None = None
    for delivery in sorted([leader, *followers], key=lambda delivery: delivery.pk):
        try:
            event = parse_event(
                delivery.source, delivery.topic, delivery.body, delivery.shop_domain
            )
        except Exception as err:
            if delivery is leader:
                leader_status, leader_error = Delivery.Status.FAILED, err
            else:
                outcomes.record_failure(delivery, err, final_attempt=False)
                unfinished.discard(delivery.pk)
            continue
        key = batching.key(event)
        groups.setdefault(key, []).append((event, delivery))
        if delivery is leader:
            leader_key = key
    # Each group (one key, e.g. one inventory item) runs in its own transaction with its
    # outcomes, so no job holds two groups' locks at once: the leader's group first, then the
    # others in key order while the job's time allows one more Ads call.
    deadline = queues.job_deadline()
    order = sorted(groups, key=lambda key: (key != leader_key, key))
    for key in order:
        group = groups[key]
        if key != leader_key and not _time_for_another_group(deadline):
            break
        try:
            with transaction.atomic():
                results = batching.handler(group)
                if any(outcome.follow_ups for outcome in results):
                    raise TypeError("a batch handler's outcomes cannot have follow-ups")
                finished = zip(group, results, strict=True)  # one outcome per delivery
                outcomes.finish_all([(d, o) for (_, d), o in finished if o.retry is None])
        except Exception as err:
            results = [Outcome(Delivery.Status.FAILED, retry=err)] * len(group)
        for (_, delivery), outcome in zip(group, results, strict=True):
            if delivery is leader:
                leader_status, leader_error = outcome.status, outcome.retry
                continue
            if outcome.retry is not None:
                outcomes.record_failure(delivery, outcome.retry, final_attempt=False)
            unfinished.discard(delivery.pk)
    if leader_error is not None:
        return outcomes.failed(leader, leader_error, final_attempt=final_attempt)
    return leader_status


def _time_for_another_group(deadline: float | None) -> bool:
    """Whether one more Ads call fits before the job's Ads deadline (always outside a job)."""
    return deadline is None or time.monotonic() + settings.ADS_CALL_TIMEOUT < deadline


def _hand_back(delivery_ids: set[int]) -> None:
    """Return followers this job claimed but did not finish to `received`; the claim counted.

    Best effort: when even this fails (the database went away), the rows stay `processing`
    and the sweeper hands them back after 2 × DELIVERY_JOB_TIMEOUT.
    """
    try:
        Delivery.objects.filter(pk__in=delivery_ids, status=Delivery.Status.PROCESSING).update(
            status=Delivery.Status.RECEIVED, processing_started_at=None
        )
    except Exception:
        logger.exception(
            "%s deliveries of a batch stay processing for the sweeper", len(delivery_ids)
        )
    else:
        logger.info("%s deliveries of a batch handed back unfinished", len(delivery_ids))


def claim_backlog(leader: Delivery) -> list[Delivery]:
    """Claim the deliveries of the leader's shop and topic that wait for their job.

    Up to DELIVERY_BATCH_SIZE − 1, oldest first, and only while their stored bodies and the
    leader's stay within DELIVERY_BATCH_MAX_BYTES: the sizes are read from the rows
    (`length`), not by loading the bodies. On PostgreSQL rows another job is claiming
    are skipped (`SKIP LOCKED`), so two jobs never wait for each other here. Each claimed row
    counts an attempt, as its own job's claim would have; a row with only its last attempt
    left is not taken along, so that attempt is its own job's.
    """
    limit = settings.DELIVERY_BATCH_SIZE - 1
    budget = settings.DELIVERY_BATCH_MAX_BYTES - len(leader.body or b"")
    if limit < 1 or budget < 1:
        return []
    claimed = rows.execute(
        _claim_backlog_sql(),
        [
            leader.source,
            leader.shop_domain,
            leader.topic,
            leader.pk,
            scheduling.delivery_attempt_limit() - 1,
            limit,
            budget,
            Delivery.Status.PROCESSING,
            connection.ops.adapt_datetimefield_value(timezone.now()),
        ],
    )
    return [rows.load(Delivery, row) for row in claimed]


# Hand-written SQL. Needed for correctness like the claim: the conditional UPDATE decides which
# job takes each row (the ORM's update() cannot limit, skip locked rows or return them). The
# status is written as a literal, not a parameter: a prepared statement's generic plan then still
# knows `received` rows are few and takes the status index, instead of walking the primary key
# from the oldest of millions of finished rows.
@functools.cache
def _claim_backlog_sql() -> str:
    table = connection.ops.quote_name(Delivery._meta.db_table)
    skip_locked = (
        " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    )
    # The candidates are locked first, then summed: PostgreSQL refuses FOR UPDATE together
    # with a window function in one SELECT. length() of a bytea (PostgreSQL's byteaoctetlen, as
    # octet_length(); SQLite counts a blob's bytes too) reads the stored size
    # without detoasting the value (byteaoctetlen calls toast_raw_datum_size,
    # src/backend/utils/adt/varlena.c), so no body is read before it is claimed.
    return (
        "WITH candidates AS ("  # noqa: S608 (model names; the status is one of the model's choices)
        f"SELECT id, COALESCE(length(body), 0) AS size FROM {table} "
        f"WHERE status = '{Delivery.Status.RECEIVED.value}' "
        "AND source = %s AND shop_domain = %s AND topic = %s AND id <> %s AND attempts < %s "
        f"ORDER BY id LIMIT %s{skip_locked}), "
        "within AS (SELECT id FROM (SELECT id, SUM(size) OVER (ORDER BY id) AS running "
        "FROM candidates) AS summed WHERE running <= %s) "
        f"UPDATE {table} "
        "SET status = %s, attempts = attempts + 1, processing_started_at = %s "
        "WHERE id IN (SELECT id FROM within) "
        f"RETURNING {rows.columns(Delivery)}"
    )
