"""A claimed delivery's end: its outcome written once, its follow-ups run, its failure sorted.

Written out like the claim (row SQL), because it runs once per delivery; `failed` decides
between `invalid` (no retry can help), `dead` with one alert, and `failed` for RQ's retry.
"""

import functools
import json
import logging
import re
from datetime import datetime

from django.db import DataError, connection
from django.utils import timezone

from automation.intake.handling import Outcome
from automation.intake.sources import load_body
from automation.models import Delivery
from automation.platform import alerts, notes, rows
from automation.platform.exceptions import InvalidPayload, PermanentError
from automation.platform.masking import mask_secrets

logger = logging.getLogger(__name__)


# Outcomes whose note is an error: it goes to `last_error`; every other note is the `result`.
_ERROR_STATUSES = frozenset({Delivery.Status.FAILED, Delivery.Status.DEAD, Delivery.Status.INVALID})


def failed(delivery: Delivery, err: Exception, *, final_attempt: bool) -> str:
    """Record why the claimed delivery failed (`record_failure`); re-raises what RQ should retry.

    An `invalid` body and a permanent error end here; anything else is raised again (also on
    the final attempt, after the row went `dead`), so RQ's Retry runs the job again or gives up.
    """
    status = record_failure(delivery, err, final_attempt=final_attempt)
    if status == Delivery.Status.INVALID or isinstance(err, PermanentError):
        return status
    raise err


def record_failure(delivery: Delivery, err: Exception, *, final_attempt: bool) -> str:
    """Sort a claimed delivery's failure and record it; the status it got.

    A body its topic's parser refuses, or whose text cannot be stored, is `invalid`: no retry
    can change it. A permanent error, or any error on the final attempt, is `dead` with one
    alert; anything else is `failed`, for its retry. A batch's follower is recorded here too,
    as its own job would have (`final_attempt=False`: its own job still has its attempts).
    """
    if isinstance(err, InvalidPayload):
        return finish(delivery, Outcome(Delivery.Status.INVALID, str(err)))
    if isinstance(err, PermanentError):
        give_up(delivery, err)
        return Delivery.Status.DEAD
    unstorable = unstorable_text(delivery, err)
    if unstorable:
        return finish(delivery, Outcome(Delivery.Status.INVALID, unstorable))
    if final_attempt:
        give_up(delivery, err)
        return Delivery.Status.DEAD
    return finish(delivery, Outcome(Delivery.Status.FAILED, describe(err)))


def follow_up(delivery: Delivery, outcome: Outcome) -> None:
    """Run the committed outcome's follow-ups (`handling.FollowUp`), whatever they are.

    If one fails (Redis down), the row goes back to `processing` so the error is recorded like
    a handler's: `failed` and retried, the retry running what is missing.
    """
    try:
        for step in outcome.follow_ups:
            step.run()
    except Exception:
        Delivery.objects.filter(pk=delivery.pk, status=outcome.status).update(
            status=Delivery.Status.PROCESSING
        )
        raise


def finish(delivery: Delivery, outcome: Outcome) -> str:
    """Record the final status: once per delivery, so written out like the claim."""
    rows.execute(_finish_sql(), _finish_params(delivery, outcome, timezone.now()))
    return outcome.status


def finish_all(finished: list[tuple[Delivery, Outcome]]) -> None:
    """`finish` for a batch's deliveries, in one round trip."""
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


def give_up(delivery: Delivery, err: BaseException) -> None:
    """Mark the delivery dead; the row count makes sure only one process sends the alert."""
    error = describe(err)
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
    return f"body holds {what} in {path}, which cannot be stored or sent: {describe(err)}"[:2000]


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


def describe(err: BaseException) -> str:
    """The error as stored and shown: a vendor's echo of a token never reaches a page."""
    return storable(mask_secrets(f"{type(err).__name__}: {err}")[:2000])
