"""What the rule needs, read from the database in a fixed number of queries.

`product_facts` gathers each watched product's counted variants with their levels and
locations; `ad_group_facts` gathers, per ad group, its manual state, the promotions that list
it and the last decision of every watched product that controls it. `watching` answers which
watched products an inventory item belongs to.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
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
from automation.models.catalogue import location_counted, location_name, variant_name
from automation.platform import rows
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
    """`watching_query`'s pks, ascending (written out: it runs for every stock level)."""
    where, params = watching_condition(inventory_item_ids)
    found = rows.execute(
        f"SELECT w.id FROM {rows.table(WatchedProduct)} w WHERE {where} ORDER BY w.id",  # noqa: S608
        params,
    )
    return [pk for (pk,) in found]


def watching_condition(inventory_item_ids: Iterable[int]) -> tuple[str, list]:
    """`watching_query` as a written-out condition on watched products `w`, with its
    parameters: a stock level's job asks it once, and the ORM's compiling of the same query
    cost more than the rest of the job's reads (docs/PERFORMANCE.md, "The stock path written
    out")."""
    items = sorted(set(inventory_item_ids))
    chosen_items, chosen_params = rows.among("v.inventory_item_id", items)
    whole_items, whole_params = rows.among("v.inventory_item_id", items)
    chosen_table = rows.table(WatchedProduct.variants.through)
    variant, product = rows.table(Variant), rows.table(Product)
    condition = (
        "w.enabled AND ("  # noqa: S608 (model names; values as parameters)
        f"EXISTS (SELECT 1 FROM {chosen_table} t JOIN {variant} v ON v.id = t.variant_id "
        f"WHERE t.watchedproduct_id = w.id AND {chosen_items} AND v.deleted_at IS NULL) "
        f"OR (NOT EXISTS (SELECT 1 FROM {chosen_table} t WHERE t.watchedproduct_id = w.id) "
        f"AND w.product_id IN (SELECT p.product_id FROM {variant} v "
        f"JOIN {product} p ON p.id = v.product_id WHERE {whole_items} AND v.deleted_at IS NULL)))"
    )
    return condition, [*chosen_params, *whole_params]


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
    whole_ids = {p.product_id for p in products if p.product_id and p.pk not in with_subset}
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
    """Each watched product as the rule sees it (keyed by its pk): its Shopify status and its
    counted variants (`counted_variants`) with their levels and locations, in one written-out
    statement, since every stock level's job asks it (docs/PERFORMANCE.md, "The stock path
    written out")."""
    if not products:
        return {}
    statuses: dict[int, str] = {}
    counted: dict[int, dict[tuple[int, int], _CountedVariant]] = defaultdict(dict)
    for row in rows.execute(*_product_facts_statement([product.pk for product in products])):
        pk, status, variant_pk, position, title, sku, item, tracked, policy = row[:9]
        location_id, available, location_pk, name, counting, fulfills, active = row[9:]
        statuses[pk] = status or rule.UNKNOWN_STATUS
        if variant_pk is None:
            continue
        variant = counted[pk].get((position, variant_pk))
        if variant is None:
            variant = counted[pk][(position, variant_pk)] = _CountedVariant(
                variant_name(title, sku, item), bool(tracked), policy == Variant.Policy.CONTINUE
            )
        if location_id is None:
            continue
        if location_pk is None:  # a location Shopify has not described to us yet counts
            variant.levels.append(rule.LevelFact(location_name("", location_id), available))
            continue
        counts = location_counted(counting, _boolean(fulfills), _boolean(active))
        variant.levels.append(rule.LevelFact(location_name(name, location_id), available, counts))
    return {
        product.pk: rule.ProductFact(
            label=product.label,
            pause_at=product.pause_at,
            resume_at=product.resume_level,
            was_sellable=product.sellable,
            status=statuses.get(product.pk, rule.UNKNOWN_STATUS),
            variants=tuple(
                rule.VariantFact(
                    variant.name, variant.tracked, variant.keeps_selling, tuple(variant.levels)
                )
                for _, variant in sorted(counted[product.pk].items())
            ),
        )
        for product in products
    }


@dataclass
class _CountedVariant:
    name: str
    tracked: bool
    keeps_selling: bool
    levels: list[rule.LevelFact] = field(default_factory=list)


def _boolean(value: object) -> bool | None:
    """A nullable boolean column as read (SQLite gives 0 and 1)."""
    return None if value is None else bool(value)


def _product_facts_statement(pks: list[int]) -> tuple[str, list]:
    """One row per (watched product, counted variant, level), or one per product without any:
    the chosen variants, else all of the product's; their levels; each level's location."""
    watched, chosen_table = rows.table(WatchedProduct), rows.table(WatchedProduct.variants.through)
    variant, product = rows.table(Variant), rows.table(Product)
    level, location = rows.table(StockLevel), rows.table(Location)
    outer, outer_params = rows.among("w.id", pks)
    chosen, chosen_params = rows.among("t.watchedproduct_id", pks)
    whole, whole_params = rows.among("w2.id", pks)
    columns = "v.id, v.position, v.title, v.sku, v.inventory_item_id, v.tracked, v.inventory_policy"
    sql = (
        "SELECT w.id, p.status, c.id, c.position, c.title, c.sku, c.inventory_item_id, "  # noqa: S608
        "c.tracked, c.inventory_policy, l.location_id, l.available, loc.id, loc.name, "
        "loc.counting, loc.fulfills_online_orders, loc.is_active "
        f"FROM {watched} w LEFT JOIN {product} p ON p.product_id = w.product_id "
        f"LEFT JOIN (SELECT t.watchedproduct_id AS wid, {columns} FROM {chosen_table} t "
        f"JOIN {variant} v ON v.id = t.variant_id WHERE {chosen} AND v.deleted_at IS NULL "
        f"UNION ALL SELECT w2.id AS wid, {columns} FROM {watched} w2 "
        f"JOIN {product} p2 ON p2.product_id = w2.product_id "
        f"JOIN {variant} v ON v.product_id = p2.id WHERE {whole} AND v.deleted_at IS NULL "
        f"AND NOT EXISTS (SELECT 1 FROM {chosen_table} t2 WHERE t2.watchedproduct_id = w2.id)"
        ") c ON c.wid = w.id "
        f"LEFT JOIN {level} l ON l.inventory_item_id = c.inventory_item_id "
        f"LEFT JOIN {location} loc ON loc.location_id = l.location_id "
        f"WHERE {outer} ORDER BY w.id, c.position, c.id, l.location_id"
    )
    return sql, [*chosen_params, *whole_params, *outer_params]


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
    for group_pk, product in _controlling(ad_groups):
        controlling[group_pk].append(stored_sellability(product))
        labels[group_pk].append(product.label)
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


def _controlling(ad_groups: Sequence[AdGroup]) -> list[tuple[int, WatchedProduct]]:
    """(ad group pk, enabled watched product controlling it) pairs, by label. Ad groups
    locked by `apply.settle` know them already (`controlling`)."""
    pairs, unknown = [], []
    for group in ad_groups:
        if hasattr(group, "controlling"):
            pairs += [(group.pk, product) for product in group.controlling]
        else:
            unknown.append(group.pk)
    return pairs + _read_controlling(unknown)


def _read_controlling(ad_group_pks: list[int]) -> list[tuple[int, WatchedProduct]]:
    if not ad_group_pks:
        return []
    through = rows.table(WatchedProduct.ad_groups.through)
    where, params = rows.among("t.adgroup_id", ad_group_pks)
    found = rows.execute(
        f"SELECT t.adgroup_id, {rows.columns(WatchedProduct, 'w')} FROM {through} t "  # noqa: S608
        f"JOIN {rows.table(WatchedProduct)} w ON w.id = t.watchedproduct_id "
        f"WHERE {where} AND w.enabled ORDER BY w.label, w.id",
        params,
    )
    return [(row[0], rows.load(WatchedProduct, row[1:])) for row in found]
