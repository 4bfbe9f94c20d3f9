"""Keeping the catalogue: products and their variants' inventory items, and the locations.

Fed by the `products/*` webhooks, the product picker and the nightly reconciliation, all
through `record_product`, whose stale guard (Shopify's `updated_at`, checked and written in
one statement) keeps a late message from overriding a newer one.
"""

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from automation.models import Location, Product, Variant, WatchedProduct

TITLE_LENGTH = Product._meta.get_field("title").max_length


class VariantLike(Protocol):
    variant_id: int
    inventory_item_id: int
    title: str
    sku: str
    tracked: bool | None  # None: the message does not say (product webhooks since 2024-07)
    inventory_policy: str
    position: int


class ProductLike(Protocol):
    """A product as a webhook event or the Admin API describes it."""

    product_id: int
    title: str
    status: str
    updated_at: datetime | None
    variants: Sequence[VariantLike]
    # False when the message lists only some variants (Shopify's product webhooks list the
    # first 100): the others are not deleted, only not described.
    all_variants_listed: bool


class LocationLike(Protocol):
    location_id: int
    name: str
    fulfills_online_orders: bool | None
    is_active: bool | None


def record_product(product: ProductLike) -> Product | None:
    """Store the product and its variants unless a newer state is stored; the row, or None
    when this one was stale.

    Variants it no longer lists are marked deleted (never removed). A watched product known
    only by an inventory item learns its product here.
    """
    now = timezone.now()
    fields = {
        "title": product.title[:TITLE_LENGTH],
        "status": product.status,
        "updated_at": product.updated_at,
        "deleted_at": None,
    }
    with transaction.atomic():
        newer_or_equal = Q(updated_at__isnull=True)
        if product.updated_at is not None:
            newer_or_equal |= Q(updated_at__lte=product.updated_at)
        written = (
            Product.objects.filter(product_id=product.product_id)
            .filter(newer_or_equal)
            .update(**fields)
        )
        if not written:
            try:
                with transaction.atomic():
                    Product.objects.create(product_id=product.product_id, **fields)
            except IntegrityError:
                return None  # it exists with a later timestamp: this state is stale
        row = Product.objects.get(product_id=product.product_id)
        listed = []
        for position, variant in enumerate(product.variants, start=1):
            listed.append(variant.inventory_item_id)
            defaults = {
                "variant_id": variant.variant_id,
                "product": row,
                "title": variant.title[:TITLE_LENGTH],
                "sku": variant.sku[:TITLE_LENGTH],
                "position": variant.position or position,
                "inventory_policy": variant.inventory_policy,
                "deleted_at": None,
            }
            if variant.tracked is not None:
                defaults["tracked"] = variant.tracked
            Variant.objects.update_or_create(
                inventory_item_id=variant.inventory_item_id, defaults=defaults
            )
        if getattr(product, "all_variants_listed", True):
            Variant.objects.filter(product=row, deleted_at__isnull=True).exclude(
                inventory_item_id__in=listed
            ).update(deleted_at=now)
        WatchedProduct.objects.filter(product_id__isnull=True, variants__product=row).update(
            product_id=row.product_id
        )
    return row


def record_deleted(product_id: int) -> Product:
    """Shopify deleted the product: its variants no longer count; an update that arrives
    later is older than the deletion and is ignored."""
    now = timezone.now()
    with transaction.atomic():
        row, _ = Product.objects.get_or_create(product_id=product_id)
        row.deleted_at = now
        row.updated_at = max(row.updated_at or now, now)
        row.save(update_fields=["deleted_at", "updated_at", "recorded_at"])
        Variant.objects.filter(product=row, deleted_at__isnull=True).update(deleted_at=now)
    return row


def record_item(inventory_item_id: int, product_id: int, variant_id: int) -> None:
    """What Shopify says an inventory item belongs to, for a row that knew only the item."""
    with transaction.atomic():
        product, _ = Product.objects.get_or_create(product_id=product_id)
        Variant.objects.filter(inventory_item_id=inventory_item_id, product__isnull=True).update(
            product=product, variant_id=variant_id
        )
        WatchedProduct.objects.filter(
            product_id__isnull=True, variants__inventory_item_id=inventory_item_id
        ).update(product_id=product_id)


def record_locations(locations: Iterable[LocationLike]) -> list[Location]:
    """Store what Shopify says of its locations; the merchant's own counting choice stays."""
    rows = []
    for location in locations:
        row, _ = Location.objects.update_or_create(
            location_id=location.location_id,
            defaults={
                "name": location.name[:TITLE_LENGTH],
                "fulfills_online_orders": location.fulfills_online_orders,
                "is_active": location.is_active,
            },
        )
        rows.append(row)
    return rows


def watched_by_product(product_id: int) -> list[int]:
    """The watched products (enabled or not) naming this Shopify product."""
    return list(
        WatchedProduct.objects.filter(product_id=product_id)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
