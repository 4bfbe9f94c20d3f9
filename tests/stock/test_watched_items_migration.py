"""Watched items become watched products without changing any current decision (the data
migration)."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from automation.stock import apply, facts, rule

BEFORE = [("automation", "0005_perf")]
AFTER = [("automation", "0006_catalogue")]
T = datetime(2026, 11, 26, 15, 0, tzinfo=UTC)


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def old_apps(transactional_db, django_user_model):
    apps = migrate(BEFORE)
    yield apps
    migrate(migrate_latest())


def migrate_latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes("automation")


def test_every_watched_item_keeps_its_decision(old_apps, django_user_model):
    WatchedItem = old_apps.get_model("automation", "WatchedItem")
    StockLevel = old_apps.get_model("automation", "StockLevel")
    User = old_apps.get_model("auth", "User")
    owner = User.objects.create(username="inhaberin")
    # Given: a sold-out candle, one in stock at two locations with a threshold, one shared by
    # two ad groups, one without any stock known, one switched off, one paused by hand
    rows = [
        (808950810, "555", "Winterzauber", 0, True, ""),
        (4711, "556", "Sternenglanz", 5, True, ""),
        (4712, "557", "Nordlicht", 0, True, ""),
        (4712, "558", "Nordlicht (Marke)", 0, True, ""),
        (4713, "559", "Friesennacht", 0, True, ""),
        (4714, "560", "Alt", 0, False, ""),
        (4715, "561", "Kerzenset", 0, True, "PAUSED"),
    ]
    for item, ad_group, label, pause_at, enabled, manual in rows:
        WatchedItem.objects.create(
            inventory_item_id=item,
            ad_group_id=ad_group,
            customer_id="1234567890",
            label=label,
            pause_at=pause_at,
            enabled=enabled,
            manual_status=manual,
            manual_reason="Fotoshooting" if manual else "",
            manual_by=owner if manual else None,
            manual_at=T if manual else None,
        )
    levels = [(808950810, 1, 0), (4711, 1, 3), (4711, 2, 4), (4712, 1, 2), (4715, 1, 9)]
    for item, location, available in levels:
        StockLevel.objects.create(
            inventory_item_id=item, location_id=location, available=available, updated_at=T
        )
    old_decisions = {
        ad_group: _old_rule(StockLevel, item, pause_at, manual)
        for item, ad_group, _, pause_at, enabled, manual in rows
        if enabled
    }

    migrate(AFTER)

    from automation.models import AdGroup, WatchedProduct

    assert WatchedProduct.objects.count() == 6  # Nordlicht's two rows are one product
    nordlicht = WatchedProduct.objects.get(label="Nordlicht")
    assert sorted(nordlicht.ad_groups.values_list("ad_group_id", flat=True)) == ["557", "558"]
    assert WatchedProduct.objects.get(label="Alt").enabled is False
    held = AdGroup.objects.get(ad_group_id="561")
    assert (held.manual_status, held.manual_reason, held.manual_by.username) == (
        "PAUSED",
        "Fotoshooting",
        "inhaberin",
    )
    groups = apply.ad_group_rows(("1234567890", ad_group) for ad_group in old_decisions)
    found = facts.ad_group_facts(groups, T)
    new_decisions = {
        group.ad_group_id: rule.ad_group_status(found[group.key]).status for group in groups
    }
    assert new_decisions == old_decisions
    # and deciding the products again from their stored levels changes nothing either
    products = list(WatchedProduct.objects.filter(enabled=True))
    apply.evaluate(products)
    found = facts.ad_group_facts(apply.ad_group_rows(g.key for g in groups), T)
    assert {g.ad_group_id: rule.ad_group_status(found[g.key]).status for g in groups} == (
        old_decisions
    )


def _old_rule(StockLevel, item: int, pause_at: int, manual: str) -> str | None:
    """What the watched item's rule said: a manual state wins; no tracked stock: nothing;
    paused at or below the threshold over every location."""
    if manual:
        return manual
    found = list(StockLevel.objects.filter(inventory_item_id=item, available__isnull=False))
    if not found:
        return None
    return "PAUSED" if sum(level.available for level in found) <= pause_at else "ENABLED"
