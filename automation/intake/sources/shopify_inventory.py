"""Shopify's `inventory_levels/update`: one location's stock of one item at a moment."""

from dataclasses import dataclass
from datetime import datetime

from automation.intake.sources.fields import json_object, positive_int, timestamp
from automation.platform.exceptions import InvalidPayload

_INT = 2**31 - 1


@dataclass(frozen=True)
class LevelUpdate:
    """One location's stock at a moment, as Shopify reported it."""

    inventory_item_id: int
    location_id: int
    available: int | None
    updated_at: datetime


def parse_level(payload: object) -> LevelUpdate:
    """Validate an `inventory_levels/update` body; anything unusable raises InvalidPayload."""
    payload = json_object(payload)
    item = positive_int(payload, "inventory_item_id")
    location = positive_int(payload, "location_id")
    available = payload.get("available", "missing")
    if available is not None and (type(available) is not int or not -_INT <= available <= _INT):
        raise InvalidPayload("available must be an integer or null")
    updated_at = timestamp(payload.get("updated_at"), "updated_at", required=True)
    return LevelUpdate(item, location, available, updated_at)
