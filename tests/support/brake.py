"""A burst of sell-outs that the safety brake holds in part, through the stock's one path."""

from datetime import datetime, timedelta

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import AdGroupAction, BrakeSettings, HeldChange
from tests.support.levels import apply_level
from tests.support.watching import watch

STORE = 24826418
MORNING = datetime.fromisoformat("2026-11-28T10:00:00+01:00")
FIRST_ITEM = 5000
FIRST_AD_GROUP = 800


def sell_out_burst(watched: int = 10, sold_out: int = 5) -> list[HeldChange]:
    """`watched` products (ad groups "Kerze n Suche"), all in stock; then `sold_out` of them
    sell out within a minute. Returns the held changes, oldest first."""
    config = BrakeSettings.load()
    for n in range(watched):
        watch(FIRST_ITEM + n, str(FIRST_AD_GROUP + n), label=f"Kerze {n}", name=f"Kerze {n} Suche")
        apply_level(LevelUpdate(FIRST_ITEM + n, STORE, 5, MORNING), source="webhook")
    assert config.allowed_pauses(watched) < sold_out
    for n in range(sold_out):
        zero = LevelUpdate(FIRST_ITEM + n, STORE, 0, MORNING + timedelta(seconds=4 * n + 60))
        apply_level(zero, source=AdGroupAction.Source.WEBHOOK)
    held = list(HeldChange.objects.filter(resolution="open").order_by("held_at", "pk"))
    assert held
    return held
