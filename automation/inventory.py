"""Stock levels with a stale guard, and the pause/enable decision for watched ad groups.

Every decision goes through the item's locked watched rows: a webhook's level, the nightly
reconciliation's, a save in the admin or the API (decided again from the stored levels), and
the merchant's manual pause, enable and release. A manual state wins over the stock until the
merchant releases it (`decisions.status_to_set`).
"""

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from django.db import connection, transaction
from django.db.models import Count, Sum
from django.utils import timezone
from django.utils.translation import gettext

from . import ads, decisions, rows
from .exceptions import PermanentAdsError, TransientAdsError
from .handling import Outcome, handles_batch
from .models import AdGroupAction, Delivery, StockLevel, WatchedItem
from .sources.shopify_inventory import LevelUpdate

Status = Delivery.Status


def store_level(update: LevelUpdate) -> int | None:
    """Write the level unless a later one is stored; returns the item's new total, else None.

    One conditional upsert decides, atomically in the database: a row for (item, location) is
    inserted, or updated only when its stored `updated_at` is not later than the new one. An
    equal timestamp passes on purpose, so the retry of a message whose Ads call failed is not
    mistaken for a stale one. The same statement returns the item's total available (the other
    locations' stored levels plus this one), so the decision needs no second query.
    """
    return store_levels([update])[0]


def store_levels(updates: Sequence[LevelUpdate]) -> list[int | None]:
    """`store_level` for each update, in order, sent together; each one's total or None.

    Each upsert runs after the ones before it, so its total counts them: the same answers as
    storing the levels one by one.
    """
    adapt = connection.ops.adapt_datetimefield_value
    now = adapt(timezone.now())
    results = rows.execute_many(
        _store_level_sql(),
        [
            [
                update.inventory_item_id,
                update.location_id,
                update.available,
                adapt(update.updated_at),
                now,
                update.inventory_item_id,
                update.location_id,
            ]
            for update in updates
        ],
    )
    return [int(found[0][0]) if found else None for found in results]


# Hand-written SQL. Needed for correctness: the conditional upsert (ON CONFLICT … DO UPDATE …
# WHERE stored updated_at <= new) is the stale guard, decided atomically by the database; the ORM
# has no conditional upsert. Kept for speed: RETURNING the item's total instead of a separate SUM
# query (`total_available()`): one round trip instead of two, 0.55 M instead of 1.79 M
# instructions per stored level, client and PostgreSQL together (bench/handwritten.py, callgrind;
# docs/PERFORMANCE.md "Findings").
@functools.cache
def _store_level_sql() -> str:
    table = connection.ops.quote_name(StockLevel._meta.db_table)
    return f"""
        INSERT INTO {table} (inventory_item_id, location_id, available, updated_at, recorded_at)
        VALUES (%s, %s, %s, %s, %s)
        ON CONFLICT (inventory_item_id, location_id) DO UPDATE
        SET available = EXCLUDED.available,
            updated_at = EXCLUDED.updated_at,
            recorded_at = EXCLUDED.recorded_at
        WHERE {table}.updated_at <= EXCLUDED.updated_at
        RETURNING COALESCE({table}.available, 0) + COALESCE((
            SELECT SUM(others.available) FROM {table} others
            WHERE others.inventory_item_id = %s AND others.location_id <> %s
        ), 0)
        """  # noqa: S608  (identifiers from the model, values as parameters)


def total_available(inventory_item_id: int) -> int:
    """Sum of the newest known `available` over the item's locations (untracked ones count 0)."""
    total = StockLevel.objects.filter(inventory_item_id=inventory_item_id).aggregate(
        total=Sum("available")
    )["total"]
    return total or 0


def desired_status(total: int, pause_at: int) -> str:
    """Paused at or below the threshold, enabled above it."""
    return AdGroupAction.Status.PAUSED if total <= pause_at else AdGroupAction.Status.ENABLED


@dataclass
class Applied:
    """What pushing levels through the guard did: the outcome, each ad group's status and what
    became of it (sent, unchanged, held), and the Ads errors (raised once the levels committed).

    `totals` has one entry per update, in order: the item's total after that update was
    stored, None where a later level was already stored (stale). `decided_by` is the index of
    the update whose total set the ad groups (the last tracked one stored), None when none was.
    """

    outcome: Outcome
    statuses: dict[tuple[str, str], str] = field(default_factory=dict)
    results: dict[tuple[str, str], str] = field(default_factory=dict)
    errors: list[Exception] = field(default_factory=list)
    totals: list[int | None] = field(default_factory=list)
    decided_by: int | None = None


def apply_levels(
    inventory_item_id: int,
    updates: Sequence[LevelUpdate],
    *,
    source: str,
    delivery: Delivery | None = None,
) -> Applied:
    """Store one item's levels through the guard and set every watched ad group accordingly.

    The item's watched rows stay locked from the guard to the last Ads call, so concurrent
    messages for one item take turns: the last to run sees the newest levels, and its Ads call
    is the last one. Ads errors are collected per ad group and raised after the levels commit;
    the retry passes the guard with its equal timestamp and sets the statuses again. (Deliveries
    run `_apply_locked` inside the inbox's transaction instead: `handle_inventory_levels`.)
    """
    with transaction.atomic():
        applied = _apply_locked(inventory_item_id, updates, source, [delivery] * len(updates))
    if applied.errors:
        raise _combined(applied.errors)
    return applied


def _apply_locked(
    inventory_item_id: int,
    updates: Sequence[LevelUpdate],
    source: str,
    deliveries: Sequence[Delivery | None],
) -> Applied:
    """The ad groups are set once, from the total of the last tracked level stored: the
    earlier levels' statuses would be outdated before they were sent. `deliveries[i]` brought
    `updates[i]`; the one that decided is logged with the Ads actions."""
    rows = lock_watched(inventory_item_id)
    if not rows:
        return Applied(Outcome(Status.IGNORED, f"inventory item {inventory_item_id} not watched"))
    totals = store_levels(updates)
    written = [index for index, total in enumerate(totals) if total is not None]
    if not written:
        newest = max(update.updated_at for update in updates)
        stale = f"newer levels are stored; this one is from {newest.isoformat()}"
        return Applied(Outcome(Status.STALE, stale), totals=totals)
    tracked = [index for index in written if updates[index].available is not None]
    if not tracked:
        return Applied(
            Outcome(Status.IGNORED, "stock not tracked (available is null): stored, no action"),
            totals=totals,
        )
    # The last tracked level decides, with the total its statement saw (every earlier write
    # included), as if each level came alone: an untracked one is stored but never acts.
    last = tracked[-1]
    total = totals[last]
    applied = Applied(
        Outcome(Status.DONE, f"total available {total}"), totals=totals, decided_by=last
    )
    held: list[str] = []
    notes: list[str] = []
    for row in rows:
        status, result, error = _set_status(row, total, source=source, delivery=deliveries[last])
        applied.statuses[(row.customer_id, row.ad_group_id)] = status
        if row.manual_status:
            held.append(f"{row.label} ({row.manual_status.lower()})")
        if error is not None:
            applied.errors.append(error)
            continue
        applied.results[(row.customer_id, row.ad_group_id)] = result
        if result in (ads.UNCHANGED, AdGroupAction.Result.HELD):
            notes.append(f"ad group {row.ad_group_id} {status} {result}")
    if held:
        notes.append(f"manual state holds: {', '.join(held)}")
    if notes:
        applied.outcome = replace(
            applied.outcome, note=f"{applied.outcome.note}; {'; '.join(notes)}"
        )
    return applied


def _set_status(
    row: "Watched",
    total: int | None,
    *,
    source: str,
    delivery: Delivery | None = None,
    prefix: str = "",
) -> tuple[str, str, Exception | None]:
    """Decide one locked row's status from the total and its manual state, send it, log it.

    Returns the status, what `ads.apply_status` did with it (sent, unchanged, held; "" after
    an error) and the Ads error (logged as a failed action), if any; `total` may be
    None (no stock known) only while a manual state holds. While one holds, that state is sent
    again with the stock as the reason: the stock is recorded but does not move the ad group,
    and a manual call that failed is repeated.
    """
    status = decisions.status_to_set(desired_status(total or 0, row.pause_at), row.manual_status)
    # Reasons are written in the active language (the shop's, in the worker: LANGUAGE_CODE).
    if row.manual_status:
        stock = (
            gettext("stock unknown")
            if total is None
            else gettext("%(total)s available") % {"total": total}
        )
        reason = gettext("%(label)s: manual state holds (%(state)s); %(stock)s") % {
            "label": row.label,
            "state": AdGroupAction.Status(row.manual_status).label,
            "stock": stock,
        }
    else:
        comparison = "≤" if status == AdGroupAction.Status.PAUSED else ">"
        reason = gettext("%(label)s: %(total)s available %(comparison)s %(pause_at)s") % {
            "label": row.label,
            "total": total,
            "comparison": comparison,
            "pause_at": row.pause_at,
        }
    try:
        result = ads.apply_status(
            customer_id=row.customer_id,
            ad_group_id=row.ad_group_id,
            status=status,
            reason=f"{prefix}{reason}",
            source=source,
            delivery=delivery,
        )
    except (TransientAdsError, PermanentAdsError) as err:
        return status, "", err
    return status, result, None


class Watched(NamedTuple):
    """The fields of a watched row that the decision and the Ads call need."""

    label: str
    customer_id: str
    ad_group_id: str
    pause_at: int
    manual_status: str


def lock_watched(inventory_item_id: int) -> list[Watched]:
    """The item's enabled watched rows, locked (`FOR UPDATE`) until the transaction ends.

    Once per inventory job: written out, because the ORM compiles this one statement anew for
    every delivery (measured next to `_lock_watched_sql`).
    """
    found = rows.execute(
        _lock_watched_sql(connection.features.has_select_for_update), [inventory_item_id]
    )
    return [Watched(*row) for row in found]


# Hand-written SQL, kept for speed only (`select_for_update()…values_list()` would be as
# correct): 0.47 M instead of 2.04 M instructions per lock, BEGIN and COMMIT included, client and
# PostgreSQL together (bench/handwritten.py, callgrind; docs/PERFORMANCE.md "Findings").
@functools.cache
def _lock_watched_sql(for_update: bool) -> str:
    def column(name: str) -> str:
        return rows.column(WatchedItem, name)

    sql = (
        f"SELECT {', '.join(column(name) for name in Watched._fields)} "  # noqa: S608 (model names)
        f"FROM {rows.table(WatchedItem)} "
        f"WHERE {column('inventory_item_id')} = %s AND {column('enabled')} "
        f"ORDER BY {column('id')}"
    )
    return f"{sql} FOR UPDATE" if for_update else sql


def apply_level(update: LevelUpdate, *, source: str, delivery: Delivery | None = None) -> Outcome:
    """One location's level through the same path, in its own transaction."""
    return apply_levels(
        update.inventory_item_id, [update], source=source, delivery=delivery
    ).outcome


def _combined(errors: list[Exception]) -> Exception:
    """Transient if any is transient (a retry may fix it), otherwise permanent."""
    message = "; ".join(str(err) for err in errors)
    if any(isinstance(err, TransientAdsError) for err in errors):
        return TransientAdsError(message)
    return errors[0] if len(errors) == 1 else PermanentAdsError(message)


@handles_batch("shopify", "inventory_levels/update", key=lambda update: update.inventory_item_id)
def handle_inventory_levels(batch: Sequence[tuple[LevelUpdate, Delivery]]) -> list[Outcome]:
    """Shopify's `inventory_levels/update` for one item: one delivery, or the ones a burst
    queued up, in the order received; one Outcome each.

    Runs inside the inbox's transaction, which also records the outcomes: one commit. Each
    level passes the stale guard as if it came alone; the ad groups are set once, from the
    total after the last level stored, and that delivery's outcome carries what was sent and,
    on an Ads error, the `retry` (raised once the levels have committed). The other stored
    levels name it: their own status would have been outdated before it was sent.
    """
    updates = [update for update, _ in batch]
    deliveries = [delivery for _, delivery in batch]
    applied = _apply_locked(
        updates[0].inventory_item_id, updates, AdGroupAction.Source.WEBHOOK, deliveries
    )
    if not applied.totals:  # not watched: nothing stored
        return [applied.outcome] * len(batch)
    decided_by = applied.decided_by
    outcomes = []
    for index, update in enumerate(updates):
        total = applied.totals[index]
        if index == decided_by:
            outcome = applied.outcome
            if applied.errors:
                outcome = replace(outcome, retry=_combined(applied.errors))
        elif total is None:
            outcome = Outcome(
                Status.STALE,
                f"newer levels are stored; this one is from {update.updated_at.isoformat()}",
            )
        elif update.available is None or decided_by is None:
            outcome = Outcome(
                Status.IGNORED, "stock not tracked (available is null): stored, no action"
            )
        else:
            outcome = Outcome(
                Status.DONE,
                f"total available {total}; ad groups set with delivery "
                f"{deliveries[decided_by].pk}, the last stock level of its batch",
            )
        outcomes.append(outcome)
    return outcomes


# --- decided again from the stored levels: a save, a manual pause/enable, a release ----------


@dataclass(frozen=True)
class Decision:
    """What deciding one watched row again did, for the message the merchant reads.

    `status` is the status sent (None when nothing was sent: the row is switched off or no
    stock is known yet), `total` the stored stock (None when unknown), `held` the manual state
    that decided instead of the stock, `error` the Ads error (the action is logged as failed).
    """

    label: str
    status: str | None
    total: int | None
    pause_at: int
    held: str = ""
    watched: bool = True
    error: str = ""


def stored_total(inventory_item_id: int) -> int | None:
    """The stored total over the item's locations; None while no tracked level is stored."""
    found = StockLevel.objects.filter(inventory_item_id=inventory_item_id).aggregate(
        total=Sum("available"), tracked=Count("available")
    )
    return found["total"] if found["tracked"] else None


def _locked_row(item: WatchedItem) -> Watched | None:
    """The item's row among its locked watched rows (None when it is switched off)."""
    for row in lock_watched(item.inventory_item_id):
        if (row.customer_id, row.ad_group_id) == (item.customer_id, item.ad_group_id):
            return row
    return None


def _decide_locked(
    item: WatchedItem, row: Watched | None, *, source: str, prefix: str = ""
) -> Decision:
    if row is None:
        return Decision(item.label, None, None, item.pause_at, item.manual_status, watched=False)
    total = stored_total(item.inventory_item_id)
    if total is None and not row.manual_status:
        return Decision(row.label, None, None, row.pause_at)
    status, _result, error = _set_status(row, total, source=source, prefix=prefix)
    return Decision(
        row.label, status, total, row.pause_at, row.manual_status, error=str(error or "")
    )


def redecide(item: WatchedItem, *, source: str = AdGroupAction.Source.ADMIN) -> Decision:
    """Decide a saved row again from the stored levels, at once, as a webhook would.

    Called after the save has committed, so an Ads error cannot undo the save: it is logged
    as a failed action and returned for the message; the nightly reconciliation sets it again.
    """
    with transaction.atomic():
        return _decide_locked(item, _locked_row(item), source=source)


def set_manual(item: WatchedItem, status: str, reason: str, user) -> Decision:
    """Pause or enable the ad group by hand; the state holds until `release_manual`."""
    name = user.get_username() if user is not None else "?"
    with transaction.atomic():
        row = _locked_row(item)  # lock first, like a webhook, so the two take turns
        now = timezone.now()
        WatchedItem.objects.filter(pk=item.pk).update(
            manual_status=status, manual_reason=reason, manual_by=user, manual_at=now
        )
        item.manual_status, item.manual_reason, item.manual_by, item.manual_at = (
            status,
            reason,
            user,
            now,
        )
        if row is None:
            return Decision(item.label, None, None, item.pause_at, status, watched=False)
        verb = "paused" if status == AdGroupAction.Status.PAUSED else "enabled"
        return _decide_locked(
            item,
            row._replace(manual_status=status),
            source=AdGroupAction.Source.MANUAL,
            prefix=f"manually {verb} by {name}: {reason}. ",
        )


def release_manual(item: WatchedItem, user) -> Decision:
    """End the manual state: the stock decides again, from the stored levels, at once."""
    name = user.get_username() if user is not None else "?"
    with transaction.atomic():
        row = _locked_row(item)
        WatchedItem.objects.filter(pk=item.pk).update(
            manual_status="", manual_reason="", manual_by=None, manual_at=None
        )
        item.manual_status, item.manual_reason, item.manual_by, item.manual_at = "", "", None, None
        return _decide_locked(
            item,
            row._replace(manual_status="") if row is not None else None,
            source=AdGroupAction.Source.MANUAL,
            prefix=f"manual control released by {name}. ",
        )
