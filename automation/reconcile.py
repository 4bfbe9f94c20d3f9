"""The nightly pass over Shopify's true stock, pushed through the very same inventory path.

Because the stale guard ignores older data and setting a status is idempotent, a
reconciliation can never make things worse; every ad group whose status it changes is a
webhook that was missed or late. The run also heals webhook subscriptions Shopify deleted (unless
the app's shopify.app.toml owns them), deletes expired claims and drops raw bodies past the
retention period.
"""

import logging
import time
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from . import alerts, claims, inventory, shopify_access
from .adapters.shopify_admin import Level, ShopifyAdmin, ShopifyAdminError
from .exceptions import PermanentAdsError, TransientAdsError
from .models import AdGroupAction, Delivery, ReconcileRun, StockLevel, WatchedItem

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
    if run.corrections or run.errors or run.subscriptions_created:
        alerts.send(
            f"[Elbkerzen] Nightly reconciliation {run.local_date}: {run.get_status_display()}",
            summary(run),
        )
    return run


# --- the parts -----------------------------------------------------------------------------


def _last_statuses(item_ids: list[int]) -> dict[tuple[str, str], str]:
    """The status we last set (successfully) for each watched ad group."""
    last_action = (
        AdGroupAction.objects.filter(
            customer_id=OuterRef("customer_id"), ad_group_id=OuterRef("ad_group_id")
        )
        .exclude(result=AdGroupAction.Result.FAILED)
        .order_by("-requested_at", "-pk")
        .values("desired_status")[:1]
    )
    rows = WatchedItem.objects.filter(inventory_item_id__in=item_ids).annotate(
        last=Subquery(last_action)
    )
    return {(row.customer_id, row.ad_group_id): row.last for row in rows}


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
    last = _last_statuses(item_ids)
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
    updates = [
        inventory.LevelUpdate(lvl.inventory_item_id, lvl.location_id, lvl.available, lvl.updated_at)
        for lvl in levels
    ]
    return inventory.apply_levels(item_id, updates, source=AdGroupAction.Source.RECONCILE)


def _note_corrections(
    run: ReconcileRun,
    item_id: int,
    applied: inventory.Applied,
    last: dict[tuple[str, str], str],
    labels: dict[str, str],
) -> None:
    """Every ad group whose status we had wrong: a webhook that was missed or late."""
    for (customer_id, ad_group_id), status in applied.statuses.items():
        was = last.get((customer_id, ad_group_id))
        if was is not None and was != status:
            run.corrections.append(
                {
                    "item": item_id,
                    "label": labels.get(ad_group_id, ""),
                    "ad_group": ad_group_id,
                    "was": was,
                    "now": status,
                    "total_available": inventory.total_available(item_id),
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


def summary(run: ReconcileRun) -> str:
    """The run in a few lines, for the command line and the alert e-mail."""
    lines = [
        f"Reconciliation {run.local_date} ({run.trigger}): {run.get_status_display()}",
        f"items checked: {run.items_checked}, levels changed: {run.levels_changed}, "
        f"duration: {run.duration_seconds} s",
        f"expired claims deleted: {run.claims_deleted}, raw bodies dropped: {run.bodies_dropped}",
    ]
    if run.corrections:
        lines.append(
            f"ad groups corrected ({len(run.corrections)}), each a missed or late webhook:"
        )
        lines += [
            f"  {c['label'] or c['item']}: ad group {c['ad_group']} {c['was']} → {c['now']} "
            f"({c['total_available']} available)"
            for c in run.corrections
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
