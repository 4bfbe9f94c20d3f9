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

from .. import alerts, shopify_access
from ..adapters.shopify_admin import ShopifyAdminError
from ..handling import Outcome, handles, handles_batch
from ..models import AdGroupAction, Delivery, WatchedProduct
from ..sources.shopify_inventory import LevelUpdate
from ..sources.shopify_products import LevelDisconnected, ProductDeleted, ProductUpdate
from . import apply, catalogue, levels

Status = Delivery.Status
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
        return [Outcome(Status.IGNORED, f"inventory item {item} not watched")] * len(batch)
    decided_by = applied.decided_by
    outcomes = []
    for index, update in enumerate(updates):
        if not applied.written[index]:
            stale = f"newer levels are stored; this one is from {update.updated_at.isoformat()}"
            outcomes.append(Outcome(Status.STALE, stale))
        elif update.available is None or decided_by is None:
            outcomes.append(
                Outcome(Status.IGNORED, "stock not tracked (available is null): stored, no action")
            )
        elif index == decided_by:
            outcomes.append(_outcome(applied.stock, applied.settled))
        else:
            outcomes.append(
                Outcome(
                    Status.DONE,
                    f"{_stock_note(applied.stock)}; ad groups set with delivery "
                    f"{deliveries[decided_by].pk}, the last stock level of its batch",
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
                Status.IGNORED,
                f"Shopify still stocks inventory item {item} at location {location}: kept",
            )
    products = apply.lock_watching([item])
    removed = levels.remove_level(item, location)
    if not products:
        note = "level removed" if removed else "no level stored"
        return Outcome(Status.DONE, f"location {location} disconnected: {note}; not watched")
    keys = apply.evaluate(products)
    settled = apply.settle(keys, source=WEBHOOK, delivery=delivery)
    outcome = _outcome({p.label: p.stock for p in products}, settled)
    return replace(outcome, note=f"location {location} disconnected; {outcome.note}")


@handles("shopify", "products/create", "products/update")
def handle_product(event: ProductUpdate, delivery: Delivery) -> Outcome:
    """A product's status or variants changed: a variant added later counts at once."""
    product_ids = catalogue.watched_by_product(event.product_id)
    if not product_ids:
        return Outcome(Status.IGNORED, f"product {event.product_id} not watched")
    products = apply.lock_products(product_ids)
    if catalogue.record_product(event) is None:
        stale = f"a newer state of product {event.product_id} is stored"
        return Outcome(Status.STALE, stale)
    enabled = [product for product in products if product.enabled]
    if not enabled:
        return Outcome(
            Status.DONE, f"product {event.product_id} stored; not watched (switched off)"
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
            return Outcome(Status.IGNORED, f"Shopify still has product {product_id}: kept")
    product_ids = catalogue.watched_by_product(product_id)
    products = apply.lock_products(product_ids)
    catalogue.record_deleted(product_id)
    watched = [product for product in products if product.enabled]
    if not watched:
        return Outcome(Status.DONE, f"product {product_id} deleted in Shopify; not watched")
    keys = apply.ad_groups_of([product.pk for product in watched])
    WatchedProduct.objects.filter(pk__in=[product.pk for product in watched]).update(enabled=False)
    settled = apply.settle(keys, source=WEBHOOK, delivery=delivery)
    labels = [product.label for product in watched]
    pks = [product.pk for product in watched]
    transaction.on_commit(lambda: alerts.product_deleted(pks))
    outcome = _outcome({}, settled)
    note = f"product {product_id} deleted in Shopify: no longer watched: {', '.join(labels)}"
    return replace(outcome, note=f"{note}; {outcome.note}" if outcome.note else note)


# --- what the merchant reads in the delivery's result ------------------------------------------


def _stock_note(stock: dict[str, int | None] | None) -> str:
    if not stock:
        return ""
    if len(stock) == 1:
        (total,) = stock.values()
        return f"total available {'?' if total is None else total}"
    return "; ".join(
        f"{label}: total available {'?' if total is None else total}"
        for label, total in stock.items()
    )


def _outcome(stock: dict[str, int | None] | None, settled: list[apply.Settled]) -> Outcome:
    """DONE with what was decided; the Ads errors as the retry (raised after the commit)."""
    notes = [_stock_note(stock)] if stock else []
    held = []
    for done in settled:
        customer_id, ad_group_id = done.key
        if done.result in (apply.UNCHANGED, AdGroupAction.Result.HELD):
            notes.append(f"ad group {ad_group_id} {done.status} {done.result}")
        elif done.result == apply.MISSING:
            notes.append(f"ad group {ad_group_id} missing in Google Ads: skipped")
        if done.manual:
            held.append(f"{done.label} ({str(done.status).lower()})")
    if held:
        notes.append(f"manual state holds: {', '.join(held)}")
    errors = apply.errors_of(settled)
    return Outcome(
        Status.DONE,
        "; ".join(note for note in notes if note),
        retry=apply.combined(errors) if errors else None,
    )
