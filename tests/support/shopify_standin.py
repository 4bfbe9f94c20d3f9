"""A local Shopify Admin GraphQL stand-in on pytest-httpserver (werkzeug), cost bucket included.

Why: the adapter's point is pacing itself by Shopify's calculated query cost, so the stand-in
meters every query the way Shopify does and answers THROTTLED when the bucket is short.

It understands just enough GraphQL: the query's root field (the first field of its selection,
one of ROOT_FIELDS), the type a `nodes` query asks for (`... on Product`), the page sizes of its
connections (`first:`, literal or variable), a few literal arguments (`includeInactive: true`)
and the variables. Answers carry only the shapes below, each as the shopify.dev page cited by
the code that builds it: ids as gids (`gid://shopify/Product/1`), enums upper-case (`ACTIVE`,
`DENY`), `sku` null where a variant has none, real opaque cursors.

Cost formula (Shopify's documented rules: an object costs 1, a scalar or enum 0, a connection 2
plus `first` times the cost of one node, a mutation 10,
https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits#cost-calculation; requested
cost from page sizes, actual cost from what was returned; an object answered null costs 0).
The inventory-level roots do not charge the objects nested in a level (`location`,
`quantities`), a simplification they always had: the adapter learns real costs from
`requestedQueryCost`.

    nodes(ids:) { ... on InventoryItem { inventoryLevels(first: F) } }
        requested = Σ ids   (1 + 2 + F)            actual = Σ found items (1 + 2 + levels returned)
    inventoryItem(id:) { inventoryLevels(first: F, after:) }
        requested = 1 + 2 + F                      actual = 1 + 2 + levels returned (0 if deleted)
    inventoryItem(id:) { inventoryLevel(locationId:) { quantities } }
        requested = 3                              actual = 3, 1 without the level, 0 without item
    nodes(ids:) { ... on InventoryItem { variant { product } } }
        requested = Σ ids 3                        actual = Σ found items 3
    nodes(ids:) { ... on Product { variants(first: V) { ... inventoryItem } } }
        requested = Σ ids (3 + 2 V)                actual = Σ found products (3 + 2 × variants)
    product(id:) { variants(first: V, after:) { ... inventoryItem } }
        requested = 3 + 2 V                        actual = 3 + 2 × variants returned (0 if gone)
    product(id:) { id }                            requested = 1, actual = 1 (0 if gone)
    products(first: P, query:) { variants(first: V) { ... inventoryItem } }
        requested = 2 + P (3 + 2 V)                actual = 2 + Σ products (3 + 2 × variants)
    locations(first: F)                            requested = 2 + F, actual = 2 + returned
    webhookSubscriptions(first: F)
        requested = 2 + F                          actual = 2 + subscriptions returned
    webhookSubscriptionCreate                      requested = actual = 10
    shop { id name }                               requested = actual = 1
    productVariants(first: F, query:) { ... product inventoryItem }
        requested = 2 + 3 F                        actual = 2 + 3 × variants returned
    orders(first: F, query:) { nodes { id createdAt } }
        requested = 2 + F                          actual = 2 + orders returned

The catalogue: `products` (add_product, or add_variant for a picker test) with their variants,
each variant's inventory item `tracked` or not and its `inventoryPolicy`; an item's levels
(add_item) give its variant's `inventoryQuantity` (the sum of `available` at active locations).
`locations` (add_location) have a name, `fulfillsOnlineOrders` and `isActive`; `locations`
leaves out deactivated ones unless `includeInactive: true`, legacy fulfillment-service ones
unless `includeLegacy: true` (https://shopify.dev/docs/api/admin-graphql/2026-07/queries/locations).
`products(query:)` understands `title:`, `sku:` (any variant's), bare terms, `*` prefixes, AND
by juxtaposition and OR (https://shopify.dev/docs/api/usage/search-syntax), and answers in
catalogue order (Shopify's RELEVANCE order is not modelled).

Bucket (leaky, real clock unless a clock is injected): it starts full; a query runs only if the
bucket holds its requested cost, and then loses its actual cost (Shopify deducts requested and
refunds the difference). A query requesting more than `max_query_cost` gets MAX_COST_EXCEEDED.

Access: the static `token` (apps created in the Shopify admin; pass token="" to switch it off),
and, when `client_id` is set, the client credentials grant at /admin/oauth/access_token, whose
tokens really expire `token_lifetime` seconds (86399 by default, as Shopify documents) after
they were issued, on the stand-in's clock. An unknown or expired token gets Shopify's 401.

Orders (add_order): `orders(query:)` understands the filter our adapter writes and nothing
else: `checkout_token:"…"`, `email:"…"` with `created_at:>="…"`, joined by AND inside
parentheses and by OR (https://shopify.dev/docs/api/admin-graphql/latest/queries/orders,
https://shopify.dev/docs/api/usage/search-syntax); e-mail compares case-insensitively.

Webhook subscriptions: `subscriptions` are shop-scoped ones (created through the API; the
`webhookSubscriptions` query lists them); `app_subscriptions` stand for the app-scoped ones
declared in shopify.app.toml, which Shopify delivers to but never lists ("Returns only
shop-scoped subscriptions, not app-scoped subscriptions configured in TOML files":
https://shopify.dev/docs/api/admin-graphql/2025-07/queries/webhookSubscriptions).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

TOKEN = "shpat_standin_token"
API_VERSION = "2026-07"
CLIENT_ID = "standin0client0id"
TOKEN_PATH = "/admin/oauth/access_token"
# "expires_in": 86399 in Shopify's documented answer of the client credentials grant:
# https://shopify.dev/docs/apps/build/authentication-authorization/client-secrets
TOKEN_LIFETIME = 86399
# The GraphQL Admin API's answer to a missing, wrong or expired token: HTTP 401 ("The necessary
# authentication credentials are not present in the request or are incorrect",
# https://shopify.dev/docs/api/usage/response-codes) with this string as `errors`.
INVALID_TOKEN = "[API] Invalid API key or access token (unrecognized login or wrong password)"
# The root fields the stand-in answers; a query with any other gets a GraphQL error.
ROOT_FIELDS = (
    "webhookSubscriptionCreate",
    "webhookSubscriptions",
    "inventoryItem",
    "nodes",
    "productVariants",
    "product",
    "products",
    "locations",
    "shop",
    "orders",
)
MUTATION_COST = 10
# The `shop` query answers the Shop of the token with any access scope; its `id` is a Shop gid
# and `name` the shop's name (https://shopify.dev/docs/api/admin-graphql/latest/queries/shop,
# https://shopify.dev/docs/api/admin-graphql/latest/objects/Shop). 954889 is the shop id of
# Shopify's shop/redact example (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance).
SHOP_ID = 954889
SHOP_NAME = "Elbkerzen"
# InventoryLevel.updatedAt is non-null (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/InventoryLevel):
# a level row without a timestamp of its own answers this one.
LEVEL_CREATED_AT = "2026-01-01T00:00:00Z"
PRODUCT_UPDATED_AT = "2026-11-02T09:30:00Z"

# (location_id, available, updated_at ISO 8601 or None)
LevelRow = tuple[int, int | None, str | None]


@dataclass
class Variant:
    """A product variant and its inventory item (ProductVariant, InventoryItem on shopify.dev).

    `position` 0 means "after the product's other variants" (Shopify counts from 1);
    `inventory_policy` is the GraphQL enum, DENY or CONTINUE.
    """

    id: int
    inventory_item_id: int
    title: str = "Default Title"
    sku: str = ""
    tracked: bool = True
    inventory_policy: str = "DENY"
    position: int = 0


@dataclass
class Product:
    """A product: `status` the GraphQL enum (ACTIVE, ARCHIVED, DRAFT, UNLISTED)."""

    id: int
    title: str
    status: str = "ACTIVE"
    updated_at: str = PRODUCT_UPDATED_AT
    variants: list[Variant] = field(default_factory=list)


@dataclass
class Location:
    """A location (Location on shopify.dev); `legacy` for a fulfillment service's old kind."""

    id: int
    name: str
    fulfills_online_orders: bool = True
    is_active: bool = True
    legacy: bool = False


@dataclass
class RecordedRequest:
    """One request as the stand-in saw it, for assertions."""

    headers: dict[str, str]
    query: str
    variables: dict[str, Any]
    root: str | None
    answer: str  # "ok", "THROTTLED", "429", "MAX_COST_EXCEEDED", "401", "error", "500"...
    requested_cost: int = 0
    actual_cost: int = 0
    at: float = 0.0
    operation: str | None = None  # the GraphQL operation's name, e.g. "ProductsByIds"


@dataclass
class RecordedTokenRequest:
    """One call of the token endpoint as the stand-in saw it (the secret is not kept)."""

    form: dict[str, str]
    answer: str  # "ok", "invalid_client", "unsupported_grant_type", "500"...
    at: float = 0.0


@dataclass
class ShopifyStandIn:
    """In-memory shop: inventory levels, webhook subscriptions and a cost bucket."""

    token: str = TOKEN
    api_version: str = API_VERSION
    maximum_available: float = 1000.0
    restore_rate: float = 100.0
    max_query_cost: int = 1000
    clock: Callable[[], float] = time.monotonic
    levels: dict[int, list[LevelRow]] = field(default_factory=dict)
    subscriptions: list[dict[str, str]] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    # Client credentials grant (Dev Dashboard apps); off while client_id is None.
    client_id: str | None = None
    client_secret: str = ""
    token_lifetime: float = TOKEN_LIFETIME
    token_requests: list[RecordedTokenRequest] = field(default_factory=list)
    app_subscriptions: list[dict[str, str]] = field(default_factory=list)
    shop_id: int = SHOP_ID
    shop_name: str = SHOP_NAME
    # The catalogue: product id → Product (add_product, add_variant), location id → Location.
    products: dict[int, Product] = field(default_factory=dict)
    locations: dict[int, Location] = field(default_factory=dict)
    # Orders the shop has taken (add_order), whether or not their webhook reached anyone.
    orders: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.available = float(self.maximum_available)
        self._stamp = self.clock()
        self._script: deque[Any] = deque()
        self._token_script: deque[Any] = deque()
        self.issued: dict[str, float] = {}  # client-credentials token → expiry on self.clock
        self._ids = itertools.count(1_000_001)
        self._lock = threading.Lock()
        self.base_url = ""

    # --- wiring ----------------------------------------------------------------------------

    @property
    def path(self) -> str:
        return f"/admin/api/{self.api_version}/graphql.json"

    def install(self, server: HTTPServer) -> str:
        """Answer Admin GraphQL requests on `server`; returns the shop base URL for the adapter."""
        server.expect_request(self.path, method="POST").respond_with_handler(self.handle)
        server.expect_request(TOKEN_PATH, method="POST").respond_with_handler(self.handle_token)
        self.base_url = server.url_for("/").rstrip("/")
        return self.base_url

    def serve(self, host: str = "127.0.0.1") -> contextlib.AbstractContextManager[str]:
        """Run on an own werkzeug server (ephemeral port) outside pytest; yields the base URL."""
        return serve_on_own_server(self, host)

    def script(self, *answers: Any) -> None:
        """Force the next answers to accepted tokens: "THROTTLED" (drains the bucket), "429" or
        ("429", retry_after), an HTTP status such as 500 or 401, ("echo", status): an error
        repeating the request's token, or "ok" (normal handling)."""
        self._script.extend(answers)

    def script_token(self, *answers: Any) -> None:
        """Force the token endpoint's next answers: an HTTP status such as 503, or "ok"."""
        self._token_script.extend(answers)

    def expire_tokens(self) -> None:
        """Let every issued client-credentials token run out now (as after its 24 hours)."""
        now = self.clock()
        self.issued = dict.fromkeys(self.issued, now)

    def add_item(self, item_id: int, *rows: LevelRow) -> None:
        """Give an inventory item its levels (location_id, available, updated_at)."""
        self.levels[int(item_id)] = list(rows)

    def add_variant(
        self,
        variant_id: int,
        inventory_item_id: int,
        product_title: str,
        title: str = "Default Title",
        sku: str = "",
    ) -> None:
        """A product variant the picker can find, in the product of that title (made if new).
        "Default Title" is what Shopify names the one variant of a product without options
        (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/ProductVariant#field-title)."""
        product = next((p for p in self.products.values() if p.title == product_title), None)
        if product is None:
            product = self.add_product(next(self._ids), product_title)
        product.variants.append(Variant(variant_id, inventory_item_id, title, sku))
        _number(product.variants)

    def add_product(
        self,
        product_id: int,
        title: str,
        *variants: Variant,
        status: str = "ACTIVE",
        updated_at: str = PRODUCT_UPDATED_AT,
    ) -> Product:
        """A product with its variants (numbered by position in the order given, if unset)."""
        product = Product(int(product_id), title, status, updated_at, list(variants))
        _number(product.variants)
        self.products[product.id] = product
        return product

    def add_location(
        self,
        location_id: int,
        name: str,
        *,
        fulfills_online_orders: bool = True,
        is_active: bool = True,
        legacy: bool = False,
    ) -> Location:
        """A location of the shop; levels (add_item) may name locations not added here."""
        location = Location(int(location_id), name, fulfills_online_orders, is_active, legacy)
        self.locations[location.id] = location
        return location

    def add_order(
        self, order_id: int, *, checkout_token: str = "", email: str = "", created_at: str
    ) -> None:
        """An order Shopify has (`created_at` ISO 8601), found by `orders(query:)`."""
        with self._lock:
            self.orders.append(
                {
                    "id": order_id,
                    "checkout_token": checkout_token,
                    "email": email,
                    "created_at": created_at,
                }
            )

    @property
    def total_actual_cost(self) -> int:
        return sum(r.actual_cost for r in self.requests)

    # --- bucket ----------------------------------------------------------------------------

    def _restore(self, now: float) -> None:
        elapsed = max(0.0, now - self._stamp)
        self.available = min(self.maximum_available, self.available + elapsed * self.restore_rate)
        self._stamp = now

    def _cost(self, requested: int, actual: int | None) -> dict[str, Any]:
        return {
            "requestedQueryCost": requested,
            "actualQueryCost": actual,
            "throttleStatus": {
                "maximumAvailable": float(self.maximum_available),
                "currentlyAvailable": int(math.floor(self.available + 1e-6)),
                "restoreRate": float(self.restore_rate),
            },
        }

    # --- handler ---------------------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        """The werkzeug handler: token, script, cost, throttle, then the answer itself."""
        with self._lock:
            now = self.clock()
            self._restore(now)
            try:
                payload = json.loads(request.get_data() or b"{}")
            except ValueError:
                payload = {}
            query = str(payload.get("query") or "")
            variables = payload.get("variables") or {}
            record = RecordedRequest(
                headers=dict(request.headers),
                query=query,
                variables=variables,
                root=_root(query),
                answer="ok",
                at=now,
                operation=_operation(query),
            )
            self.requests.append(record)
            return self._answer(request, record)

    def handle_token(self, request: Request) -> Response:
        """The client credentials grant, as Shopify documents it.

        Request: form fields grant_type=client_credentials, client_id, client_secret; answer:
        {"access_token", "scope", "expires_in": 86399}, no refresh token
        (https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens/client-credentials-grant).
        A wrong id or secret: HTTP 400 {"error": "invalid_client", "error_description": ...}, the
        answer Shopify's own library tests its client credentials call against
        (Shopify/shopify-app-js, packages/apps/shopify-api/lib/auth/oauth/__tests__/
        client-credentials.test.ts). Another grant type: 400 unsupported_grant_type (RFC 6749,
        section 5.2).
        """
        with self._lock:
            form = {key: request.form.get(key, "") for key in request.form}
            now = self.clock()
            record = RecordedTokenRequest(
                form={k: v for k, v in form.items() if k != "client_secret"}, answer="ok", at=now
            )
            self.token_requests.append(record)
            scripted = self._token_script.popleft() if self._token_script else "ok"
            if isinstance(scripted, int):
                record.answer = str(scripted)
                return _json({"errors": "Internal Server Error"}, scripted)
            if form.get("grant_type") != "client_credentials":
                record.answer = "unsupported_grant_type"
                return _json({"error": "unsupported_grant_type"}, 400)
            if (
                self.client_id is None
                or form.get("client_id") != self.client_id
                or form.get("client_secret") != self.client_secret
            ):
                record.answer = "invalid_client"
                body = {
                    "error": "invalid_client",
                    "error_description": "Client authentication failed",
                }
                return _json(body, 400)
            value = f"shpat_standin_cc_{len(self.token_requests)}_{next(self._ids)}"
            self.issued[value] = now + self.token_lifetime
            body = {
                "access_token": value,
                "scope": "read_inventory,read_orders,read_checkouts",
                "expires_in": int(self.token_lifetime),
            }
            return _json(body)

    def _authorised(self, token: str | None) -> bool:
        """The static token, or a client-credentials token that has not expired yet."""
        if not token:
            return False
        if self.token and token == self.token:
            return True
        expires = self.issued.get(token)
        return expires is not None and self.clock() < expires

    def _answer(self, request: Request, record: RecordedRequest) -> Response:
        if not self._authorised(request.headers.get("X-Shopify-Access-Token")):
            record.answer = "401"
            return _json({"errors": INVALID_TOKEN}, 401)
        scripted = self._script.popleft() if self._script else "ok"
        if isinstance(scripted, tuple) and scripted[0] == "echo":
            # Not Shopify's behaviour (its documented error answers carry no credentials:
            # https://shopify.dev/docs/api/usage/response-codes), but what a broken upstream or
            # proxy may do: an error whose text repeats the request's access token. A status of
            # 200 answers it as a GraphQL error, any other as that HTTP status.
            record.answer = f"echo {scripted[1]}"
            token = request.headers.get("X-Shopify-Access-Token", "")
            text = f"Request with access token {token} failed"
            if scripted[1] == 200:
                return _json({"errors": [{"message": text}]}, 200)
            return _json({"errors": text}, scripted[1])
        if (isinstance(scripted, tuple) and scripted[0] == "429") or scripted == "429":
            record.answer = "429"
            headers = {}
            if isinstance(scripted, tuple):
                headers["Retry-After"] = str(scripted[1])
            body = {"errors": "Exceeded 2 calls per second for api client. Reduce request rates."}
            return _json(body, 429, headers)
        if isinstance(scripted, int):
            record.answer = str(scripted)
            if scripted == 401:  # e.g. the app's access revoked: even a fresh token is refused
                return _json({"errors": INVALID_TOKEN}, 401)
            return _json({"errors": "Internal Server Error"}, scripted)
        if record.root not in ROOT_FIELDS:
            record.answer = "error"
            return _json({"errors": [{"message": "Unsupported query for the stand-in"}]}, 200)

        requested = self._requested_cost(record.root, record.query, record.variables)
        record.requested_cost = requested
        if requested > self.max_query_cost:
            record.answer = "MAX_COST_EXCEEDED"
            message = (
                f"Query cost is {requested}, which exceeds the single query max cost limit "
                f"({self.max_query_cost})."
            )
            error = {
                "message": message,
                "extensions": {
                    "code": "MAX_COST_EXCEEDED",
                    "cost": requested,
                    "maxCost": self.max_query_cost,
                },
            }
            return _json({"errors": [error], "extensions": {"cost": self._cost(requested, None)}})
        if scripted == "THROTTLED":
            self.available = 0.0  # as if another worker of ours had emptied the bucket
        if scripted == "THROTTLED" or self.available + 1e-9 < requested:
            record.answer = "THROTTLED"
            error = {"message": "Throttled", "extensions": {"code": "THROTTLED"}}
            return _json({"errors": [error], "extensions": {"cost": self._cost(requested, None)}})

        data, actual, errors = self._resolve(record.root, record.query, record.variables)
        record.actual_cost = actual
        self.available -= actual
        body: dict[str, Any] = {"data": data, "extensions": {"cost": self._cost(requested, actual)}}
        if errors:
            record.answer = "error"
            body["errors"] = errors
        return _json(body)

    # --- cost and data ---------------------------------------------------------------------

    def _requested_cost(self, root: str, query: str, variables: dict[str, Any]) -> int:
        """Requested cost by the table in the module docstring."""
        if root == "nodes":
            ids = len(variables.get("ids") or [])
            if _on_type(query) == "Product":
                return ids * (1 + 2 + 2 * _page_size(query, variables, "variants"))
            if _has_field(query, "inventoryLevels"):
                return ids * (1 + 2 + _page_size(query, variables, "inventoryLevels"))
            return ids * 3  # the item, its variant, the variant's product
        if root == "inventoryItem":
            if _has_field(query, "inventoryLevel"):
                return 3  # the item, the level, its quantities
            return 1 + 2 + _page_size(query, variables, "inventoryLevels")
        if root == "product":
            if _has_field(query, "variants"):
                return 1 + 2 + 2 * _page_size(query, variables, "variants")
            return 1
        if root == "products":
            per_product = 1 + 2 + 2 * _page_size(query, variables, "variants")
            return 2 + _page_size(query, variables, "products") * per_product
        if root == "locations":
            return 2 + _page_size(query, variables, "locations")
        if root == "webhookSubscriptions":
            return 2 + _page_size(query, variables, "webhookSubscriptions")
        if root == "shop":
            return 1  # one object, scalars free
        if root == "orders":
            return 2 + _page_size(query, variables, "orders")
        if root == "productVariants":
            # a connection: 2 + first, and per variant its product and inventoryItem objects
            return 2 + _page_size(query, variables, "productVariants") * 3
        return MUTATION_COST

    def _resolve(
        self, root: str, query: str, variables: dict[str, Any]
    ) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
        """(data, actual cost, GraphQL errors) for one accepted query."""
        try:
            if root == "nodes":
                return self._nodes(query, variables)
            if root == "inventoryItem" and _has_field(query, "inventoryLevel"):
                return self._level_at(variables.get("id"), variables.get("locationId"))
            if root == "inventoryItem":
                first = _page_size(query, variables, "inventoryLevels")
                item = self._item(variables.get("id"), first, variables.get("after"))
                actual = 0 if item is None else 1 + 2 + len(item["inventoryLevels"]["edges"])
                return {"inventoryItem": item}, actual, []
            if root == "product":
                return self._product_root(query, variables)
            if root == "products":
                return self._search_products(query, variables)
            if root == "locations":
                return self._locations(query, variables)
            if root == "webhookSubscriptions":
                first = _page_size(query, variables, "webhookSubscriptions")
                page = _page(self.subscriptions, first, variables.get("after"), "sub")
                page["edges"] = [
                    {"cursor": e["cursor"], "node": _subscription_node(e["node"], query)}
                    for e in page["edges"]
                ]
                return {"webhookSubscriptions": page}, 2 + len(page["edges"]), []
            if root == "productVariants":
                found = [
                    (product, variant)
                    for product in self.products.values()
                    for variant in _in_position(product.variants)
                    if _variant_matches(product, variant, variables.get("query"))
                ]
                first = _page_size(query, variables, "productVariants")
                page = _page(found, first, variables.get("after"), "variant")
                page["edges"] = [
                    {"cursor": e["cursor"], "node": _picked_variant_node(*e["node"])}
                    for e in page["edges"]
                ]
                return {"productVariants": page}, 2 + 3 * len(page["edges"]), []
            if root == "orders":
                found = [o for o in self.orders if _order_matches(o, variables.get("query"))]
                found = found[: _page_size(query, variables, "orders")]
                nodes = [
                    {"id": f"gid://shopify/Order/{o['id']}", "createdAt": o["created_at"]}
                    for o in found
                ]
                return {"orders": {"nodes": nodes}}, 2 + len(nodes), []
            if root == "shop":
                fields = {"id": f"gid://shopify/Shop/{self.shop_id}", "name": self.shop_name}
                asked = {
                    name: value
                    for name, value in fields.items()
                    if re.search(rf"\b{name}\b", query)
                }
                return {"shop": asked}, 1, []
            return self._create(query, variables), MUTATION_COST, []
        except _BadCursor as err:
            return {root: None}, 1, [{"message": str(err), "extensions": {"code": "BAD_REQUEST"}}]

    def _nodes(
        self, query: str, variables: dict[str, Any]
    ) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
        """`nodes(ids:)` for the three shapes the adapter sends; null for an unknown id."""
        gids = variables.get("ids") or []
        if _on_type(query) == "Product":
            first = _page_size(query, variables, "variants")
            nodes = [self._product_node(self._product(gid), first, None, query) for gid in gids]
            actual = sum(3 + 2 * len(node["variants"]["edges"]) for node in nodes if node)
            return {"nodes": nodes}, actual, []
        if _has_field(query, "inventoryLevels"):
            first = _page_size(query, variables, "inventoryLevels")
            items = [self._item(gid, first, None) for gid in gids]
            actual = sum(1 + 2 + len(item["inventoryLevels"]["edges"]) for item in items if item)
            return {"nodes": items}, actual, []
        owners = [self._item_owner(gid) for gid in gids]
        return {"nodes": owners}, 3 * sum(1 for owner in owners if owner), []

    def _item(self, gid: Any, first: int, after: str | None) -> dict[str, Any] | None:
        item_id = _numeric(gid, "InventoryItem")
        if item_id is None or not self._item_exists(item_id):
            return None  # deleted (or never existed): Shopify answers null
        page = _page(self.levels.get(item_id, []), first, after, "level")
        page["edges"] = [
            {"cursor": e["cursor"], "node": _level_node(e["node"])} for e in page["edges"]
        ]
        return {"id": gid, "inventoryLevels": page}

    def _item_exists(self, item_id: int) -> bool:
        """An item with levels, or one a variant names (stocked nowhere yet)."""
        return item_id in self.levels or self._variant_of_item(item_id) is not None

    def _variant_of_item(self, item_id: int | None) -> tuple[Product, Variant] | None:
        for product in self.products.values():
            for variant in product.variants:
                if variant.inventory_item_id == item_id:
                    return product, variant
        return None

    def _item_owner(self, gid: Any) -> dict[str, Any] | None:
        """InventoryItem { id variant { id product { id } } }; an item known only by its levels
        has no variant here, and answers null like a deleted one."""
        owner = self._variant_of_item(_numeric(gid, "InventoryItem"))
        if owner is None:
            return None
        product, variant = owner
        return {
            "id": gid,
            "variant": {
                "id": f"gid://shopify/ProductVariant/{variant.id}",
                "product": {"id": f"gid://shopify/Product/{product.id}"},
            },
        }

    def _level_at(
        self, gid: Any, location_gid: Any
    ) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
        """inventoryItem(id:) { inventoryLevel(locationId:) }: null level where not stocked."""
        item_id = _numeric(gid, "InventoryItem")
        if item_id is None or not self._item_exists(item_id):
            return {"inventoryItem": None}, 0, []
        location_id = _numeric(location_gid, "Location")
        row = next((r for r in self.levels.get(item_id, []) if r[0] == location_id), None)
        level = None
        if row is not None:
            _, available, updated_at = row
            level = {
                "updatedAt": updated_at or LEVEL_CREATED_AT,
                "quantities": [
                    {"name": "available", "quantity": available, "updatedAt": updated_at}
                ],
            }
        return {"inventoryItem": {"id": gid, "inventoryLevel": level}}, 3 if level else 1, []

    def _product(self, gid: Any) -> Product | None:
        product_id = _numeric(gid, "Product")
        return None if product_id is None else self.products.get(product_id)

    def _product_root(
        self, query: str, variables: dict[str, Any]
    ) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
        """`product(id:) { id }` or `product(id:) { id variants(first:, after:) }`."""
        product = self._product(variables.get("id"))
        if product is None:
            return {"product": None}, 0, []
        if not _has_field(query, "variants"):
            return {"product": {"id": f"gid://shopify/Product/{product.id}"}}, 1, []
        first = _page_size(query, variables, "variants")
        node = self._product_node(product, first, variables.get("after"), query, fields=("id",))
        return {"product": node}, 3 + 2 * len(node["variants"]["edges"]), []

    def _search_products(
        self, query: str, variables: dict[str, Any]
    ) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
        """`products(first:, query:)`, each product with a first page of its variants."""
        found = [
            product
            for product in self.products.values()
            if _search_matches(
                variables.get("query"),
                {"title": [product.title], "sku": [v.sku for v in product.variants]},
            )
        ]
        first = _page_size(query, variables, "products")
        variants_first = _page_size(query, variables, "variants")
        page = _page(found, first, variables.get("after"), "product")
        page["edges"] = [
            {
                "cursor": e["cursor"],
                "node": self._product_node(e["node"], variants_first, None, query),
            }
            for e in page["edges"]
        ]
        actual = 2 + sum(3 + 2 * len(e["node"]["variants"]["edges"]) for e in page["edges"])
        return {"products": page}, actual, []

    def _product_node(
        self,
        product: Product | None,
        first: int,
        after: str | None,
        query: str,
        fields: tuple[str, ...] = ("id", "title", "status", "updatedAt"),
    ) -> dict[str, Any] | None:
        """A Product node with a page of its variants in position order."""
        if product is None:
            return None
        values = {
            "id": f"gid://shopify/Product/{product.id}",
            "title": product.title,
            "status": product.status,
            "updatedAt": product.updated_at,
        }
        page = _page(_in_position(product.variants), first, after, "variant")
        stock = _has_field(query, "inventoryQuantity")
        page["edges"] = [
            {"cursor": e["cursor"], "node": self._variant_node(e["node"], stock)}
            for e in page["edges"]
        ]
        return {**{name: values[name] for name in fields}, "variants": page}

    def _variant_node(self, variant: Variant, stock: bool) -> dict[str, Any]:
        """A ProductVariant node as the catalogue queries ask for it."""
        node: dict[str, Any] = {
            "id": f"gid://shopify/ProductVariant/{variant.id}",
            "title": variant.title,
            "sku": variant.sku or None,  # Shopify's `sku` is nullable
            "position": variant.position,
            "inventoryPolicy": variant.inventory_policy,
            "inventoryItem": {
                "id": f"gid://shopify/InventoryItem/{variant.inventory_item_id}",
                "tracked": variant.tracked,
            },
        }
        if stock:
            node["inventoryQuantity"] = self._quantity(variant.inventory_item_id)
        return node

    def _quantity(self, item_id: int) -> int:
        """The variant's inventoryQuantity: `available` summed over its item's active levels."""
        return sum(
            available or 0
            for location_id, available, _ in self.levels.get(item_id, [])
            if location_id not in self.locations or self.locations[location_id].is_active
        )

    def _locations(
        self, query: str, variables: dict[str, Any]
    ) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
        """`locations(first:, after:)`: active ones only, unless asked for the others too."""
        inactive = _argument(query, variables, "locations", "includeInactive") is True
        legacy = _argument(query, variables, "locations", "includeLegacy") is True
        rows = [
            location
            for location in self.locations.values()
            if (location.is_active or inactive) and (legacy or not location.legacy)
        ]
        page = _page(rows, _page_size(query, variables, "locations"), variables.get("after"), "loc")
        page["edges"] = [
            {
                "cursor": e["cursor"],
                "node": {
                    "id": f"gid://shopify/Location/{e['node'].id}",
                    "name": e["node"].name,
                    "isActive": e["node"].is_active,
                    "fulfillsOnlineOrders": e["node"].fulfills_online_orders,
                },
            }
            for e in page["edges"]
        ]
        return {"locations": page}, 2 + len(page["edges"]), []

    def _create(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        topic = str(variables.get("topic") or "")
        spec = variables.get("webhookSubscription") or {}
        url = spec.get("uri") or spec.get("callbackUrl") or ""
        errors = []
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*", topic):
            errors.append({"field": ["topic"], "message": f"Invalid topic {topic!r}"})
        if not url.startswith("https://"):
            errors.append({"field": ["webhookSubscription", "uri"], "message": "Invalid address"})
        if any(s["topic"] == topic and s["uri"] == url for s in self.subscriptions):
            errors.append(
                {"field": ["address"], "message": "Address for this topic has already been taken"}
            )
        if errors:
            return {
                "webhookSubscriptionCreate": {"webhookSubscription": None, "userErrors": errors}
            }
        subscription = {
            "id": f"gid://shopify/WebhookSubscription/{next(self._ids)}",
            "topic": topic,
            "uri": url,
        }
        self.subscriptions.append(subscription)
        node = _subscription_node(subscription, query)
        return {"webhookSubscriptionCreate": {"webhookSubscription": node, "userErrors": []}}


class _BadCursor(Exception):
    pass


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body), status=status, headers=headers or {}, content_type="application/json"
    )


def _root(query: str) -> str | None:
    """The operation's first root field: the first name inside its outermost braces."""
    match = re.search(r"\{\s*(\w+)", query)
    return match.group(1) if match else None


def _operation(query: str) -> str | None:
    match = re.match(r"\s*(?:query|mutation)\s+(\w+)", query)
    return match.group(1) if match else None


def _on_type(query: str) -> str | None:
    """The type condition of the first inline fragment (`... on Product`)."""
    match = re.search(r"\.\.\.\s*on\s+(\w+)", query)
    return match.group(1) if match else None


def _has_field(query: str, name: str) -> bool:
    """Whether the query selects `name` (not merely a longer name that starts with it)."""
    return re.search(rf"(?<![$\w]){name}\b(?!\s*:)", query) is not None


def _arguments(query: str, name: str) -> str:
    """The argument text of the first `name(...)` in the query."""
    match = re.search(rf"\b{name}\s*\(([^)]*)\)", query)
    return match.group(1) if match else ""


def _argument(query: str, variables: dict[str, Any], name: str, argument: str) -> Any:
    """One argument of field `name`: a literal (true, false, a number) or a variable's value."""
    match = re.search(rf"\b{argument}\s*:\s*(\$\w+|true|false|\d+)", _arguments(query, name))
    if not match:
        return None
    value = match.group(1)
    if value.startswith("$"):
        return variables.get(value[1:])
    return {"true": True, "false": False}.get(value, int(value) if value.isdigit() else None)


def _page_size(query: str, variables: dict[str, Any], name: str) -> int:
    """The `first:` of connection `name` (the page size that costs), 0 where absent."""
    return int(_argument(query, variables, name, "first") or 0)


def _numeric(gid: Any, kind: str) -> int | None:
    """`gid://shopify/{kind}/123` → 123; None for anything else."""
    match = re.fullmatch(rf"gid://shopify/{kind}/(\d+)", str(gid or ""))
    return int(match.group(1)) if match else None


def _number(variants: list[Variant]) -> None:
    """Give variants without a position the next ones, in the order given."""
    for index, variant in enumerate(variants, start=1):
        if not variant.position:
            variant.position = index


def _in_position(variants: list[Variant]) -> list[Variant]:
    return sorted(variants, key=lambda variant: variant.position)


def _cursor(kind: str, index: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{index}".encode()).decode()


def _page(rows: list[Any], first: int, after: str | None, kind: str) -> dict[str, Any]:
    """A connection page with real opaque cursors, honouring `first` and `after`."""
    start = 0
    if after:
        try:
            name, index = base64.urlsafe_b64decode(after.encode()).decode().split(":")
            if name != kind:
                raise ValueError(name)
            start = int(index) + 1
        except ValueError as err:
            raise _BadCursor(f"Invalid cursor {after!r}") from err
    chunk = rows[start : start + first]
    edges = [{"cursor": _cursor(kind, start + i), "node": row} for i, row in enumerate(chunk)]
    return {
        "pageInfo": {
            "hasNextPage": start + len(chunk) < len(rows),
            "endCursor": edges[-1]["cursor"] if edges else None,
        },
        "edges": edges,
    }


def _level_node(row: LevelRow) -> dict[str, Any]:
    location_id, available, updated_at = row
    return {
        "location": {"id": f"gid://shopify/Location/{location_id}"},
        "quantities": [{"name": "available", "quantity": available, "updatedAt": updated_at}],
    }


def _subscription_node(subscription: dict[str, str], query: str) -> dict[str, Any]:
    """Only the endpoint fields the query asked for: `uri` (2025-10+) or the older `endpoint`."""
    node: dict[str, Any] = {"id": subscription["id"], "topic": subscription["topic"]}
    if re.search(r"\buri\b", query):
        node["uri"] = subscription["uri"]
    if re.search(r"\bendpoint\b", query):
        node["endpoint"] = {"__typename": "WebhookHttpEndpoint", "callbackUrl": subscription["uri"]}
    return node


def _picked_variant_node(product: Product, variant: Variant) -> dict[str, Any]:
    """A ProductVariant node for the variant picker: gids for the variant and its
    InventoryItem, the product's title
    (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/ProductVariant)."""
    return {
        "id": f"gid://shopify/ProductVariant/{variant.id}",
        "title": variant.title,
        "sku": variant.sku or None,  # Shopify's `sku` is nullable
        "product": {"title": product.title},
        "inventoryItem": {"id": f"gid://shopify/InventoryItem/{variant.inventory_item_id}"},
    }


def _variant_matches(product: Product, variant: Variant, query: Any) -> bool:
    """`productVariants(query:)`: a bare term searches the product's and the variant's titles
    and the SKU; `sku:` the SKU."""
    titles = [product.title, variant.title]
    return _search_matches(query, {"title": titles, "sku": [variant.sku]})


_TERM = re.compile(r'(?:(\w+):)?("[^"]*"|\S+)')


def _search_matches(query: Any, fields: dict[str, list[str]]) -> bool:
    """A small part of Shopify's search syntax (https://shopify.dev/docs/api/usage/search-syntax):
    alternatives joined by OR, each a list of terms that must all match (AND is implied);
    `field:value`; a trailing `*` matches a prefix of a word; a bare term searches every field
    given, case-insensitively; a "quoted phrase" matches as a whole. No query: everything."""
    text = str(query or "").strip()
    if not text:
        return True
    every = [value for values in fields.values() for value in values]
    for alternative in re.split(r"\s+OR\s+", text):
        terms = [term for term in _TERM.findall(alternative) if term != ("", "AND")]
        if terms and all(
            _term_matches(value, fields.get(name, []) if name else every) for name, value in terms
        ):
            return True
    return False


def _term_matches(value: str, values: list[str]) -> bool:
    value = value.strip('"').lower()
    if value.endswith("*"):
        prefix = value[:-1]
        words = [w for v in values for w in [v.lower(), *v.lower().split()]]
        return any(w.startswith(prefix) for w in words)
    return any(value and value in v.lower() for v in values)


_ORDER_TERM = re.compile(
    r'checkout_token:"(?P<token>(?:[^"\\]|\\.)*)"'
    r'|\(email:"(?P<email>(?:[^"\\]|\\.)*)" AND created_at:>="(?P<since>[^"]*)"\)'
)


def _unquote(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _order_matches(order: dict[str, Any], query: Any) -> bool:
    """The adapter's `orders(query:)` filter: terms joined by OR (see the module docstring)."""
    for term in str(query or "").split(" OR "):
        match = _ORDER_TERM.fullmatch(term.strip())
        if match is None:
            raise ValueError(f"the stand-in does not understand the orders filter {term!r}")
        if match["token"] is not None:
            if order["checkout_token"] and order["checkout_token"] == _unquote(match["token"]):
                return True
        elif (
            order["email"]
            and order["email"].lower() == _unquote(match["email"]).lower()
            and _iso(order["created_at"]) >= _iso(match["since"])
        ):
            return True
    return False


def _iso(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


@contextlib.contextmanager
def serve_on_own_server(standin: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """A stand-in (anything with `install(server) -> base URL`) on an own werkzeug server, for
    the chaos day and the benchmarks, which run outside pytest's `httpserver`."""
    server = HTTPServer(host=host, port=0)
    server.start()
    try:
        yield standin.install(server)
    finally:
        server.clear()
        server.stop()
