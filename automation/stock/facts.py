"""What the rule needs, read from the database in a fixed number of queries.

`product_facts` gathers each watched product's counted variants with their levels and
locations; `ad_group_facts` gathers, per ad group, its manual state, the promotions that list
it and the last decision of every watched product that controls it. `watching` answers which
watched products an inventory item belongs to.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db.models import Q, QuerySet

from automation.models import (
    AdGroup,
    Location,
    Product,
    PromotionAdGroup,
    StockLevel,
    Variant,
    WatchedProduct,
)
from automation.stock import rule

Key = tuple[str, str]
"""An ad group: (customer id, ad group id)."""


def watching_query(inventory_item_ids: Iterable[int]) -> QuerySet:
    """The pks of the enabled watched products that count any of these inventory items: those
    that chose its variant, and those watching all variants of its product."""
    variants = Variant.objects.filter(
        inventory_item_id__in=list(inventory_item_ids), deleted_at__isnull=True
    )
    chosen = Q(variants__in=variants)
    whole = Q(variants__isnull=True, product_id__in=variants.values("product__product_id"))
    return WatchedProduct.objects.filter(chosen | whole, enabled=True).values("pk")


def watching(inventory_item_ids: Iterable[int]) -> list[int]:
    """`watching_query`'s pks, ascending."""
    return sorted(set(watching_query(inventory_item_ids).values_list("pk", flat=True)))


def counted_variants(products: Sequence[WatchedProduct]) -> dict[int, list[Variant]]:
    """Each watched product's variants that count: its chosen ones, else all of its product's
    (variants Shopify deleted never count)."""
    chosen: dict[int, list[Variant]] = defaultdict(list)
    with_subset: set[int] = set()
    through = WatchedProduct.variants.through.objects.filter(
        watchedproduct_id__in=[product.pk for product in products]
    ).select_related("variant")
    for row in through.order_by("variant__position", "variant_id"):
        with_subset.add(row.watchedproduct_id)  # a chosen variant Shopify deleted still chose
        if row.variant.deleted_at is None:
            chosen[row.watchedproduct_id].append(row.variant)
    whole_ids = {p.product_id for p in products if p.pk not in with_subset and p.product_id}
    by_product: dict[int, list[Variant]] = defaultdict(list)
    if whole_ids:
        for variant in Variant.objects.filter(
            product__product_id__in=whole_ids, deleted_at__isnull=True
        ).select_related("product"):
            by_product[variant.product.product_id].append(variant)
    return {
        product.pk: (
            chosen[product.pk] if product.pk in with_subset else by_product[product.product_id]
        )
        for product in products
    }


def product_facts(products: Sequence[WatchedProduct]) -> dict[int, rule.ProductFact]:
    """Each watched product as the rule sees it (keyed by its pk)."""
    variants = counted_variants(products)
    item_ids = {variant.inventory_item_id for found in variants.values() for variant in found}
    levels: dict[int, list[StockLevel]] = defaultdict(list)
    for level in StockLevel.objects.filter(inventory_item_id__in=item_ids).order_by("location_id"):
        levels[level.inventory_item_id].append(level)
    location_ids = {level.location_id for found in levels.values() for level in found}
    locations = {
        location.location_id: location
        for location in Location.objects.filter(location_id__in=location_ids)
    }
    statuses = dict(
        Product.objects.filter(
            product_id__in={p.product_id for p in products if p.product_id}
        ).values_list("product_id", "status")
    )
    facts = {}
    for product in products:
        facts[product.pk] = rule.ProductFact(
            label=product.label,
            pause_at=product.pause_at,
            resume_at=product.resume_level,
            was_sellable=product.sellable,
            status=statuses.get(product.product_id, rule.UNKNOWN_STATUS),
            variants=tuple(
                rule.VariantFact(
                    name=str(variant),
                    tracked=variant.tracked,
                    keeps_selling=variant.inventory_policy == Variant.Policy.CONTINUE,
                    levels=tuple(
                        _level_fact(level, locations.get(level.location_id))
                        for level in levels[variant.inventory_item_id]
                    ),
                )
                for variant in variants[product.pk]
            ),
        )
    return facts


def _level_fact(level: StockLevel, location: Location | None) -> rule.LevelFact:
    """A location Shopify has not described to us yet counts (the safe side for a sell-out)."""
    if location is None:
        return rule.LevelFact(str(level.location_id), level.available)
    return rule.LevelFact(str(location), level.available, location.counted)


def stored_sellability(product: WatchedProduct) -> rule.Sellability:
    """The product's last decision, as stored by `apply.evaluate`."""
    reason = product.reason or {"code": "stock_unknown", "values": {"label": product.label}}
    return rule.Sellability(
        product.sellable,
        rule.Reason(reason.get("code", "stock_unknown"), dict(reason.get("values") or {})),
        product.stock,
    )


def in_window(start_at: datetime | None, end_at: datetime | None, now: datetime) -> bool:
    """Whether `now` lies in a promotion's window (a missing edge is open on that side)."""
    return (start_at is None or start_at <= now) and (end_at is None or now < end_at)


def ad_group_facts(ad_groups: Sequence[AdGroup], now: datetime) -> dict[Key, rule.AdGroupFact]:
    """Everything that controls each ad group, keyed by (customer id, ad group id)."""
    # Ad groups locked by `apply.settle` know whether a promotion lists them.
    keys = [group.key for group in ad_groups if getattr(group, "in_promotion", True)]
    promotions: dict[Key, list[rule.PromotionFact]] = defaultdict(list)
    if keys:
        listed = Q()
        for customer_id, ad_group_id in keys:
            listed |= Q(customer_id=customer_id, ad_group_id=ad_group_id)
        for row in PromotionAdGroup.objects.filter(listed).select_related("promotion"):
            promotion = row.promotion
            promotions[(row.customer_id, row.ad_group_id)].append(
                rule.PromotionFact(
                    name=promotion.name,
                    in_window=in_window(promotion.start_at, promotion.end_at, now),
                    ended=promotion.end_at is not None and now >= promotion.end_at,
                )
            )
    controlling: dict[int, list[rule.Sellability]] = defaultdict(list)
    labels: dict[int, list[str]] = defaultdict(list)
    through = WatchedProduct.ad_groups.through.objects.filter(
        adgroup_id__in=[group.pk for group in ad_groups], watchedproduct__enabled=True
    ).select_related("watchedproduct")
    for row in through.order_by("watchedproduct__label", "watchedproduct_id"):
        controlling[row.adgroup_id].append(stored_sellability(row.watchedproduct))
        labels[row.adgroup_id].append(row.watchedproduct.label)
    return {
        group.key: rule.AdGroupFact(
            manual_status=group.manual_status,
            manual_by=group.manual_by.get_username() if group.manual_by_id else "",
            manual_reason=group.manual_reason,
            promotions=tuple(promotions[group.key]),
            products=tuple(controlling[group.pk]),
            labels=tuple(labels[group.pk]),
        )
        for group in ad_groups
    }
