"""Watched products for tests, in the shapes a shop really has: one helper, one way."""

from automation.models import AdGroup, Product, Variant, WatchedProduct

CUSTOMER = "1234567890"


def variant(
    inventory_item_id: int,
    *,
    product_id: int | None = None,
    variant_id: int | None = None,
    title: str = "",
    tracked: bool = True,
    policy: str = Variant.Policy.DENY,
    status: str = Product.Status.ACTIVE,
) -> Variant:
    """The catalogue row of one variant (and its product, when `product_id` is given)."""
    product = None
    if product_id is not None:
        product, _ = Product.objects.get_or_create(
            product_id=product_id, defaults={"status": status, "title": f"product {product_id}"}
        )
    found, _ = Variant.objects.update_or_create(
        inventory_item_id=inventory_item_id,
        defaults={
            "product": product,
            "variant_id": variant_id,
            "title": title,
            "tracked": tracked,
            "inventory_policy": policy,
        },
    )
    return found


def ad_group(ad_group_id: str, customer_id: str = CUSTOMER, **fields) -> AdGroup:
    group, _ = AdGroup.objects.get_or_create(
        customer_id=customer_id, ad_group_id=str(ad_group_id), defaults=fields
    )
    return group


def watch(
    inventory_item_id: int | None,
    ad_group_id: str | list[str],
    *,
    label: str = "Winterzauber",
    customer_id: str = CUSTOMER,
    pause_at: int = 0,
    resume_at: int | None = None,
    enabled: bool = True,
    product_id: int | None = None,
    **group_fields,
) -> WatchedProduct:
    """A watched product controlling these ad groups.

    With an inventory item: the product counts that variant only (as a product known by one
    inventory item); with `inventory_item_id=None` and a `product_id`: all its variants.
    """
    product = WatchedProduct.objects.create(
        product_id=product_id,
        label=label,
        pause_at=pause_at,
        resume_at=resume_at,
        enabled=enabled,
    )
    if inventory_item_id is not None:
        product.variants.set([variant(inventory_item_id, product_id=product_id)])
    ids = [ad_group_id] if isinstance(ad_group_id, str) else ad_group_id
    product.ad_groups.set([ad_group(a, customer_id, **group_fields) for a in ids])
    return product
