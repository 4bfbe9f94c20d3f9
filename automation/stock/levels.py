"""Stock levels with a stale guard: the newest known `available` per (inventory item, location).

A level is written only when no later one is stored, decided atomically by the database, so a
late or repeated message never overrides a newer one. Levels go away when Shopify disconnects
the location from the item (`inventory_levels/disconnect`) or stops reporting it at night.
"""

import functools
from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db import connection
from django.utils import timezone

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import StockLevel
from automation.platform import rows


def store_levels(updates: Sequence[LevelUpdate]) -> list[bool]:
    """Write each level unless a later one is stored; whether each was written, in order.

    One conditional upsert per level: a row for (item, location) is inserted, or updated only
    when its stored `updated_at` is not later than the new one. An equal timestamp passes on
    purpose, so the retry of a message whose Ads call failed is not mistaken for a stale one.
    The statements are sent together and run in order.
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
            ]
            for update in updates
        ],
    )
    return [bool(found) for found in results]


# Hand-written SQL, needed for correctness: the conditional upsert (ON CONFLICT … DO UPDATE …
# WHERE stored updated_at <= new) is the stale guard, decided atomically by the database; the
# ORM has no conditional upsert (docs/PERFORMANCE.md, "Stale-guard upsert").
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
        RETURNING 1
        """  # noqa: S608  (identifiers from the model, values as parameters)


def remove_level(inventory_item_id: int, location_id: int) -> bool:
    """Forget one location's level of an item (Shopify disconnected them); whether one was."""
    deleted, _ = StockLevel.objects.filter(
        inventory_item_id=inventory_item_id, location_id=location_id
    ).delete()
    return bool(deleted)


def remove_unreported(
    inventory_item_id: int, reported: Iterable[int], read_at: datetime
) -> list[int]:
    """Forget the item's levels at locations Shopify no longer reports; the locations removed.

    Only levels stored before the read: one a webhook stored since (a location connected
    after the read) is newer than what the read could know.
    """
    stale = StockLevel.objects.filter(
        inventory_item_id=inventory_item_id, recorded_at__lte=read_at
    ).exclude(location_id__in=list(reported))
    gone = sorted(stale.values_list("location_id", flat=True))
    if gone:
        stale.filter(location_id__in=gone).delete()
    return gone


def stored_levels(item_ids: Iterable[int]) -> dict[tuple[int, int], int | None]:
    """The stored `available` per (item, location)."""
    return {
        (item, location): available
        for item, location, available in StockLevel.objects.filter(
            inventory_item_id__in=list(item_ids)
        ).values_list("inventory_item_id", "location_id", "available")
    }
