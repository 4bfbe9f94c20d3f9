"""Shopify's stock and catalogue webhooks: levels, disconnected locations, products.

Each handler runs inside the inbox's transaction (which records its Outcome) and goes through
`apply`: the watched products are locked first, then what the message says is stored, then the
products and their ad groups are decided again. Destructive messages (a product deleted, a
location disconnected) are confirmed with the shop first when the Admin API is connected: the
topic header is not signed, and a body that claims a deletion should be true before ads move.
"""

from collections.abc import Sequence
from dataclasses import replace

from django.db import transaction

from automation.intake.handling import Outcome, handles, handles_batch
from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.intake.sources.shopify_products import (
    LevelDisconnected,
    ProductDeleted,
    ProductUpdate,
)
from automation.models import AdGroupAction, Delivery, WatchedProduct
from automation.platform import alerts
from automation.platform.notes import Note, join, note
from automation.shopify import access as shopify_access
from automation.shopify.transport import ShopifyAdminError
from automation.stock import apply, catalogue, levels

WEBHOOK = AdGroupAction.Source.WEBHOOK


@handles_batch("shopify", "inventory_levels/update", key=lambda update: update.inventory_item_id)
def handle_inventory_levels(batch: Sequence[tuple[LevelUpdate, Delivery]]) -> list[Outcome]:
    """Shopify's `inventory_levels/update` for one item: one delivery, or the ones a burst
    queued up, in the order received; one Outcome each.

    Each level passes the stale guard as if it came alone; the ad groups are set once, after
    the last level stored, and that delivery's outcome carries what was sent and, on an Ads
    error, the `retry` (raised once the levels have committed). The other stored levels name
    it: their own status would have been outdated before it was sent.
    """
    updates = [update for update, _ in batch]
    deliveries = [delivery for _, delivery in batch]
    applied = apply.apply_levels(updates, source=WEBHOOK, deliveries=deliveries)
    if not applied.watched:
        item = updates[0].inventory_item_id
        ignored = Outcome(Delivery.Status.IGNORED, note("item_not_watched", item=str(item)))
        return [ignored] * len(batch)
    decided_by = applied.decided_by
    outcomes = []
    for index, update in enumerate(updates):
        if not applied.written[index]:
            stale = note("levels_newer_stored", at=update.updated_at)
            outcomes.append(Outcome(Delivery.Status.STALE, stale))
        elif update.available is None or decided_by is None:
            outcomes.append(Outcome(Delivery.Status.IGNORED, note("stock_not_tracked")))
        elif index == decided_by:
            outcomes.append(_outcome(applied.stock, applied.settled))
        else:
            outcomes.append(
                Outcome(
                    Delivery.Status.DONE,
                    join(
                        _stock_note(applied.stock),
                        note("set_with_delivery", delivery=deliveries[decided_by].pk),
                    ),
                )
            )
    return outcomes


@handles("shopify", "inventory_levels/disconnect")
def handle_disconnect(event: LevelDisconnected, delivery: Delivery) -> Outcome:
    """A location no longer stocks the item: its last level stops counting."""
    item, location = event.inventory_item_id, event.location_id
    client = shopify_access.admin_client()
    if client is not None:
        try:
            still = client.inventory_level(item, location)
        finally:
            client.close()
        if still is not None:
            return Outcome(
                Delivery.Status.IGNORED,
                note("still_stocked", item=str(item), location=str(location)),
            )
    products = apply.lock_watching([item])
    removed = levels.remove_level(item, location)
    if not products:
        what = note("level_removed" if removed else "no_level_stored")
        return Outcome(
            Delivery.Status.DONE,
            note("location_disconnected_unwatched", location=str(location), what=what),
        )
    keys = apply.evaluate(products)
    settled = apply.settle(keys, source=WEBHOOK, delivery=delivery)
    outcome = _outcome({p.label: p.stock for p in products}, settled)
    return replace(
        outcome, note=join(note("location_disconnected", location=str(location)), outcome.note)
    )


@handles("shopify", "products/create", "products/update")
def handle_product(event: ProductUpdate, delivery: Delivery) -> Outcome:
    """A product's status or variants changed: a variant added later counts at once."""
    product_ids = catalogue.watched_by_product(event.product_id)
    if not product_ids:
        return Outcome(
            Delivery.Status.IGNORED, note("product_not_watched", product=str(event.product_id))
        )
    products = apply.lock_products(product_ids)
    if catalogue.record_product(event) is None:
        stale = note("product_newer_stored", product=str(event.product_id))
        return Outcome(Delivery.Status.STALE, stale)
    enabled = [product for product in products if product.enabled]
    if not enabled:
        return Outcome(
            Delivery.Status.DONE, note("product_switched_off", product=str(event.product_id))
        )
    keys = apply.evaluate(enabled)
    return _outcome({p.label: p.stock for p in enabled}, apply.settle(keys, source=WEBHOOK))


@handles("shopify", "products/delete")
def handle_product_deleted(event: ProductDeleted, delivery: Delivery) -> Outcome:
    """Shopify deleted the product: it stops controlling its ad groups, and the merchant is
    told (its ad groups stay as they are unless another watched product controls them)."""
    product_id = event.product_id
    client = shopify_access.admin_client()
    if client is not None:
        try:
            exists = client.product_exists(product_id)
        except ShopifyAdminError:
            raise  # cannot confirm now: fail and retry, never stop watching blind
        finally:
            client.close()
        if exists:
            return Outcome(
                Delivery.Status.IGNORED, note("product_still_exists", product=str(product_id))
            )
    product_ids = catalogue.watched_by_product(product_id)
    products = apply.lock_products(product_ids)
    catalogue.record_deleted(product_id)
    watched = [product for product in products if product.enabled]
    if not watched:
        return Outcome(
            Delivery.Status.DONE, note("product_deleted_unwatched", product=str(product_id))
        )
    keys = apply.ad_groups_of([product.pk for product in watched])
    WatchedProduct.objects.filter(pk__in=[product.pk for product in watched]).update(enabled=False)
    settled = apply.settle(keys, source=WEBHOOK, delivery=delivery)
    labels = [product.label for product in watched]
    pks = [product.pk for product in watched]
    transaction.on_commit(lambda: alerts.product_deleted(pks))
    outcome = _outcome({}, settled)
    deleted = note("product_deleted", product=str(product_id), labels=", ".join(labels))
    return replace(outcome, note=join(deleted, outcome.note))


# --- what the merchant reads in the delivery's result ------------------------------------------


def _stock_note(stock: dict[str, int | None] | None) -> Note | str:
    if not stock:
        return ""
    if len(stock) == 1:
        (total,) = stock.values()
        return note("total_available", total=total)
    return join(
        *(note("label_total_available", label=label, total=total) for label, total in stock.items())
    )


def _outcome(stock: dict[str, int | None] | None, settled: list[apply.Settled]) -> Outcome:
    """DONE with what was decided; the Ads errors as the retry (raised after the commit)."""
    notes: list[Note | str] = [_stock_note(stock)] if stock else []
    held = []
    for done in settled:
        customer_id, ad_group_id = done.key
        shown = {"ad_group": str(ad_group_id), "status": _status(done.status)}
        if done.result == apply.UNCHANGED:
            notes.append(note("ad_group_unchanged", **shown))
        elif done.result == AdGroupAction.Result.HELD:
            notes.append(note("ad_group_held", **shown))
        elif done.result == apply.MISSING:
            notes.append(note("ad_group_missing", ad_group=str(ad_group_id)))
        if done.manual:
            held.append(
                note("manual_held", label=done.label, status=_status(done.status, lower=True))
            )
    if held:
        notes.append(note("manual_holds", held=held))
    errors = apply.errors_of(settled)
    return Outcome(
        Delivery.Status.DONE,
        join(*notes),
        retry=apply.combined(errors) if errors else None,
    )


def _status(status: object, lower: bool = False) -> Note | str:
    """An ad group status as a note, so a German page shows its German name, not ENABLED."""
    codes = (
        {"ENABLED": "state_enabled", "PAUSED": "state_paused"}
        if lower
        else {
            "ENABLED": "status_enabled",
            "PAUSED": "status_paused",
        }
    )
    code = codes.get(str(status))
    if code:
        return note(code)
    return str(status).lower() if lower else str(status)
