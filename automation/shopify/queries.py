"""The Admin GraphQL queries we send and the values their answers become: `ShopifyAdmin`, the
client for one shop, with one public method per question we ask Shopify.

Every document sits beside its requested-cost formula and the vendor docs it was written from;
sending, pacing and retrying are `transport`'s. Plain values in and out; no Django here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from automation.shopify.tokens import StaticToken, TokenSource
from automation.shopify.transport import (
    API_VERSION,
    MAX_COST_EXCEEDED,
    MUTATION_COST,
    AdminTransport,
    ShopifyAdminError,
    _CostExceeded,
)

# From 2025-10 on, WebhookSubscription has a unified `uri` (input and output); `callbackUrl` and
# `endpoint` are deprecated (Shopify changelog "consolidate-webhook-graphql-surfaces").
URI_FIELD_SINCE = "2025-10"
MAX_IDS_PER_QUERY = 250  # Shopify rejects input arrays longer than 250
MAX_PAGE_SIZE = 250  # and connection pages larger than 250
SUBSCRIPTIONS_PAGE_SIZE = 100

# Topics whose REST name cannot be recovered from the enum by "the last underscore is the slash".
_IRREGULAR_TOPICS = {
    "APP_SCOPES_UPDATE": "app/scopes_update",
    "APP_SUBSCRIPTIONS_APPROACHING_CAPPED_AMOUNT": "app_subscriptions/approaching_capped_amount",
    "AUDIT_EVENTS_ADMIN_API_ACTIVITY": "audit_events/admin_api_activity",
}


@dataclass(frozen=True)
class Level:
    """One item's available stock at one location, as Shopify reports it now."""

    inventory_item_id: int
    location_id: int
    available: int | None
    updated_at: datetime  # aware, UTC


@dataclass(frozen=True)
class Subscription:
    """A webhook subscription; `topic` in REST style (`orders/create`) like the rest of our code."""

    id: str
    topic: str
    callback_url: str


@dataclass(frozen=True)
class VariantChoice:
    """A product variant found by a search, with the inventory item our watched items name."""

    variant_id: int
    inventory_item_id: int
    product_title: str
    variant_title: str
    sku: str


@dataclass(frozen=True)
class VariantInfo:
    """One variant of a watched product, as Shopify has it now.

    `inventory_policy` is lower-case like the REST webhook's (`deny`, or `continue`: Shopify keeps
    selling at 0 and below); `tracked` is InventoryItem.tracked (False: Shopify counts no stock);
    `available` is ProductVariant.inventoryQuantity where the query asked for it, else None.
    """

    variant_id: int
    inventory_item_id: int
    title: str
    sku: str  # "" where Shopify has none (its `sku` is nullable)
    tracked: bool
    inventory_policy: str
    position: int  # 1 is the first variant
    available: int | None = None


@dataclass(frozen=True)
class ProductInfo:
    """A product with all of its variants; `status` lower-case like the REST webhook's
    (`active`, `archived`, `draft`, and `unlisted` since 2025-10)."""

    product_id: int
    title: str
    status: str
    updated_at: datetime  # aware, UTC
    variants: tuple[VariantInfo, ...]


@dataclass(frozen=True)
class LocationInfo:
    """A location of the shop: whether it sells online and whether it is still active."""

    location_id: int
    name: str
    fulfills_online_orders: bool
    is_active: bool


@dataclass(frozen=True)
class ShopInfo:
    """The shop the credentials open: its numeric id and the name the merchant gave it."""

    id: int
    name: str


def topic_to_enum(topic: str) -> str:
    """`inventory_levels/update` → `INVENTORY_LEVELS_UPDATE`: GraphQL names topics by enum."""
    if "/" not in topic and topic == topic.upper():
        return topic  # already an enum name
    return re.sub(r"[/.]", "_", topic.strip()).upper()


def enum_to_topic(name: str) -> str:
    """`INVENTORY_LEVELS_UPDATE` → `inventory_levels/update`, so listings match our topics."""
    if name in _IRREGULAR_TOPICS:
        return _IRREGULAR_TOPICS[name]
    resource, _, action = name.lower().rpartition("_")
    return f"{resource}/{action}" if resource else action


def _gid(kind: str, numeric_id: int) -> str:
    """Build a global id: Shopify's GraphQL ids wrap the numeric REST ids."""
    return f"gid://shopify/{kind}/{int(numeric_id)}"


def _id_from_gid(gid: str) -> int:
    """`gid://shopify/Location/24826418` → 24826418 (ids can exceed 2**53: keep Python ints)."""
    try:
        return int(gid.rsplit("/", 1)[1].split("?", 1)[0])
    except (AttributeError, IndexError, ValueError) as err:
        raise ShopifyAdminError(f"unexpected id in Shopify answer: {gid!r}") from err


def _parse_time(value: str) -> datetime:
    """Shopify's DateTime (ISO 8601, usually with `Z`) → aware UTC datetime."""
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError) as err:
        raise ShopifyAdminError(f"unexpected timestamp in Shopify answer: {value!r}") from err
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _uses_uri(api_version: str) -> bool:
    """Whether this API version has WebhookSubscription.uri (2025-10 and later, `unstable`)."""
    return not re.fullmatch(r"\d{4}-\d{2}", api_version) or api_version >= URI_FIELD_SINCE


_LEVELS_SELECTION = """
      pageInfo { hasNextPage endCursor }
      edges {
        node {
          location { id }
          quantities(names: ["available"]) { name quantity updatedAt }
        }
      }"""

NODES_QUERY = f"""query InventoryLevels($ids: [ID!]!, $first: Int!) {{
  nodes(ids: $ids) {{
    ... on InventoryItem {{
      id
      inventoryLevels(first: $first) {{{_LEVELS_SELECTION}
      }}
    }}
  }}
}}"""

ITEM_QUERY = f"""query InventoryItemLevels($id: ID!, $first: Int!, $after: String) {{
  inventoryItem(id: $id) {{
    id
    inventoryLevels(first: $first, after: $after) {{{_LEVELS_SELECTION}
    }}
  }}
}}"""


# The `shop` query returns the Shop the credentials belong to; `id` and `name` ("The shop's
# name", String!) need no access scope beyond a working token
# (https://shopify.dev/docs/api/admin-graphql/latest/queries/shop,
# https://shopify.dev/docs/api/admin-graphql/latest/objects/Shop). An object costs 1 point.
SHOP_QUERY = "query ShopInfo { shop { id name } }"
SHOP_COST = 1

# Did the buyer pay meanwhile? `orders(query:)` filters by `checkout_token` ("Filter by the
# checkout token's unique value, which references the checkout that's associated with an
# order"), `email` and `created_at` in Shopify's search syntax, with OR and parentheses
# (https://shopify.dev/docs/api/admin-graphql/latest/queries/orders,
# https://shopify.dev/docs/api/usage/search-syntax); it needs the read_orders scope. Order has
# no checkout token field before 2026-07 (https://shopify.dev/changelog/new-checkouttoken-field-
# added-to-the-order-object), so the filter, not the answer, says which checkout matched. One
# order is enough to know: a connection of 1 costs 2 + 1 points.
ORDERS_FOR_CHECKOUT_QUERY = """query OrdersForCheckout($query: String!) {
  orders(first: 1, query: $query) { nodes { id createdAt } }
}"""
ORDERS_FOR_CHECKOUT_COST = 2 + 1
_SEARCH_QUOTED = re.compile(r'(["\\])')


def _search_value(value: str) -> str:
    """A value quoted for Shopify's search syntax, its quotes and backslashes escaped."""
    return '"' + _SEARCH_QUOTED.sub(r"\\\1", value) + '"'


def orders_for_checkout_search(token: str, email: str, since: datetime) -> str:
    """The `orders(query:)` filter: the checkout's own order, or one from its address since."""
    terms = []
    if token:
        terms.append(f"checkout_token:{_search_value(token)}")
    if email:
        stamp = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        terms.append(f"(email:{_search_value(email)} AND created_at:>={_search_value(stamp)})")
    return " OR ".join(terms)


# Picking a watched product: `productVariants(query:)` takes Shopify's search syntax; a bare term
# searches the default fields (titles, SKU), `sku:` names the SKU field, `*` is a prefix wildcard
# (https://shopify.dev/docs/api/admin-graphql/2026-07/queries/productVariants,
# https://shopify.dev/docs/api/usage/search-syntax). ProductVariant has `title`, `sku`,
# `displayName`, `product { title }` and `inventoryItem { id }`, the InventoryItem whose numeric
# id the inventory_levels/update webhook carries
# (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/ProductVariant).
VARIANT_SEARCH_QUERY = """query VariantSearch($query: String!, $first: Int!) {
  productVariants(first: $first, query: $query) {
    edges { node { id title sku product { title } inventoryItem { id } } }
  }
}"""
VARIANT_NESTED_OBJECTS = 2  # product and inventoryItem, one point each per variant
VARIANT_SEARCH_LIMIT = 10
_SEARCH_SPECIAL = re.compile(r"[\\\"'():*]")


def _search_words(text: str) -> list[str]:
    """The merchant's words without what Shopify's search syntax gives meaning.

    `:`, quotes, parentheses and `*` are dropped, and a leading `-` (the NOT modifier,
    https://shopify.dev/docs/api/usage/search-syntax), so "Kerze (rot)" or "-rot" cannot change
    what is searched; a `-` inside a word ("WZ-200") stays.
    """
    words = (word.lstrip("-") for word in _SEARCH_SPECIAL.sub(" ", text).split())
    return [word for word in words if word]


def variant_search_terms(text: str) -> str:
    """The merchant's words as a productVariants search: titles by default, or the SKU's start."""
    words = " ".join(_search_words(text))
    if not words:
        return ""
    if " " in words:
        return f'"{words}"'
    return f"{words}* OR sku:{words}*"


def product_search_terms(text: str) -> str:
    """The merchant's words as a `products` search: every word starts a word of the title, or a
    single word starts a variant's SKU.

    `products(query:)` filters by `title` (the product's title) and `sku` (any of its variants'
    SKUs), and `*` ends a prefix (https://shopify.dev/docs/api/admin-graphql/2026-07/queries/products,
    https://shopify.dev/docs/api/usage/search-syntax); terms side by side must all match. Naming
    the fields keeps the match to title and SKU and turns a typed "OR" into a word.
    """
    words = _search_words(text)
    if not words:
        return ""
    if len(words) == 1:
        return f"title:{words[0]}* OR sku:{words[0]}*"
    return " ".join(f"title:{word}*" for word in words)


# --- the catalogue: products, their variants, inventory items and locations -------------------
#
# Requested cost by Shopify's rules (an object 1, a scalar or enum 0, a connection 2 plus `first`
# times the cost of one node, a mutation 10; the most a query may request is 1,000:
# https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits#cost-calculation,
# https://shopify.dev/docs/api/usage/limits). Each formula sits by its query; `estimate_cost`
# uses it until Shopify's own `requestedQueryCost` for that shape is known.
#
# Product (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/Product): `status` is the
# ProductStatus enum ACTIVE, ARCHIVED, DRAFT, UNLISTED (UNLISTED from 2025-10 on,
# https://shopify.dev/docs/api/admin-graphql/2026-07/enums/ProductStatus); `updatedAt` DateTime!.
# ProductVariant (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/ProductVariant):
# `sku` is nullable, `position` starts at 1, `inventoryPolicy` is DENY or CONTINUE,
# `inventoryQuantity` ("the total sellable quantity of the variant") is a nullable Int, and
# `inventoryItem` is non-null; InventoryItem.tracked says whether Shopify counts its stock
# (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/InventoryItem).
_VARIANT_FIELDS = "id title sku position inventoryPolicy inventoryItem { id tracked }"
_VARIANT_COST = 2  # the variant and its inventoryItem
_PRODUCT_COST = 1 + 2  # the product and its variants connection, before the variants


def _variants_selection(stock: bool) -> str:
    """One page of a product's variants; with `inventoryQuantity` where stock is shown."""
    fields = f"{_VARIANT_FIELDS} inventoryQuantity" if stock else _VARIANT_FIELDS
    return f"""
        pageInfo {{ hasNextPage endCursor }}
        edges {{ node {{ {fields} }} }}"""


# Products by id: `nodes(ids:)` answers null for an id Shopify no longer has
# (https://shopify.dev/docs/api/admin-graphql/2026-07/queries/nodes).
# Requested: per product 3 + 2 × variants page.
PRODUCTS_QUERY = f"""query ProductsByIds($ids: [ID!]!, $variants: Int!) {{
  nodes(ids: $ids) {{
    ... on Product {{
      id
      title
      status
      updatedAt
      variants(first: $variants) {{{_variants_selection(stock=False)}
      }}
    }}
  }}
}}"""


def _product_variants_query(stock: bool) -> str:
    """The next page of one product's variants (more than the first page held).

    Requested: 3 + 2 × page (https://shopify.dev/docs/api/admin-graphql/2026-07/queries/product).
    """
    return f"""query ProductVariantsPage($id: ID!, $first: Int!, $after: String) {{
  product(id: $id) {{
    id
    variants(first: $first, after: $after) {{{_variants_selection(stock)}
    }}
  }}
}}"""


# The product picker: one search, each product with a first page of its variants and their stock.
# `sortKey: RELEVANCE` ranks by the search terms, meant for a query with `query:`
# (https://shopify.dev/docs/api/admin-graphql/2026-07/enums/ProductSortKeys). No status filter:
# drafts and archived products are found too, and the picker shows their status.
# Requested: 2 + products × (3 + 2 × variants): 10 products × 10 variants = 232 points.
PRODUCT_SEARCH_QUERY = f"""query ProductSearch($query: String!, $first: Int!, $variants: Int!) {{
  products(first: $first, query: $query, sortKey: RELEVANCE) {{
    edges {{
      node {{
        id
        title
        status
        updatedAt
        variants(first: $variants) {{{_variants_selection(stock=True)}
        }}
      }}
    }}
  }}
}}"""
PRODUCT_SEARCH_LIMIT = 10
PRODUCT_SEARCH_VARIANTS = 10  # most candles have a few; a product with more is followed up

# Which product and variant an inventory item belongs to: InventoryItem.variant is non-null
# ProductVariant!, ProductVariant.product non-null Product!
# (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/InventoryItem).
# Requested: per item 3 (the item, its variant, the product).
ITEM_PRODUCTS_QUERY = """query InventoryItemProducts($ids: [ID!]!) {
  nodes(ids: $ids) {
    ... on InventoryItem { id variant { id product { id } } }
  }
}"""
ITEM_PRODUCT_COST = 3

# Every location a level can name: `locations` "returns only active locations by default";
# `includeInactive: true` adds deactivated ones and `includeLegacy: true` the legacy locations
# of fulfillment services, both default false
# (https://shopify.dev/docs/api/admin-graphql/2026-07/queries/locations). Location has
# `name`, `isActive` and `fulfillsOnlineOrders`, all non-null
# (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/Location).
# Requested: 2 + page.
LOCATIONS_QUERY = """query Locations($first: Int!, $after: String) {
  locations(first: $first, after: $after, includeInactive: true, includeLegacy: true) {
    pageInfo { hasNextPage endCursor }
    edges { node { id name isActive fulfillsOnlineOrders } }
  }
}"""
LOCATIONS_PAGE_SIZE = 100

# Confirming a destructive webhook with the shop before acting on it. `product(id:)` is null for
# a product Shopify no longer has (https://shopify.dev/docs/api/admin-graphql/2026-07/queries/product);
# requested 1.
PRODUCT_EXISTS_QUERY = "query ProductExists($id: ID!) { product(id: $id) { id } }"
PRODUCT_EXISTS_COST = 1

# InventoryItem.inventoryLevel(locationId:) is null where the item is not stocked at the location
# (disconnected); from 2026-04 on inactive levels are left out unless `includeInactive: true`
# (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/InventoryItem,
# https://shopify.dev/changelog/add-includeinactive-argument-to-inventorylevels-and-inventorylevel-fields).
# InventoryLevel.updatedAt is non-null, InventoryQuantity.updatedAt nullable
# (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/InventoryQuantity).
# Requested: 3 (the item, the level, its quantities).
INVENTORY_LEVEL_QUERY = """query InventoryLevelAt($id: ID!, $locationId: ID!) {
  inventoryItem(id: $id) {
    id
    inventoryLevel(locationId: $locationId) {
      updatedAt
      quantities(names: ["available"]) { name quantity updatedAt }
    }
  }
}"""
INVENTORY_LEVEL_COST = 3


def _subscriptions_query(uri: bool) -> str:
    """The listing query for the version's schema: `uri`, or the older HTTP endpoint union."""
    target = "uri" if uri else "endpoint { __typename ... on WebhookHttpEndpoint { callbackUrl } }"
    return f"""query WebhookSubscriptions($first: Int!, $after: String) {{
  webhookSubscriptions(first: $first, after: $after) {{
    pageInfo {{ hasNextPage endCursor }}
    edges {{ node {{ id topic {target} }} }}
  }}
}}"""


def _create_mutation(uri: bool) -> str:
    """webhookSubscriptionCreate returning the same fields as the listing."""
    target = "uri" if uri else "endpoint { __typename ... on WebhookHttpEndpoint { callbackUrl } }"
    return f"""mutation WebhookSubscriptionCreate(
  $topic: WebhookSubscriptionTopic!, $webhookSubscription: WebhookSubscriptionInput!
) {{
  webhookSubscriptionCreate(topic: $topic, webhookSubscription: $webhookSubscription) {{
    webhookSubscription {{ id topic {target} }}
    userErrors {{ field message }}
  }}
}}"""


def _product(node: dict[str, Any], variants: list[VariantInfo]) -> ProductInfo:
    """A Product node and its variants → ProductInfo (status lower-case like the REST webhook)."""
    return ProductInfo(
        product_id=_id_from_gid(node.get("id")),
        title=str(node.get("title") or ""),
        status=str(node.get("status") or "").lower(),
        updated_at=_parse_time(node.get("updatedAt")),
        variants=tuple(variants),
    )


class ShopifyAdmin(AdminTransport):
    """Admin GraphQL client for one shop that stays inside the cost bucket instead of hitting it."""

    def __init__(
        self,
        base_url: str,
        token: str | TokenSource,
        api_version: str = API_VERSION,
        *,
        batch_size: int = 50,
        levels_per_item: int = 50,
        variants_per_product: int = 50,
        **transport: Any,
    ) -> None:
        """`transport`: the session, timeout, clock, cost cap and retries (`AdminTransport`)."""
        if not 1 <= batch_size <= MAX_IDS_PER_QUERY:
            raise ValueError(f"batch_size must be 1..{MAX_IDS_PER_QUERY}, got {batch_size}")
        if not 1 <= levels_per_item <= MAX_PAGE_SIZE:
            raise ValueError(f"levels_per_item must be 1..{MAX_PAGE_SIZE}, got {levels_per_item}")
        if not 1 <= variants_per_product <= MAX_PAGE_SIZE:
            raise ValueError(
                f"variants_per_product must be 1..{MAX_PAGE_SIZE}, got {variants_per_product}"
            )
        tokens = StaticToken(token) if isinstance(token, str) else token
        super().__init__(base_url, tokens, api_version, **transport)
        self.batch_size = batch_size
        self.levels_per_item = levels_per_item
        self.variants_per_product = variants_per_product
        self.skipped = 0  # levels without an `available` timestamp, left out
        # (item, location) of those: the location still stocks the item, its level is unknown
        self.undated: set[tuple[int, int]] = set()
        self.missing = 0  # requested items Shopify no longer has (null node)
        # Products Shopify answered null for (deleted, never existed or not a product) when
        # asked by id or for a further page of variants, over this client's life.
        self.deleted_products: set[int] = set()
        self._most_levels = 0  # most levels one item has had so far: sizes the next pages
        self._most_variants = 0  # likewise for the variants of a product

    def close(self) -> None:
        """Release pooled connections."""
        self._session.close()

    def _execute(
        self,
        query: str,
        variables: dict[str, Any],
        *,
        kind: str,
        count: int = 1,
        first: int = 0,
        mutation: bool = False,
    ) -> dict[str, Any]:
        """One GraphQL operation, priced here (`estimate_cost`) and sent by the transport."""
        return self._send_operation(
            query,
            variables,
            kind=kind,
            estimate=self.estimate_cost(kind, count, first),
            count=count,
            first=first,
            mutation=mutation,
        )

    # --- inventory -------------------------------------------------------------------------

    def fetch_levels(self, inventory_item_ids: Sequence[int]) -> Iterator[Level]:
        """Every level of the given items (the source of truth for the nightly reconcile)."""
        ids = list(dict.fromkeys(int(item_id) for item_id in inventory_item_ids))
        for start in range(0, len(ids), self.batch_size):
            yield from self._fetch_batch(ids[start : start + self.batch_size])

    def page_size(self) -> int:
        """Levels to ask for per item in a batch: twice the most seen so far, at most the cap.

        Why not always `levels_per_item`: Shopify must find the *requested* cost in the bucket,
        and every requested slot counts, so asking for 50 levels when items have 3 shrinks batches
        and leaves the bucket idle. Items with more levels than the page are followed up.
        """
        if not self._most_levels:
            return self.levels_per_item
        return min(self.levels_per_item, 2 * self._most_levels)

    def _fetch_batch(self, ids: list[int]) -> Iterator[Level]:
        """One batch of items: their first pages of levels, then the rest of any longer item."""
        for batch, _first, nodes in self._nodes_within_cost(
            ids,
            NODES_QUERY,
            "InventoryItem",
            kind="nodes",
            page=self.page_size,
            page_variable="first",
        ):
            more: list[tuple[int, str, int]] = []
            for item_id, node in zip(batch, nodes, strict=True):
                if not node or "inventoryLevels" not in node:
                    self.missing += 1  # deleted (null) or not an InventoryItem
                    continue
                connection = node["inventoryLevels"] or {}
                yield from self._levels(item_id, connection)
                count = len(connection.get("edges") or [])
                cursor = self._next_cursor(connection)
                if cursor:
                    more.append((item_id, cursor, count))
                else:
                    self._most_levels = max(self._most_levels, count)
            for item_id, cursor, count in more:
                yield from self._follow_item(item_id, cursor, count)

    def _nodes_within_cost(
        self,
        ids: list[int],
        query: str,
        gid_type: str,
        *,
        kind: str,
        page: Callable[[], int] | None = None,
        page_variable: str = "",
    ) -> Iterator[tuple[list[int], int, list[Any]]]:
        """(ids, page size, nodes) for each `nodes(ids:)` query that fits the cost limit.

        Halves `ids` while the estimated cost is over the limit, and once more when Shopify
        refuses a query as too expensive (the refusal teaches the cost). `page` is asked anew
        for every query, after the caller handled the one before: page sizes follow what the
        shop's objects turned out to have.
        """
        first = page() if page else 0
        if len(ids) > 1 and self.estimate_cost(kind, len(ids), first) > self._cost_limit():
            half = len(ids) // 2
            yield from self._nodes_within_cost(
                ids[:half], query, gid_type, kind=kind, page=page, page_variable=page_variable
            )
            yield from self._nodes_within_cost(
                ids[half:], query, gid_type, kind=kind, page=page, page_variable=page_variable
            )
            return
        variables: dict[str, Any] = {"ids": [_gid(gid_type, object_id) for object_id in ids]}
        if page_variable:
            variables[page_variable] = first
        try:
            data = self._execute(query, variables, kind=kind, count=len(ids), first=first)
        except _CostExceeded as err:
            if len(ids) == 1:
                raise ShopifyAdminError(
                    f"one {gid_type} with a page of {first} exceeds the query cost limit",
                    code=MAX_COST_EXCEEDED,
                ) from err
            yield from self._nodes_within_cost(
                ids, query, gid_type, kind=kind, page=page, page_variable=page_variable
            )
            return
        nodes = data.get("nodes")
        if not isinstance(nodes, list) or len(nodes) != len(ids):
            raise ShopifyAdminError("unexpected answer to nodes(ids:): wrong number of nodes")
        yield ids, first, nodes

    def _follow_item(self, item_id: int, cursor: str, count: int) -> Iterator[Level]:
        """Page through one item's remaining levels (more locations than one page holds)."""
        first = self.levels_per_item
        while cursor:
            variables = {"id": _gid("InventoryItem", item_id), "first": first, "after": cursor}
            try:
                data = self._execute(ITEM_QUERY, variables, kind="item", count=1, first=first)
            except _CostExceeded as err:
                raise ShopifyAdminError(
                    f"levels_per_item={first} exceeds the query cost limit"
                ) from err
            item = data.get("inventoryItem")
            if not item:
                self.missing += 1  # deleted between two pages
                return
            connection = item.get("inventoryLevels") or {}
            yield from self._levels(item_id, connection)
            count += len(connection.get("edges") or [])
            cursor = self._next_cursor(connection)
        self._most_levels = max(self._most_levels, count)

    @staticmethod
    def _next_cursor(connection: dict[str, Any]) -> str | None:
        """The cursor to continue from, or None on the last page."""
        page = connection.get("pageInfo") or {}
        return page.get("endCursor") if page.get("hasNextPage") else None

    def _levels(self, item_id: int, connection: dict[str, Any]) -> Iterator[Level]:
        """Turn one page of InventoryLevel edges into Levels; undated ones are counted, not kept."""
        for edge in connection.get("edges") or []:
            node = (edge or {}).get("node") or {}
            location = (node.get("location") or {}).get("id")
            quantity = next(
                (q for q in node.get("quantities") or [] if q and q.get("name") == "available"),
                None,
            )
            updated_at = quantity.get("updatedAt") if quantity else None
            if not location or not updated_at:
                self.skipped += 1  # without a timestamp the stale guard cannot use it
                if location:
                    self.undated.add((item_id, _id_from_gid(location)))
                continue
            yield Level(
                inventory_item_id=item_id,
                location_id=_id_from_gid(location),
                available=quantity.get("quantity"),
                updated_at=_parse_time(updated_at),
            )

    def inventory_level(self, inventory_item_id: int, location_id: int) -> Level | None:
        """The item's level at the location now, or None where Shopify has none (the item is not
        stocked there, or is gone): confirms an inventory_levels/disconnect before acting on it.

        The level's `updatedAt` stands in where the quantity has no timestamp of its own.
        """
        variables = {
            "id": _gid("InventoryItem", inventory_item_id),
            "locationId": _gid("Location", location_id),
        }
        data = self._execute(INVENTORY_LEVEL_QUERY, variables, kind="inventory_level")
        level = (data.get("inventoryItem") or {}).get("inventoryLevel")
        if not level:
            return None
        quantity = next(
            (q for q in level.get("quantities") or [] if q and q.get("name") == "available"), {}
        )
        updated_at = quantity.get("updatedAt") or level.get("updatedAt")
        if not updated_at:
            raise ShopifyAdminError("unexpected answer to inventoryLevel: no updatedAt")
        return Level(
            inventory_item_id=int(inventory_item_id),
            location_id=int(location_id),
            available=quantity.get("quantity"),
            updated_at=_parse_time(updated_at),
        )

    def fetch_item_products(self, inventory_item_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """Inventory item id → (product id, variant id), for rows that know only the item.

        Items Shopify no longer has are left out and counted in `missing`.
        """
        ids = list(dict.fromkeys(int(item_id) for item_id in inventory_item_ids))
        found: dict[int, tuple[int, int]] = {}
        for start in range(0, len(ids), self.batch_size):
            for batch, _first, nodes in self._nodes_within_cost(
                ids[start : start + self.batch_size],
                ITEM_PRODUCTS_QUERY,
                "InventoryItem",
                kind="item_products",
            ):
                for item_id, node in zip(batch, nodes, strict=True):
                    variant = (node or {}).get("variant") or {}
                    product = variant.get("product") or {}
                    if not variant.get("id") or not product.get("id"):
                        self.missing += 1  # deleted (null) or not an InventoryItem
                        continue
                    found[item_id] = (_id_from_gid(product["id"]), _id_from_gid(variant["id"]))
        return found

    # --- products --------------------------------------------------------------------------

    def fetch_products(self, product_ids: Sequence[int]) -> Iterator[ProductInfo]:
        """Each product with all of its variants, in no particular order.

        A product Shopify answers null for (deleted, or never one) is not yielded: its id goes
        to `deleted_products`, also when it disappears between two pages of its variants.
        """
        ids = list(dict.fromkeys(int(product_id) for product_id in product_ids))
        for start in range(0, len(ids), self.batch_size):
            for batch, _first, nodes in self._nodes_within_cost(
                ids[start : start + self.batch_size],
                PRODUCTS_QUERY,
                "Product",
                kind="products",
                page=self.variants_page_size,
                page_variable="variants",
            ):
                more: list[tuple[dict[str, Any], list[VariantInfo], str]] = []
                for product_id, node in zip(batch, nodes, strict=True):
                    if not node or "variants" not in node:
                        self.deleted_products.add(product_id)
                        continue
                    connection = node["variants"] or {}
                    variants = self._variants(connection, stock=False)
                    cursor = self._next_cursor(connection)
                    if cursor:
                        more.append((node, variants, cursor))
                        continue
                    self._most_variants = max(self._most_variants, len(variants))
                    yield _product(node, variants)
                for node, variants, cursor in more:
                    product = self._follow_product(node, variants, cursor, stock=False)
                    if product is not None:
                        yield product

    def variants_page_size(self) -> int:
        """Variants to ask for per product in a batch: twice the most seen so far, at most the
        cap (why not always the cap: see `page_size`)."""
        if not self._most_variants:
            return self.variants_per_product
        return min(self.variants_per_product, 2 * self._most_variants)

    def search_products(self, text: str, first: int = PRODUCT_SEARCH_LIMIT) -> list[ProductInfo]:
        """Products whose title or a variant's SKU matches `text`, each with all its variants and
        their total stock (`available`), for the product picker: one search, a follow-up only
        for a product with more than PRODUCT_SEARCH_VARIANTS variants."""
        terms = product_search_terms(text)
        if not terms:
            return []
        variants_first = PRODUCT_SEARCH_VARIANTS
        variables = {"query": terms, "first": first, "variants": variants_first}
        data = self._execute(
            PRODUCT_SEARCH_QUERY,
            variables,
            kind="product_search",
            count=first,
            first=variants_first,
        )
        connection = data.get("products")
        if not isinstance(connection, dict):
            raise ShopifyAdminError("unexpected answer to products: no connection")
        found: list[ProductInfo] = []
        for edge in connection.get("edges") or []:
            node = (edge or {}).get("node") or {}
            if not node.get("id"):
                continue
            page = node.get("variants") or {}
            variants = self._variants(page, stock=True)
            cursor = self._next_cursor(page)
            product = (
                self._follow_product(node, variants, cursor, stock=True)
                if cursor
                else _product(node, variants)
            )
            if product is not None:
                found.append(product)
        return found

    def product_exists(self, product_id: int) -> bool:
        """Whether Shopify still has the product: confirms a products/delete before acting."""
        variables = {"id": _gid("Product", product_id)}
        data = self._execute(PRODUCT_EXISTS_QUERY, variables, kind="product_exists")
        return bool((data.get("product") or {}).get("id"))

    def _follow_product(
        self, node: dict[str, Any], variants: list[VariantInfo], cursor: str, *, stock: bool
    ) -> ProductInfo | None:
        """Page through one product's remaining variants; None if it vanished meanwhile."""
        product_id = _id_from_gid(node["id"])
        first = self.variants_per_product
        query = _product_variants_query(stock)
        next_cursor: str | None = cursor
        while next_cursor:
            variables = {"id": _gid("Product", product_id), "first": first, "after": next_cursor}
            data = self._execute(query, variables, kind="product_variants", first=first)
            product = data.get("product")
            if not product:
                self.deleted_products.add(product_id)  # deleted between two pages
                return None
            page = product.get("variants") or {}
            variants.extend(self._variants(page, stock=stock))
            next_cursor = self._next_cursor(page)
        self._most_variants = max(self._most_variants, len(variants))
        return _product(node, variants)

    @staticmethod
    def _variants(connection: dict[str, Any], *, stock: bool) -> list[VariantInfo]:
        """One page of ProductVariant edges → VariantInfo (policy lower-case, `sku` "" if null)."""
        found = []
        for edge in connection.get("edges") or []:
            node = (edge or {}).get("node") or {}
            item = node.get("inventoryItem") or {}
            if not node.get("id") or not item.get("id"):
                raise ShopifyAdminError(f"unexpected variant in Shopify answer: {node!r}"[:300])
            available = node.get("inventoryQuantity") if stock else None
            found.append(
                VariantInfo(
                    variant_id=_id_from_gid(node["id"]),
                    inventory_item_id=_id_from_gid(item["id"]),
                    title=str(node.get("title") or ""),
                    sku=str(node.get("sku") or ""),
                    tracked=bool(item.get("tracked")),
                    inventory_policy=str(node.get("inventoryPolicy") or "").lower(),
                    position=int(node.get("position") or 0),
                    available=available if isinstance(available, int) else None,
                )
            )
        return found

    # --- locations -------------------------------------------------------------------------

    def fetch_locations(self) -> list[LocationInfo]:
        """Every location of the shop, deactivated ones and legacy fulfillment-service ones
        included (Shopify lists neither by default): any location a level can name."""
        found: list[LocationInfo] = []
        cursor: str | None = None
        while True:
            variables = {"first": LOCATIONS_PAGE_SIZE, "after": cursor}
            data = self._execute(
                LOCATIONS_QUERY, variables, kind="locations", first=LOCATIONS_PAGE_SIZE
            )
            connection = data.get("locations")
            if not isinstance(connection, dict):
                raise ShopifyAdminError("unexpected answer to locations: no connection")
            for edge in connection.get("edges") or []:
                node = (edge or {}).get("node") or {}
                found.append(
                    LocationInfo(
                        location_id=_id_from_gid(node.get("id")),
                        name=str(node.get("name") or ""),
                        fulfills_online_orders=bool(node.get("fulfillsOnlineOrders")),
                        is_active=bool(node.get("isActive")),
                    )
                )
            cursor = self._next_cursor(connection)
            if not cursor:
                return found

    # --- the shop --------------------------------------------------------------------------

    def shop_info(self) -> ShopInfo:
        """The shop these credentials open, read-only: whether our access works, and for whom.

        The cheapest question the Admin API answers with any valid token; a refused token
        raises ShopifyAdminError with its HTTP status (401/403 once the app was uninstalled).
        """
        data = self._execute(SHOP_QUERY, {}, kind="shop")
        shop = data.get("shop")
        if not isinstance(shop, dict) or not str(shop.get("id", "")).startswith(
            "gid://shopify/Shop/"
        ):
            raise ShopifyAdminError(f"unexpected shop in Shopify answer: {shop!r}"[:300])
        name = shop.get("name")
        return ShopInfo(id=_id_from_gid(shop["id"]), name=name if isinstance(name, str) else "")

    def order_for_checkout(self, token: str, email: str, since: datetime) -> str | None:
        """The gid of an order for this checkout, or from its address since `since`; None when
        Shopify has none. Raises ShopifyAdminError when Shopify cannot answer."""
        search = orders_for_checkout_search(token, email, since)
        if not search:
            raise ValueError("a checkout token or an e-mail address is needed")
        data = self._execute(ORDERS_FOR_CHECKOUT_QUERY, {"query": search}, kind="orders")
        connection = data.get("orders")
        nodes = connection.get("nodes") if isinstance(connection, dict) else None
        if not isinstance(nodes, list):
            raise ShopifyAdminError("unexpected answer to orders: no nodes")
        for node in nodes:
            if isinstance(node, dict) and str(node.get("id", "")).startswith(
                "gid://shopify/Order/"
            ):
                return str(node["id"])
        return None

    # --- picking a product ---------------------------------------------------------------

    def search_variants(self, text: str, first: int = VARIANT_SEARCH_LIMIT) -> list[VariantChoice]:
        """Variants whose product title, variant title or SKU matches `text` (for the picker)."""
        terms = variant_search_terms(text)
        if not terms:
            return []
        variables = {"query": terms, "first": first}
        data = self._execute(VARIANT_SEARCH_QUERY, variables, kind="variants", first=first)
        connection = data.get("productVariants")
        if not isinstance(connection, dict):
            raise ShopifyAdminError("unexpected answer to productVariants: no connection")
        found = []
        for edge in connection.get("edges") or []:
            node = (edge or {}).get("node") or {}
            item = (node.get("inventoryItem") or {}).get("id")
            if not node.get("id") or not item:
                continue  # a variant without an inventory item cannot be watched
            found.append(
                VariantChoice(
                    variant_id=_id_from_gid(node["id"]),
                    inventory_item_id=_id_from_gid(item),
                    product_title=str((node.get("product") or {}).get("title") or ""),
                    variant_title=str(node.get("title") or ""),
                    sku=str(node.get("sku") or ""),
                )
            )
        return found

    # --- webhooks --------------------------------------------------------------------------

    def list_webhook_subscriptions(self) -> list[Subscription]:
        """All of the app's webhook subscriptions on this shop (to find missing ones)."""
        uri = _uses_uri(self.api_version)
        query = _subscriptions_query(uri)
        found: list[Subscription] = []
        cursor: str | None = None
        while True:
            variables = {"first": SUBSCRIPTIONS_PAGE_SIZE, "after": cursor}
            data = self._execute(
                query, variables, kind="subscriptions", count=1, first=SUBSCRIPTIONS_PAGE_SIZE
            )
            connection = data.get("webhookSubscriptions") or {}
            for edge in connection.get("edges") or []:
                found.append(self._subscription((edge or {}).get("node") or {}))
            cursor = self._next_cursor(connection)
            if not cursor:
                return found

    def create_webhook_subscription(self, topic: str, callback_url: str) -> Subscription:
        """Subscribe `callback_url` (HTTPS) to `topic`; Shopify's userErrors become our error."""
        uri = _uses_uri(self.api_version)
        variables = {
            "topic": topic_to_enum(topic),
            "webhookSubscription": {
                "uri" if uri else "callbackUrl": callback_url,
                "format": "JSON",
            },
        }
        data = self._execute(_create_mutation(uri), variables, kind="create", mutation=True)
        payload = data.get("webhookSubscriptionCreate") or {}
        user_errors = payload.get("userErrors") or []
        if user_errors:
            text = "; ".join(
                f"{'.'.join(map(str, e.get('field') or [])) or '-'}: {e.get('message')}"
                for e in user_errors
            )
            raise ShopifyAdminError(f"webhookSubscriptionCreate refused: {text}"[:300])
        node = payload.get("webhookSubscription")
        if not node:
            raise ShopifyAdminError("webhookSubscriptionCreate returned no subscription")
        return self._subscription(node)

    @staticmethod
    def _subscription(node: dict[str, Any]) -> Subscription:
        """A listing/creation node → Subscription, whichever endpoint field the version has."""
        if "uri" in node:
            url = node.get("uri") or ""
        else:
            url = (node.get("endpoint") or {}).get("callbackUrl") or ""
        return Subscription(
            id=str(node.get("id", "")),
            topic=enum_to_topic(str(node.get("topic", ""))),
            callback_url=url,
        )

    # --- cost model ------------------------------------------------------------------------

    def estimate_cost(self, kind: str, count: int, first: int = 0) -> int:
        """Requested cost of a query before sending it: what Shopify said before, else its formula.

        `count` is the number of ids asked (products per page for `product_search`), `first`
        the page size of the innermost connection. Once answers for the same kind and page size
        are known, Shopify's own numbers (learned by the transport) replace the formula
        (`_formula_cost`).
        """
        seen = self._costs.get((kind, first))
        if seen:
            if count in seen:
                return seen[count]
            if len(seen) >= 2:
                low, high = min(seen), max(seen)
                slope = (seen[high] - seen[low]) / (high - low)
                return max(1, math.ceil(seen[low] + slope * (count - low)))
            ((known, cost),) = seen.items()
            return max(1, math.ceil(cost * count / known))
        return self._formula_cost(kind, count, first)

    def _formula_cost(self, kind: str, count: int, first: int) -> int:
        """Requested cost of a query of `kind` by Shopify's documented rules.

        An object costs 1, a scalar 0, a connection 2 plus the page size times one node's cost, a
        mutation 10; each query's formula is written by it. `estimate_cost` uses this until
        Shopify's answers replace it with their own numbers.
        """
        if kind == "nodes":
            return count * (1 + 2 + first)
        if kind == "item":
            return 1 + 2 + first
        if kind == "subscriptions":
            return 2 + first
        if kind == "shop":
            return SHOP_COST
        if kind == "orders":
            return ORDERS_FOR_CHECKOUT_COST
        if kind == "variants":
            return 2 + first * (1 + VARIANT_NESTED_OBJECTS)
        if kind == "products":
            return count * (_PRODUCT_COST + first * _VARIANT_COST)
        if kind == "product_variants":
            return _PRODUCT_COST + first * _VARIANT_COST
        if kind == "product_search":
            return 2 + count * (_PRODUCT_COST + first * _VARIANT_COST)
        if kind == "item_products":
            return count * ITEM_PRODUCT_COST
        if kind == "locations":
            return 2 + first
        if kind == "product_exists":
            return PRODUCT_EXISTS_COST
        if kind == "inventory_level":
            return INVENTORY_LEVEL_COST
        return MUTATION_COST
