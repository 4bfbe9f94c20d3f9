"""A local Shopify Admin GraphQL stand-in on pytest-httpserver (werkzeug), cost bucket included.

Why: the adapter's point is pacing itself by Shopify's calculated query cost, so the stand-in
meters every query the way Shopify does and answers THROTTLED when the bucket is short.

It understands just enough GraphQL: which root field a query uses (`nodes`, `inventoryItem`,
`webhookSubscriptions`, `webhookSubscriptionCreate`, `shop`), the `first` page size and the
variables.

Cost formula (Shopify's documented rules: an object costs 1, a scalar 0, a connection 2 plus the
number of objects it asks for, a mutation 10; requested cost from page sizes, actual cost from
what was returned). Objects nested inside a connection's node (`location`, `quantities`) are not
charged separately, a simplification: the adapter learns real costs from `requestedQueryCost`.

    nodes(ids:) { ... on InventoryItem { inventoryLevels(first: F) } }
        requested = Σ ids   (1 + 2 + F)            actual = Σ found items (1 + 2 + levels returned)
    inventoryItem(id:) { inventoryLevels(first: F, after:) }
        requested = 1 + 2 + F                      actual = 1 + 2 + levels returned (0 if deleted)
    webhookSubscriptions(first: F)
        requested = 2 + F                          actual = 2 + subscriptions returned
    webhookSubscriptionCreate                      requested = actual = 10
    shop { id name }                               requested = actual = 1
    productVariants(first: F, query:) { ... product inventoryItem }
        requested = 2 + 3 F                        actual = 2 + 3 × variants returned

Bucket (leaky, real clock unless a clock is injected): it starts full; a query runs only if the
bucket holds its requested cost, and then loses its actual cost (Shopify deducts requested and
refunds the difference). A query requesting more than `max_query_cost` gets MAX_COST_EXCEEDED.

Access: the static `token` (apps created in the Shopify admin; pass token="" to switch it off),
and, when `client_id` is set, the client credentials grant at /admin/oauth/access_token, whose
tokens really expire `token_lifetime` seconds (86399 by default, as Shopify documents) after
they were issued, on the stand-in's clock. An unknown or expired token gets Shopify's 401.

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
ROOT_FIELDS = (
    "webhookSubscriptionCreate",
    "webhookSubscriptions",
    "inventoryItem",
    "nodes",
    "productVariants",
)
MUTATION_COST = 10
# The `shop` query answers the Shop of the token with any access scope; its `id` is a Shop gid
# and `name` the shop's name (https://shopify.dev/docs/api/admin-graphql/latest/queries/shop,
# https://shopify.dev/docs/api/admin-graphql/latest/objects/Shop). 954889 is the shop id of
# Shopify's shop/redact example (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance).
SHOP_ID = 954889
SHOP_NAME = "Elbkerzen"
_SHOP_ROOT = re.compile(r"\bshop\s*\{")

# (location_id, available, updated_at ISO 8601 or None)
LevelRow = tuple[int, int | None, str | None]


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
    # Product variants for `productVariants(query:)`; see add_variant.
    variants: list[dict[str, Any]] = field(default_factory=list)

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

    @contextlib.contextmanager
    def serve(self, host: str = "127.0.0.1") -> Iterator[str]:
        """Run on an own werkzeug server (ephemeral port) outside pytest; yields the base URL."""
        server = HTTPServer(host=host, port=0)
        server.start()
        try:
            yield self.install(server)
        finally:
            server.clear()
            server.stop()

    def script(self, *answers: Any) -> None:
        """Force the next answers to accepted tokens: "THROTTLED" (drains the bucket), "429" or
        ("429", retry_after), an HTTP status such as 500 or 401, or "ok" (normal handling)."""
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
        """A product variant the picker can find. "Default Title" is what Shopify names the one
        variant of a product without options
        (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/ProductVariant#field-title)."""
        self.variants.append(
            {
                "id": variant_id,
                "inventory_item_id": inventory_item_id,
                "product_title": product_title,
                "title": title,
                "sku": sku,
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
        if record.root is None:
            record.answer = "error"
            return _json({"errors": [{"message": "Unsupported query for the stand-in"}]}, 200)

        first = _first(record.query, record.variables)
        requested = self._requested_cost(record.root, record.variables, first)
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

        data, actual, errors = self._resolve(record.root, record.query, record.variables, first)
        record.actual_cost = actual
        self.available -= actual
        body: dict[str, Any] = {"data": data, "extensions": {"cost": self._cost(requested, actual)}}
        if errors:
            record.answer = "error"
            body["errors"] = errors
        return _json(body)

    # --- cost and data ---------------------------------------------------------------------

    def _requested_cost(self, root: str, variables: dict[str, Any], first: int) -> int:
        if root == "nodes":
            return len(variables.get("ids") or []) * (1 + 2 + first)
        if root == "inventoryItem":
            return 1 + 2 + first
        if root == "webhookSubscriptions":
            return 2 + first
        if root == "shop":
            return 1  # one object, scalars free
        if root == "productVariants":
            # a connection: 2 + first, and per variant its product and inventoryItem objects
            return 2 + first * 3
        return MUTATION_COST

    def _resolve(
        self, root: str, query: str, variables: dict[str, Any], first: int
    ) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
        """(data, actual cost, GraphQL errors) for one accepted query."""
        try:
            if root == "nodes":
                nodes, actual = [], 0
                for gid in variables.get("ids") or []:
                    item = self._item(gid, first, None)
                    nodes.append(item)
                    if item is not None:
                        actual += 1 + 2 + len(item["inventoryLevels"]["edges"])
                return {"nodes": nodes}, actual, []
            if root == "inventoryItem":
                item = self._item(variables.get("id"), first, variables.get("after"))
                actual = 0 if item is None else 1 + 2 + len(item["inventoryLevels"]["edges"])
                return {"inventoryItem": item}, actual, []
            if root == "webhookSubscriptions":
                page = _page(self.subscriptions, first, variables.get("after"), "sub")
                page["edges"] = [
                    {"cursor": e["cursor"], "node": _subscription_node(e["node"], query)}
                    for e in page["edges"]
                ]
                return {"webhookSubscriptions": page}, 2 + len(page["edges"]), []
            if root == "productVariants":
                found = [v for v in self.variants if _variant_matches(v, variables.get("query"))]
                page = _page(found, first, variables.get("after"), "variant")
                page["edges"] = [
                    {"cursor": e["cursor"], "node": _variant_node(e["node"])} for e in page["edges"]
                ]
                return {"productVariants": page}, 2 + 3 * len(page["edges"]), []
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

    def _item(self, gid: Any, first: int, after: str | None) -> dict[str, Any] | None:
        match = re.fullmatch(r"gid://shopify/InventoryItem/(\d+)", str(gid or ""))
        if not match or int(match.group(1)) not in self.levels:
            return None  # deleted (or never existed): Shopify answers null
        rows = self.levels[int(match.group(1))]
        page = _page(rows, first, after, "level")
        page["edges"] = [
            {"cursor": e["cursor"], "node": _level_node(e["node"])} for e in page["edges"]
        ]
        return {"id": gid, "inventoryLevels": page}

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
    for name in ROOT_FIELDS:
        if re.search(rf"\b{name}\s*\(", query):
            return name
    return "shop" if _SHOP_ROOT.search(query) else None


def _first(query: str, variables: dict[str, Any]) -> int:
    """The first `first:` argument's value, literal or variable (the page size that costs)."""
    match = re.search(r"\bfirst\s*:\s*(?:\$(\w+)|(\d+))", query)
    if not match:
        return 0
    if match.group(2):
        return int(match.group(2))
    return int(variables.get(match.group(1)) or 0)


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


def _variant_node(variant: dict[str, Any]) -> dict[str, Any]:
    """A ProductVariant node: gids for the variant and its InventoryItem, the product's title
    (https://shopify.dev/docs/api/admin-graphql/2026-07/objects/ProductVariant)."""
    return {
        "id": f"gid://shopify/ProductVariant/{variant['id']}",
        "title": variant["title"],
        "sku": variant["sku"] or None,  # Shopify's `sku` is nullable
        "product": {"title": variant["product_title"]},
        "inventoryItem": {"id": f"gid://shopify/InventoryItem/{variant['inventory_item_id']}"},
    }


def _variant_matches(variant: dict[str, Any], query: Any) -> bool:
    """A small part of Shopify's search syntax (https://shopify.dev/docs/api/usage/search-syntax):
    terms joined by OR; `field:value`; a trailing `*` matches a prefix; a bare term searches the
    default fields (here the product's and the variant's titles and the SKU), word by word,
    case-insensitively; a "quoted phrase" matches as a whole. No query: every variant."""
    text = str(query or "").strip()
    if not text:
        return True
    fields = {
        "title": [variant["product_title"], variant["title"]],
        "sku": [variant["sku"]],
    }
    default = fields["title"] + fields["sku"]
    for term in re.split(r"\s+OR\s+", text):
        name, _, value = term.partition(":") if ":" in term else ("", "", term)
        values = fields.get(name, []) if name else default
        value = value.strip().strip('"').lower()
        if value.endswith("*"):
            prefix = value[:-1]
            words = [w for v in values for w in [v.lower(), *v.lower().split()]]
            if any(w.startswith(prefix) for w in words):
                return True
        elif any(value and value in v.lower() for v in values):
            return True
    return False
