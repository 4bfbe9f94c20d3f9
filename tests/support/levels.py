"""A stock level through the stock's one path, outside a delivery: as a webhook's job applies it."""

from django.db import transaction

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import Delivery
from automation.stock import apply


def apply_level(
    update: LevelUpdate, *, source: str, delivery: Delivery | None = None
) -> apply.AppliedLevels:
    """One level stored and its ad groups settled, in its own transaction; an Ads error is
    raised once the level has committed, as a delivery's retry would be."""
    with transaction.atomic():
        applied = apply.apply_levels([update], source=source, deliveries=[delivery])
    errors = apply.errors_of(applied.settled or [])
    if errors:
        raise apply.combined(errors)
    return applied
