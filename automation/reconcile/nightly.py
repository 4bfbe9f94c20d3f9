"""The nightly pass over Shopify's true state, pushed through the very same stock path.

It refreshes the catalogue the stock rule reads (the locations and whether they fulfil online
orders, each watched product's status and variants, the product of an item known only by its
inventory item id), then reads every counted variant's levels and applies them through the
stale guard, dropping levels at locations Shopify no longer reports. Because the stale guard
ignores older data and setting a status is idempotent, a reconciliation can never make things
worse; every ad group whose status it changes is a webhook that was missed or late. It then
reads every watched ad group's real status from Google Ads and repairs drift
(`stock.drift`). A pause the safety brake holds is neither pushed nor repaired, only reported.
The run also heals webhook subscriptions Shopify deleted (unless the app's shopify.app.toml
owns them), deletes expired claims and drops raw bodies past the retention period.
"""

import logging
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import AdGroupAction, AdGroupState, Delivery, ReconcileRun, WatchedProduct
from automation.platform import alerts, claims, display_names
from automation.platform.exceptions import PermanentAdsError, TransientAdsError
from automation.platform.masking import mask_secrets
from automation.shopify import access as shopify_access
from automation.shopify import subscriptions
from automation.shopify.queries import Level, ShopifyAdmin
from automation.shopify.transport import ShopifyAdminError
from automation.stock import apply, catalogue, drift, facts, levels

logger = logging.getLogger(__name__)

OVERDUE_AFTER = timedelta(hours=26)
"""A nightly run is missing once the last one is this old (a day plus two hours of slack): the
overdue check runs one then, and /healthz reports the reconciliation as failing."""


# --- entry points --------------------------------------------------------------------------


def run_nightly(now: datetime | None = None) -> ReconcileRun | None:
    """Run once per local date: the row unique per date stops a second cron or a restart."""
    now = now or timezone.now()
    try:
        with transaction.atomic():
            run = ReconcileRun.objects.create(
                local_date=timezone.localdate(now),
                trigger=ReconcileRun.Trigger.NIGHTLY,
                started_at=now,
            )
    except IntegrityError:
        logger.info("nightly reconciliation for %s already ran", timezone.localdate(now))
        return None
    return execute(run)


def run_if_overdue(now: datetime | None = None) -> ReconcileRun | None:
    """Run now when the last successful run is older than 26 hours (cron was down at 03:00)."""
    now = now or timezone.now()
    last = (
        ReconcileRun.objects.filter(
            status__in=[ReconcileRun.Status.OK, ReconcileRun.Status.CORRECTED]
        )
        .order_by("-started_at")
        .first()
    )
    if last is not None and now - last.started_at < OVERDUE_AFTER:
        return None
    return run_nightly(now)


def run_now() -> ReconcileRun:
    """A manual run (`manage.py reconcile`), not limited to one per date."""
    run = ReconcileRun.objects.create(
        local_date=timezone.localdate(),
        trigger=ReconcileRun.Trigger.MANUAL,
        started_at=timezone.now(),
    )
    return execute(run)


def execute(run: ReconcileRun) -> ReconcileRun:
    """Do the whole pass, record it, and alert when something was corrected or failed."""
    started = time.monotonic()
    toml = shopify_access.webhooks_managed_by_toml()
    client = shopify_access.admin_client()
    if client is None:
        run.status = ReconcileRun.Status.NOT_CONFIGURED
    else:
        try:
            reconcile_stock(run, client)
        except ShopifyAdminError as err:
            run.errors.append(f"stock: {err}")
        repair_drift(run)
        if not toml:  # app-scoped subscriptions are invisible to us: "healing" would double them
            try:
                run.subscriptions_created = subscriptions.heal_subscriptions(client)
            except ShopifyAdminError as err:
                run.errors.append(f"webhook subscriptions: {err}")
        if run.errors:
            run.status = ReconcileRun.Status.ERRORS
        elif run.corrections:
            run.status = ReconcileRun.Status.CORRECTED
        else:
            run.status = ReconcileRun.Status.OK
    run.claims_deleted = claims.delete_expired()
    run.bodies_dropped = drop_old_bodies()
    run.finished_at = timezone.now()
    run.duration_seconds = round(time.monotonic() - started, 3)
    name_entries(run)
    run.errors = [mask_secrets(error) for error in run.errors]  # shown on pages and mailed
    run.save()
    if run.corrections or run.errors or run.subscriptions_created or run.held:
        alerts.send(
            f"[Elbkerzen] Nightly reconciliation {run.local_date}: {run.get_status_display()}",
            summary(run),
        )
    return run


# --- the parts -----------------------------------------------------------------------------


def reconcile_stock(run: ReconcileRun, client: ShopifyAdmin) -> None:
    """Refresh the catalogue, read every counted variant's levels and apply them."""
    watched = list(WatchedProduct.objects.filter(enabled=True).order_by("pk"))
    catalogue.record_locations(client.fetch_locations())
    _refresh_products(run, client, watched)
    watched = list(WatchedProduct.objects.filter(enabled=True).order_by("pk"))
    variants = facts.counted_variants(watched)
    item_ids = sorted({v.inventory_item_id for found in variants.values() for v in found})
    keys = apply.ad_groups_of([product.pk for product in watched])
    last = _confirmed_statuses(keys)
    before = levels.stored_levels(item_ids)
    read_at = timezone.now()
    by_item: dict[int, list[Level]] = {item_id: [] for item_id in item_ids}
    for level in client.fetch_levels(item_ids):
        by_item.setdefault(level.inventory_item_id, []).append(level)
    run.items_checked = len(item_ids)

    failed: dict[int, Exception] = {}
    for attempt in ("first", "again"):
        # Items whose Ads calls failed transiently get one more pass after all the others.
        todo = by_item if attempt == "first" else {item: by_item[item] for item in failed}
        failed = {}
        for item_id, found in todo.items():
            reported = {lvl.location_id for lvl in found} | {
                location for item, location in client.undated if item == item_id
            }
            try:
                settled, stock = _apply_item(item_id, found, reported, read_at)
            except TransientAdsError as err:
                failed[item_id] = err
                continue
            except PermanentAdsError as err:
                run.errors.append(f"item {_item(item_id)}: {err}")
                continue
            _note_corrections(run, item_id, settled, last, stock)
    run.errors += [f"item {_item(item_id)}: {err}" for item_id, err in failed.items()]
    after = levels.stored_levels(item_ids)
    run.levels_changed = sum(
        1 for key, available in after.items() if key not in before or before[key] != available
    ) + sum(1 for key in before if key not in after)


def _refresh_products(run: ReconcileRun, client: ShopifyAdmin, watched: list) -> None:
    """What Shopify says of the watched products now; a product it no longer has stops
    being watched, as after a `products/delete`."""
    unknown = [product for product in watched if product.product_id is None]
    if unknown:
        chosen = facts.counted_variants(unknown)
        items = sorted({v.inventory_item_id for found in chosen.values() for v in found})
        for item_id, (product_id, variant_id) in client.fetch_item_products(items).items():
            catalogue.record_item(item_id, product_id, variant_id)
    product_ids = sorted(
        set(
            WatchedProduct.objects.filter(enabled=True, product_id__isnull=False).values_list(
                "product_id", flat=True
            )
        )
    )
    for info in client.fetch_products(product_ids):
        with transaction.atomic():
            apply.lock_products(catalogue.watched_by_product(info.product_id))
            catalogue.record_product(info)
    titles = display_names.product_names(client.deleted_products)
    for product_id in sorted(client.deleted_products):
        labels = stop_watching_deleted(product_id)
        if labels:
            run.errors.append(
                f"product {display_names.plain(titles.get(product_id), product_id)} no longer "
                "exists in Shopify: no longer watched "
                f"({', '.join(labels)})"
            )


def stop_watching_deleted(product_id: int) -> list[str]:
    """The product is gone from Shopify: its watched products stop controlling their ad
    groups (the others decide them again); the labels of those that stopped."""
    with transaction.atomic():
        products = [
            p for p in apply.lock_products(catalogue.watched_by_product(product_id)) if p.enabled
        ]
        catalogue.record_deleted(product_id)
        if not products:
            return []
        keys = apply.ad_groups_of([product.pk for product in products])
        WatchedProduct.objects.filter(pk__in=[p.pk for p in products]).update(enabled=False)
        apply.settle(keys, source=AdGroupAction.Source.RECONCILE)
        pks = [product.pk for product in products]
        transaction.on_commit(lambda: alerts.product_deleted(pks))
    return [product.label for product in products]


def _confirmed_statuses(keys: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The status the backend last confirmed for each of these ad groups."""
    states = AdGroupState.objects.filter(
        backend=settings.ADS_BACKEND, ad_group_id__in={ad_group for _, ad_group in keys}
    ).values_list("customer_id", "ad_group_id", "confirmed_status")
    return {(c, a): status for c, a, status in states if (c, a) in keys}


def _apply_item(
    item_id: int, found: list[Level], reported: set[int], read_at: datetime
) -> tuple[list[apply.Settled], int | None]:
    """One item's levels as Shopify reports them now; the levels at locations it no longer
    reports (`reported` includes those it reports without a timestamp) are dropped."""
    # Untracked locations first: the last tracked level decides, with every level written.
    ordered = sorted(found, key=lambda lvl: lvl.available is not None)
    updates = [
        LevelUpdate(lvl.inventory_item_id, lvl.location_id, lvl.available, lvl.updated_at)
        for lvl in ordered
    ]
    with transaction.atomic():
        products = apply.lock_watching([item_id])
        gone = levels.remove_unreported(item_id, reported, read_at)
        written = levels.store_levels(updates) if updates else []
        if not products or not (gone or any(written)):
            return [], None
        keys = apply.evaluate(products)
        settled = apply.settle(keys, source=AdGroupAction.Source.RECONCILE)
    errors = apply.errors_of(settled)
    if errors:
        raise apply.combined(errors)
    return settled, products[0].stock


def _note_corrections(
    run: ReconcileRun,
    item_id: int,
    settled: list[apply.Settled],
    last: dict[tuple[str, str], str],
    stock: int | None,
) -> None:
    """Every ad group whose status we had to send: a webhook that was missed or late; and
    every pause the safety brake holds."""
    for done in settled:
        customer_id, ad_group_id = done.key
        if done.result == AdGroupAction.Result.HELD:
            _note_held(run, item_id, done.label, ad_group_id, done.status)
            continue
        was = last.get(done.key)
        if done.sent and was is not None and was != done.status:
            run.corrections.append(
                {
                    "kind": "stock",
                    "item": item_id,
                    "label": done.label,
                    "ad_group": ad_group_id,
                    "was": was,
                    "now": done.status,
                    "total_available": stock,
                    "reason": done.reason,
                }
            )
            last[done.key] = done.status


def _note_held(run: ReconcileRun, item_id: int, label: str, ad_group_id: str, status: str) -> None:
    if any(entry["ad_group"] == ad_group_id for entry in run.held):
        return
    run.held.append({"item": item_id, "label": label, "ad_group": ad_group_id, "held": status})


def repair_drift(run: ReconcileRun) -> None:
    """Google Ads' real statuses set back to what the rule says (`stock.drift`), recorded."""
    found = drift.repair()
    run.ad_groups_read += found.read
    run.errors += found.errors
    for group in found.missing:
        run.errors.append(
            f"ad group {display_names.plain(group.name, group.ad_group_id)}: "
            f"{group.get_missing_display()}"
        )
    for done in found.settled:
        customer_id, ad_group_id = done.key
        if done.result == AdGroupAction.Result.HELD:
            _note_held(run, 0, done.label, ad_group_id, done.status)
        elif done.sent:
            run.corrections.append(
                {
                    "kind": "drift" if done.drifted else "stock",
                    "item": 0,
                    "label": done.label,
                    "ad_group": ad_group_id,
                    "was": done.observed,
                    "now": done.status,
                    "reason": done.reason,
                }
            )


def drop_old_bodies(now: datetime | None = None) -> int:
    """Forget raw bodies past DELIVERY_RETENTION_DAYS; the delivery's metadata stays."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.DELIVERY_RETENTION_DAYS)
    return Delivery.objects.filter(received_at__lt=cutoff, body__isnull=False).update(body=None)


def _item(item_id: int) -> str:
    """An inventory item in an error: its catalogue name with the id, or the id."""
    return display_names.plain(display_names.item_names([item_id]).get(item_id), item_id)


def name_entries(run: ReconcileRun) -> None:
    """Store each correction's and held pause's ad group and item names beside their ids, as
    they are at the run: the page and the mail name them even after a later rename."""
    entries = run.corrections + run.held
    groups = display_names.ad_group_names(entry["ad_group"] for entry in entries)
    items = display_names.item_names(entry["item"] for entry in entries if entry.get("item"))
    for entry in entries:
        entry["ad_group_name"] = groups.get(str(entry["ad_group"]), "")
        entry["item_name"] = items.get(entry.get("item") or 0, "")


def _what(entry: dict) -> str:
    """The watched product (or item) an entry is about, for plain text."""
    item = display_names.plain(entry.get("item_name"), entry["item"]) if entry["item"] else ""
    return entry["label"] or item or "–"


def _ad_group(entry: dict) -> str:
    return display_names.plain(entry.get("ad_group_name"), entry["ad_group"])


def _correction_line(c: dict) -> str:
    why = c.get("reason") or f"{c.get('total_available', '?')} available"
    return f"  {_what(c)}: ad group {_ad_group(c)} {c['was']} → {c['now']} ({why})"


def summary(run: ReconcileRun) -> str:
    """The run in a few lines, for the command line and the alert e-mail."""
    lines = [
        f"Reconciliation {run.local_date} ({run.trigger}): {run.get_status_display()}",
        f"items checked: {run.items_checked}, levels changed: {run.levels_changed}, "
        f"ad group statuses read: {run.ad_groups_read}, duration: {run.duration_seconds} s",
        f"expired claims deleted: {run.claims_deleted}, raw bodies dropped: {run.bodies_dropped}",
    ]
    stock = [c for c in run.corrections if c.get("kind", "stock") == "stock"]
    drift = [c for c in run.corrections if c.get("kind") == "drift"]
    if stock:
        lines.append(f"ad groups corrected ({len(stock)}), each a missed or late webhook:")
        lines += [_correction_line(c) for c in stock]
    if drift:
        lines.append(
            f"drift repaired ({len(drift)}): Google Ads had another status than the stock says "
            "(changed by hand?):"
        )
        lines += [_correction_line(c) for c in drift]
    if run.held:
        lines.append(
            f"held by the safety brake ({len(run.held)}), not sent; apply or discard them in "
            "the admin:"
        )
        lines += [f"  {_what(h)}: ad group {_ad_group(h)} → {h['held']}" for h in run.held]
    if run.status == ReconcileRun.Status.NOT_CONFIGURED:
        lines.append(f"Shopify Admin API not configured: set {shopify_access.missing_settings()}")
    elif shopify_access.webhooks_managed_by_toml():
        lines.append(f"webhook subscriptions: {subscriptions.MANAGED_BY_TOML}")
    if run.subscriptions_created:
        lines.append(f"webhook subscriptions re-created: {', '.join(run.subscriptions_created)}")
    if run.errors:
        lines.append("errors:")
        lines += [f"  {error}" for error in run.errors]
    return "\n".join(lines)
