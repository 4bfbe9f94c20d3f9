"""The durable inbox: store each delivery once, dispatch it by (source, topic), record its Outcome.

Enqueues go through `scheduling`; handlers are found in `handling.HANDLERS` (a topic whose
backlog is worked off in batches: `handling.BATCH_HANDLERS`) and never call back here: the
inbox records what they return, in their transaction, and runs their follow-ups after it.
"""

import functools
import json
import logging
import re
import time
from collections.abc import Hashable, Iterable
from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.db import DataError, IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext_lazy

from automation.intake.handling import BATCH_HANDLERS, HANDLERS, Batching, Outcome
from automation.intake.sources import Incoming, load_body
from automation.intake.sources.events import Event, parse_event
from automation.models import Delivery
from automation.platform import alerts, notes, queues, rows, scheduling
from automation.platform.db_timeouts import intake_transaction
from automation.platform.exceptions import InvalidPayload, PermanentError
from automation.platform.log_context import delivery_context
from automation.platform.masking import mask_secrets
from automation.platform.queues import LIVE_JOB_STATES, default_queue, job_is_alive, job_states

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


# How many rows of each kind one sweep looks at (one Redis round trip per kind): a backlog is
# worked off a batch a minute instead of one run holding a worker for long.
SWEEP_BATCH = 500


def _job_is_alive(delivery_id: int) -> bool:
    return job_is_alive(scheduling.job_id_for(delivery_id))


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
    if not _job_is_alive(delivery_id):
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
    alert (`_failed`).
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
        return _process_batch(delivery, batching, final_attempt=final_attempt)
    handler = HANDLERS.get((delivery.source, delivery.topic))
    if handler is None:
        return _finish(
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
                _finish(delivery, outcome)
        if outcome.retry is not None:
            raise outcome.retry
        _follow_up(delivery, outcome)
    except Exception as err:
        return _failed(delivery, err, final_attempt=final_attempt)
    return outcome.status


def _failed(delivery: Delivery, err: Exception, *, final_attempt: bool) -> str:
    """Record why the claimed delivery failed; re-raises what RQ should retry.

    A body its topic's parser refuses, or whose text cannot be stored, is `invalid`: no retry
    can change it. A permanent error, or any error on the final attempt, is `dead` with one
    alert; anything else is `failed` and raised again, so RQ's Retry runs the job again.
    """
    if isinstance(err, InvalidPayload):
        return _finish(delivery, Outcome(Delivery.Status.INVALID, str(err)))
    if isinstance(err, PermanentError):
        _give_up(delivery, err)
        return Delivery.Status.DEAD
    unstorable = unstorable_text(delivery, err)
    if unstorable:
        return _finish(delivery, Outcome(Delivery.Status.INVALID, unstorable))
    if final_attempt:
        _give_up(delivery, err)
    else:
        _finish(delivery, Outcome(Delivery.Status.FAILED, _describe(err)))
    raise err


# --- a backlog worked off in one job -----------------------------------------------------------


def _process_batch(leader: Delivery, batching: Batching, *, final_attempt: bool) -> str:
    """Process the claimed delivery (the leader) together with the backlog of its topic (the
    followers, whose own jobs find them taken); the leader's status, its failure as `_process`.

    A follower that failed is left `failed` for its own job or the sweeper (`_resume_failed`);
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
                _follower_failed(delivery, err)
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
                outcomes = batching.handler(group)
                if any(outcome.follow_ups for outcome in outcomes):
                    raise TypeError("a batch handler's outcomes cannot have follow-ups")
                finished = zip(group, outcomes, strict=True)  # one outcome per delivery
                _finish_all([(d, o) for (_, d), o in finished if o.retry is None])
        except Exception as err:
            outcomes = [Outcome(Delivery.Status.FAILED, retry=err)] * len(group)
        for (_, delivery), outcome in zip(group, outcomes, strict=True):
            if delivery is leader:
                leader_status, leader_error = outcome.status, outcome.retry
                continue
            if outcome.retry is not None:
                _follower_failed(delivery, outcome.retry)
            unfinished.discard(delivery.pk)
    if leader_error is not None:
        return _failed(leader, leader_error, final_attempt=final_attempt)
    return leader_status


def _time_for_another_group(deadline: float | None) -> bool:
    """Whether one more Ads call fits before the job's Ads deadline (always outside a job)."""
    return deadline is None or time.monotonic() + settings.ADS_CALL_TIMEOUT < deadline


def _follower_failed(delivery: Delivery, err: Exception) -> None:
    """A follower's failure, recorded as its own job would: `invalid` for a body no retry can
    change, `dead` with one alert for a permanent error, else `failed` for its retry."""
    if isinstance(err, InvalidPayload):
        _finish(delivery, Outcome(Delivery.Status.INVALID, str(err)))
    elif isinstance(err, PermanentError):
        _give_up(delivery, err)
    elif unstorable := unstorable_text(delivery, err):
        _finish(delivery, Outcome(Delivery.Status.INVALID, unstorable))
    else:
        _finish(delivery, Outcome(Delivery.Status.FAILED, _describe(err)))


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


def _follow_up(delivery: Delivery, outcome: Outcome) -> None:
    """Run the committed outcome's follow-ups (`handling.FollowUp`), whatever they are.

    If one fails (Redis down), the row goes back to `processing` so the error is recorded like
    a handler's: `failed` and retried, the retry running what is missing.
    """
    try:
        for follow_up in outcome.follow_ups:
            follow_up.run()
    except Exception:
        Delivery.objects.filter(pk=delivery.pk, status=outcome.status).update(
            status=Delivery.Status.PROCESSING
        )
        raise


# Outcomes whose note is an error: it goes to `last_error`; every other note is the `result`.
_ERROR_STATUSES = frozenset({Delivery.Status.FAILED, Delivery.Status.DEAD, Delivery.Status.INVALID})


def _finish(delivery: Delivery, outcome: Outcome) -> str:
    """Record the final status: once per delivery, so written out like the claim (the ORM's
    UPDATE compiled anew each time cost a tenth of an inventory job)."""
    rows.execute(_finish_sql(), _finish_params(delivery, outcome, timezone.now()))
    return outcome.status


def _finish_all(finished: list[tuple[Delivery, Outcome]]) -> None:
    """`_finish` for a batch's deliveries, in one round trip."""
    now = timezone.now()
    rows.execute_many(
        _finish_sql(), [_finish_params(delivery, outcome, now) for delivery, outcome in finished]
    )


def _finish_params(delivery: Delivery, outcome: Outcome, now: datetime) -> list:
    note = storable(notes.text_of(outcome.note))
    error = outcome.status in _ERROR_STATUSES
    coded = None if error else notes.stored_of(outcome.note)
    return [
        outcome.status,
        "" if error else note,
        None if coded is None else json.dumps(coded),
        note if error else "",
        connection.ops.adapt_datetimefield_value(now),
        delivery.pk,
    ]


# Hand-written SQL, kept for speed only (`Delivery.objects.filter(pk=...).update(...)` would be
# as correct): the ORM compiles the UPDATE anew per job and binds client-side, so PostgreSQL
# plans it anew too (docs/PERFORMANCE.md, "Hand-written outcome statement").
@functools.cache
def _finish_sql() -> str:
    # The note is bound as JSON text: PostgreSQL takes it into jsonb by a cast, SQLite stores
    # JSON as text already.
    note = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    return (
        f"UPDATE {connection.ops.quote_name(Delivery._meta.db_table)} "  # noqa: S608 (model names)
        f"SET status = %s, result = %s, result_note = {note}, last_error = %s, processed_at = %s "
        "WHERE id = %s"
    )


def _give_up(delivery: Delivery, err: BaseException) -> None:
    """Mark the delivery dead; the row count makes sure only one process sends the alert."""
    error = _describe(err)
    went_dead = Delivery.objects.filter(pk=delivery.pk, status=Delivery.Status.PROCESSING).update(
        status=Delivery.Status.DEAD, last_error=error, processed_at=timezone.now()
    )
    logger.error("delivery %s is dead: %s", delivery.pk, error)
    if went_dead:
        delivery.refresh_from_db()
        alerts.delivery_dead(delivery)


# Text no PostgreSQL text or jsonb value and no UTF-8 mail can carry: NUL, and UTF-16
# surrogates, which a JSON string can hold only as a `\uD800`-style escape without its pair.
_UNSTORABLE_CHAR = re.compile("[\x00\ud800-\udfff]")
# What storing or sending such text raises. psycopg 3 refuses NUL in a text parameter with
# psycopg.DataError ("PostgreSQL text fields cannot contain NUL (0x00) bytes"; psycopg/types/
# string.py, _StrDumper.dump) and PostgreSQL refuses `\u0000` or a lone surrogate inside jsonb with
# SQLSTATE 22P05 / 22P02 (https://www.postgresql.org/docs/current/datatype-json.html); Django
# re-raises both as django.db.DataError. A lone surrogate in a text parameter or a mail fails
# earlier, in Python's UTF-8 encoder: UnicodeEncodeError ("surrogates not allowed").
_UNSTORABLE_ERRORS = (DataError, UnicodeEncodeError)


def unstorable_text(delivery: Delivery, err: BaseException) -> str:
    """Why the handler's failure is the body's text, which no retry can change; "" otherwise.

    Classified after the handler failed, not by scanning every body before it: a NUL in a
    field no handler keeps (a note, say) must not cost an order or a stock change. Only the
    errors storing or encoding such text raises count, and only when the body really holds
    such a character, so a DataError of another cause still fails and is retried as before.
    """
    if not isinstance(err, _UNSTORABLE_ERRORS) or delivery.body is None:
        return ""
    try:
        payload = load_body(delivery.body)
    except (ValueError, RecursionError):
        return ""
    found = _first_unstorable_string(payload)
    if found is None:
        return ""
    path, char = found
    what = "a NUL character" if char == "\x00" else f"a lone surrogate (U+{ord(char):04X})"
    return f"body holds {what} in {path}, which cannot be stored or sent: {_describe(err)}"[:2000]


def _first_unstorable_string(payload: object) -> tuple[str, str] | None:
    """(JSONPath-like location, character) of the first key or string value holding one."""
    stack: list[tuple[str, object]] = [("$", payload)]
    while stack:  # a loop, not recursion: bodies may nest as deep as the JSON parser allows
        path, item = stack.pop()
        if isinstance(item, str):
            match = _UNSTORABLE_CHAR.search(item)
            if match:
                return path, match.group()
        elif isinstance(item, dict):
            for key, value in reversed(item.items()):
                match = _UNSTORABLE_CHAR.search(key)
                if match:
                    return f"{path} (a key)", match.group()
                stack.append((f"{path}.{key}", value))
        elif isinstance(item, list):
            stack.extend(
                (f"{path}[{index}]", value) for index, value in reversed(list(enumerate(item)))
            )
    return None


def storable(text: str) -> str:
    """The text with NUL and lone surrogates written as `\\u0000` escapes, so the note or error
    that quotes a hostile value can itself be stored (and shown in the admin)."""
    return _UNSTORABLE_CHAR.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _describe(err: BaseException) -> str:
    """The error as stored and shown: a vendor's echo of a token never reaches a page."""
    return storable(mask_secrets(f"{type(err).__name__}: {err}")[:2000])
