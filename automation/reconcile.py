"""The nightly pass over Shopify's true stock, pushed through the very same inventory path.

Because the stale guard ignores older data and setting a status is idempotent, a
reconciliation can never make things worse; every ad group whose status it changes is a
webhook that was missed or late. It then reads every watched ad group's real status from Google
Ads (one GAQL search per account) and repairs drift: an ad group someone switched by hand gets
the status its stock says again, listed as a drift correction. A pause the safety brake holds
is neither pushed nor repaired, only reported. The run also heals webhook subscriptions Shopify
deleted (unless the app's shopify.app.toml owns them), deletes expired claims and drops raw
bodies past the retention period.
"""

import logging
import time
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from . import ads, alerts, claims, decisions, inventory, shopify_access
from .adapters.shopify_admin import Level, ShopifyAdmin, ShopifyAdminError
from .exceptions import PermanentAdsError, TransientAdsError
from .models import AdGroupAction, AdGroupState, Delivery, ReconcileRun, StockLevel, WatchedItem

logger = logging.getLogger(__name__)

REQUIRED_TOPICS = (
    "inventory_levels/update",
    "checkouts/create",
    "checkouts/update",
    "orders/create",
)
OVERDUE_AFTER = timedelta(hours=26)
"""A nightly run is missing once the last one is this old (a day plus two hours of slack): the
overdue check runs one then, and /healthz reports the reconciliation as failing."""
Status = ReconcileRun.Status


MANAGED_BY_TOML = "managed by shopify.app.toml (the app configuration owns them; not checked)"


def admin_client() -> ShopifyAdmin | None:
    """The Shopify Admin API client (static token or client credentials), None if neither is set."""
    tokens = shopify_access.token_source()
    if tokens is None:
        return None
    return ShopifyAdmin(settings.SHOPIFY_ADMIN_URL, tokens, settings.SHOPIFY_API_VERSION)


def callback_url() -> str:
    return f"{settings.PUBLIC_BASE_URL}/webhooks/shopify/"


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
        ReconcileRun.objects.filter(status__in=[Status.OK, Status.CORRECTED])
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
    client = admin_client()
    if client is None:
        run.status = Status.NOT_CONFIGURED
    else:
        try:
            reconcile_stock(run, client)
        except ShopifyAdminError as err:
            run.errors.append(f"stock: {err}")
        repair_drift(run)
        if not toml:  # app-scoped subscriptions are invisible to us: "healing" would double them
            try:
                heal_subscriptions(run, client)
            except ShopifyAdminError as err:
                run.errors.append(f"webhook subscriptions: {err}")
        run.status = (
            Status.ERRORS if run.errors else Status.CORRECTED if run.corrections else Status.OK
        )
    run.claims_deleted = claims.delete_expired()
    run.bodies_dropped = drop_old_bodies()
    run.finished_at = timezone.now()
    run.duration_seconds = round(time.monotonic() - started, 3)
    run.save()
    if run.corrections or run.errors or run.subscriptions_created or run.held:
        alerts.send(
            f"[Elbkerzen] Nightly reconciliation {run.local_date}: {run.get_status_display()}",
            summary(run),
        )
    return run


# --- the parts -----------------------------------------------------------------------------


def _confirmed_statuses(item_ids: list[int]) -> dict[tuple[str, str], str]:
    """The status the backend last confirmed for each watched ad group of these items."""
    watched = WatchedItem.objects.filter(inventory_item_id__in=item_ids)
    keys = {(row.customer_id, row.ad_group_id) for row in watched}
    states = AdGroupState.objects.filter(
        backend=settings.ADS_BACKEND, ad_group_id__in={ad_group for _, ad_group in keys}
    ).values_list("customer_id", "ad_group_id", "confirmed_status")
    return {(c, a): status for c, a, status in states if (c, a) in keys}


def _stored_levels(item_ids: list[int]) -> dict[tuple[int, int], int | None]:
    levels = StockLevel.objects.filter(inventory_item_id__in=item_ids)
    return {
        (item, location): available
        for item, location, available in levels.values_list(
            "inventory_item_id", "location_id", "available"
        )
    }


def reconcile_stock(run: ReconcileRun, client: ShopifyAdmin) -> None:
    """Read every watched item's levels from Shopify and apply them through the guard."""
    item_ids = sorted(
        set(WatchedItem.objects.filter(enabled=True).values_list("inventory_item_id", flat=True))
    )
    before = _stored_levels(item_ids)
    last = _confirmed_statuses(item_ids)
    labels = dict(WatchedItem.objects.values_list("ad_group_id", "label"))
    by_item: dict[int, list[Level]] = defaultdict(list)
    for level in client.fetch_levels(item_ids):
        by_item[level.inventory_item_id].append(level)
    run.items_checked = len(item_ids)

    failed: dict[int, Exception] = {}
    for attempt in ("first", "again"):
        # Items whose Ads calls failed transiently get one more pass after all the others.
        todo = by_item if attempt == "first" else {item: by_item[item] for item in failed}
        failed = {}
        for item_id, levels in todo.items():
            try:
                applied = _apply_item(item_id, levels)
            except TransientAdsError as err:
                failed[item_id] = err
                continue
            except PermanentAdsError as err:
                run.errors.append(f"item {item_id}: {err}")
                continue
            _note_corrections(run, item_id, applied, last, labels)
    run.errors += [f"item {item_id}: {err}" for item_id, err in failed.items()]
    after = _stored_levels(item_ids)
    run.levels_changed = sum(
        1 for key, available in after.items() if key not in before or before[key] != available
    )


def _apply_item(item_id: int, levels: list[Level]) -> inventory.Applied:
    # Untracked locations first: the last tracked level decides with the total its write saw,
    # so it must see them (they count 0); all levels come from the same read.
    ordered = sorted(levels, key=lambda lvl: lvl.available is not None)
    updates = [
        inventory.LevelUpdate(lvl.inventory_item_id, lvl.location_id, lvl.available, lvl.updated_at)
        for lvl in ordered
    ]
    return inventory.apply_levels(item_id, updates, source=AdGroupAction.Source.RECONCILE)


def _note_corrections(
    run: ReconcileRun,
    item_id: int,
    applied: inventory.Applied,
    last: dict[tuple[str, str], str],
    labels: dict[str, str],
) -> None:
    """Every ad group whose status we had to send: a webhook that was missed or late; and
    every pause the safety brake holds."""
    for (customer_id, ad_group_id), status in applied.statuses.items():
        result = applied.results.get((customer_id, ad_group_id))
        if result == AdGroupAction.Result.HELD:
            _note_held(run, item_id, labels.get(ad_group_id, ""), ad_group_id, status)
            continue
        was = last.get((customer_id, ad_group_id))
        if result in ads.SENT_RESULTS and was is not None and was != status:
            run.corrections.append(
                {
                    "kind": "stock",
                    "item": item_id,
                    "label": labels.get(ad_group_id, ""),
                    "ad_group": ad_group_id,
                    "was": was,
                    "now": status,
                    "total_available": inventory.total_available(item_id),
                }
            )


def _note_held(run: ReconcileRun, item_id: int, label: str, ad_group_id: str, status: str) -> None:
    if any(entry["ad_group"] == ad_group_id for entry in run.held):
        return
    run.held.append({"item": item_id, "label": label, "ad_group": ad_group_id, "held": status})


def repair_drift(run: ReconcileRun) -> None:
    """Read every watched ad group's real status from Google Ads and repair what drifted.

    Per account one GAQL search (batched by the adapter). An ad group whose real status differs
    from the one its stored stock says gets that status again (an AdGroupAction from source
    `reconcile` whose reason says drift), unless the safety brake holds its pause. The real
    status becomes the confirmed one first, so the only-on-change gate sends it.
    """
    watched = list(WatchedItem.objects.filter(enabled=True).order_by("pk"))
    by_customer: dict[str, list[WatchedItem]] = defaultdict(list)
    for row in watched:
        by_customer[row.customer_id].append(row)
    for customer_id, rows in by_customer.items():
        read_at = timezone.now()
        try:
            real = ads.read_statuses(customer_id, [row.ad_group_id for row in rows])
        except (TransientAdsError, PermanentAdsError) as err:
            run.errors.append(f"Google Ads statuses of account {customer_id}: {err}")
            continue
        run.ad_groups_read += len({row.ad_group_id for row in rows})
        for row in rows:
            status = real.get(row.ad_group_id)
            if status is None:
                if settings.ADS_BACKEND != "dryrun":  # the dry run knows only what it sent
                    run.errors.append(
                        f"ad group {row.ad_group_id} ({row.label}) not found in Google Ads "
                        f"account {customer_id}"
                    )
                continue
            if status not in AdGroupAction.Status.values:
                run.errors.append(f"ad group {row.ad_group_id} ({row.label}) is {status}")
                continue
            try:
                _repair_one(run, row, status, read_at)
            except (TransientAdsError, PermanentAdsError) as err:
                run.errors.append(f"ad group {row.ad_group_id} (drift): {err}")


def _repair_one(run: ReconcileRun, row: WatchedItem, real: str, read_at: datetime) -> None:
    """One ad group: under its item's lock, compare Google's status with the stock's."""
    backend = settings.ADS_BACKEND
    with transaction.atomic():
        # The same lock as a webhook for this item takes: they take turns.
        list(
            WatchedItem.objects.select_for_update().filter(inventory_item_id=row.inventory_item_id)
        )
        levels = StockLevel.objects.filter(
            inventory_item_id=row.inventory_item_id, available__isnull=False
        )
        if not levels.exists():
            return  # no tracked stock known: nothing says what the status should be
        state = (
            AdGroupState.objects.select_for_update()
            .filter(backend=backend, customer_id=row.customer_id, ad_group_id=row.ad_group_id)
            .first()
        )
        if state is not None and state.confirmed_at > read_at:
            return  # a call after our read confirmed a newer status
        drifted = state is not None and state.confirmed_status != real
        total = inventory.total_available(row.inventory_item_id)
        # A manual pause or enable holds against the stock here too (issue 16).
        desired = decisions.status_to_set(
            inventory.desired_status(total, row.pause_at), row.manual_status
        )
        ads.confirm(backend, row.customer_id, row.ad_group_id, real)
        if real == desired:
            return
        if desired == AdGroupAction.Status.PAUSED and ads.open_held(
            row.customer_id, row.ad_group_id
        ):
            _note_held(run, row.inventory_item_id, row.label, row.ad_group_id, desired)
            return
        comparison = "≤" if desired == AdGroupAction.Status.PAUSED else ">"
        result = ads.apply_status(
            customer_id=row.customer_id,
            ad_group_id=row.ad_group_id,
            status=desired,
            reason=(
                (gettext("drift: ") if drifted else "")
                + gettext("Google Ads had %(real)s; %(label)s: ")
                % {"real": real, "label": row.label}
                + (
                    gettext("manual state holds (%(state)s)")
                    % {"state": AdGroupAction.Status(row.manual_status).label}
                    if row.manual_status
                    else gettext("%(total)s available %(comparison)s %(pause_at)s")
                    % {"total": total, "comparison": comparison, "pause_at": row.pause_at}
                )
            ),
            source=AdGroupAction.Source.RECONCILE,
        )
    if result == AdGroupAction.Result.HELD:
        _note_held(run, row.inventory_item_id, row.label, row.ad_group_id, desired)
        return
    run.corrections.append(
        {
            "kind": "drift" if drifted else "stock",
            "item": row.inventory_item_id,
            "label": row.label,
            "ad_group": row.ad_group_id,
            "was": real,
            "now": desired,
            "total_available": total,
        }
    )


def missing_subscriptions(client: ShopifyAdmin) -> list[str]:
    """The topics we need that have no subscription to our callback URL."""
    have = {(sub.topic, sub.callback_url) for sub in client.list_webhook_subscriptions()}
    return [topic for topic in REQUIRED_TOPICS if (topic, callback_url()) not in have]


def heal_subscriptions(run: ReconcileRun | None, client: ShopifyAdmin) -> list[str]:
    """Re-create subscriptions Shopify deleted after failed deliveries (API-managed ones only)."""
    if shopify_access.webhooks_managed_by_toml():
        raise ImproperlyConfigured(
            "SHOPIFY_WEBHOOKS_MANAGED_BY=toml: the app's shopify.app.toml owns the webhook "
            "subscriptions; creating them through the API too would deliver every event twice"
        )
    created = []
    for topic in missing_subscriptions(client):
        client.create_webhook_subscription(topic, callback_url())
        created.append(topic)
    if run is not None:
        run.subscriptions_created = created
    return created


def drop_old_bodies(now: datetime | None = None) -> int:
    """Forget raw bodies past DELIVERY_RETENTION_DAYS; the delivery's metadata stays."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.DELIVERY_RETENTION_DAYS)
    return Delivery.objects.filter(received_at__lt=cutoff, body__isnull=False).update(body=None)


def _correction_line(c: dict) -> str:
    return (
        f"  {c['label'] or c['item']}: ad group {c['ad_group']} {c['was']} → {c['now']} "
        f"({c['total_available']} available)"
    )


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
        lines += [
            f"  {h['label'] or h['item']}: ad group {h['ad_group']} → {h['held']}" for h in run.held
        ]
    if run.status == Status.NOT_CONFIGURED:
        lines.append(f"Shopify Admin API not configured: set {shopify_access.missing_settings()}")
    elif shopify_access.webhooks_managed_by_toml():
        lines.append(f"webhook subscriptions: {MANAGED_BY_TOML}")
    if run.subscriptions_created:
        lines.append(f"webhook subscriptions re-created: {', '.join(run.subscriptions_created)}")
    if run.errors:
        lines.append("errors:")
        lines += [f"  {error}" for error in run.errors]
    return "\n".join(lines)
