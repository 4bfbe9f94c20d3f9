"""Stock levels with a stale guard, and the pause/enable decision for watched ad groups."""

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from . import ads, rows
from .exceptions import PermanentAdsError, TransientAdsError
from .handling import Outcome, handles
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
    adapt = connection.ops.adapt_datetimefield_value
    total = rows.execute(
        _store_level_sql(),
        [
            update.inventory_item_id,
            update.location_id,
            update.available,
            adapt(update.updated_at),
            adapt(timezone.now()),
            update.inventory_item_id,
            update.location_id,
        ],
    )
    return int(total[0][0]) if total else None


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
    """What pushing levels through the guard did: the outcome, each ad group's status, and the
    Ads errors (raised once the levels have committed)."""

    outcome: Outcome
    statuses: dict[tuple[str, str], str] = field(default_factory=dict)
    errors: list[Exception] = field(default_factory=list)


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
    the retry passes the guard with its equal timestamp and sets the statuses again. (A
    delivery's handler runs `_apply_locked` inside the inbox's transaction instead.)
    """
    with transaction.atomic():
        applied = _apply_locked(inventory_item_id, updates, source, delivery)
    if applied.errors:
        raise _combined(applied.errors)
    return applied


def _apply_locked(
    inventory_item_id: int,
    updates: Sequence[LevelUpdate],
    source: str,
    delivery: Delivery | None,
) -> Applied:
    rows = lock_watched(inventory_item_id)
    if not rows:
        return Applied(Outcome(Status.IGNORED, f"inventory item {inventory_item_id} not watched"))
    stored = [(update, store_level(update)) for update in updates]
    written = [(update, total) for update, total in stored if total is not None]
    if not written:
        newest = max(update.updated_at for update in updates)
        return Applied(
            Outcome(Status.STALE, f"newer levels are stored; this one is from {newest.isoformat()}")
        )
    if all(update.available is None for update, _ in written):
        return Applied(
            Outcome(Status.IGNORED, "stock not tracked (available is null): stored, no action")
        )
    total = written[-1][1]  # the last write's statement saw every earlier one
    applied = Applied(Outcome(Status.DONE, f"total available {total}"))
    for row in rows:
        status = desired_status(total, row.pause_at)
        applied.statuses[(row.customer_id, row.ad_group_id)] = status
        comparison = "≤" if status == AdGroupAction.Status.PAUSED else ">"
        try:
            ads.apply_status(
                customer_id=row.customer_id,
                ad_group_id=row.ad_group_id,
                status=status,
                reason=f"{row.label}: {total} available {comparison} {row.pause_at}",
                source=source,
                delivery=delivery,
            )
        except (TransientAdsError, PermanentAdsError) as err:
            applied.errors.append(err)
    return applied


class Watched(NamedTuple):
    """The fields of a watched row that the decision and the Ads call need."""

    label: str
    customer_id: str
    ad_group_id: str
    pause_at: int


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
    quote = connection.ops.quote_name
    meta = WatchedItem._meta

    def column(name: str) -> str:
        return quote(meta.get_field(name).column)

    sql = (
        f"SELECT {', '.join(column(name) for name in Watched._fields)} "  # noqa: S608 (model names)
        f"FROM {quote(meta.db_table)} "
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


@handles("shopify", "inventory_levels/update")
def handle_inventory_level(update: LevelUpdate, delivery: Delivery) -> Outcome:
    """Shopify's `inventory_levels/update`: one location's new stock for one item."""
    # Runs inside the inbox's transaction, which also records the outcome: one commit. Ads
    # errors come back as the outcome's `retry`, raised once the level has committed.
    applied = _apply_locked(
        update.inventory_item_id, [update], AdGroupAction.Source.WEBHOOK, delivery
    )
    if applied.errors:
        return replace(applied.outcome, retry=_combined(applied.errors))
    return applied.outcome
