"""Every GraphQL document the Shopify adapter can send validates against Shopify's published Admin
schema (tests/support/shopify_schema.py: which version, from where, and the fields of our pinned
version it lacks).

The documents are found, not listed: every module-level string of the adapter's modules (tokens,
transport, queries) named `*_QUERY` or `*_MUTATION`, and every module-level function named
`*_query` or `*_mutation` called with each combination of its bool arguments. A GraphQL document
written anywhere else in those modules fails a test, and so does a root field the stand-in
answers that no document uses. The requests the adapter really sends, variables included, are
validated too, one public method at a time.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from graphql import (
    GraphQLSchema,
    OperationDefinitionNode,
    get_variable_values,
    parse,
    validate,
)

from automation.shopify import queries, tokens, transport
from automation.shopify.queries import ShopifyAdmin
from tests.support import shopify_schema
from tests.support.shopify_standin import ROOT_FIELDS, TOKEN, ShopifyStandIn, Variant

# Every module of the adapter that speaks Shopify Admin HTTP: documents are looked for in all.
ADAPTER_MODULES = (tokens, transport, queries)
_DOCUMENT_NAME = re.compile(r"_(QUERY|MUTATION)$")
_GENERATOR_NAME = re.compile(r"_(query|mutation)$")
# An operation (`query Name(...) {`, `mutation {`) or a query in its short form (`{ shop {`).
_LOOKS_LIKE_GRAPHQL = re.compile(r"\s*(?:(?:query|mutation|subscription)\b\s*\w*\s*[({]|\{\s*\w)")
# Public methods that send nothing: they only compute.
_LOCAL_METHODS = {"close", "estimate_cost", "page_size", "variants_page_size"}


def adapter_documents() -> dict[str, str]:
    """Every document the adapter's modules define, generated ones in each of their variants."""
    found: dict[str, str] = {}
    for module in ADAPTER_MODULES:
        for name, value in vars(module).items():
            if isinstance(value, str) and _DOCUMENT_NAME.search(name):
                found[name] = value
            elif inspect.isfunction(value) and _GENERATOR_NAME.search(name):
                parameters = inspect.signature(value).parameters.values()
                assert all(p.annotation in (bool, "bool") for p in parameters), (
                    f"{name} takes more than bools: extend adapter_documents to call it"
                )
                for flags in itertools.product((True, False), repeat=len(parameters)):
                    found[f"{name}({', '.join(map(str, flags))})"] = value(*flags)
    return found


DOCUMENTS = adapter_documents()


def root_field(document: str) -> str:
    definitions = parse(document).definitions
    (operation,) = [d for d in definitions if isinstance(d, OperationDefinitionNode)]
    return operation.selection_set.selections[0].name.value  # type: ignore[attr-defined]


def failures(schema: GraphQLSchema, document: str, variables: dict[str, Any] | None = None) -> str:
    """The validation messages for `document` (and its variables, when given), or ""."""
    ast_document = parse(document)
    messages = [f"{e.message} at {e.locations}" for e in validate(schema, ast_document)]
    if variables is not None and not messages:
        (operation,) = ast_document.definitions
        coerced = get_variable_values(schema, operation.variable_definitions or (), variables)  # type: ignore[attr-defined]
        if isinstance(coerced, list):
            messages += [f"variables: {e.message}" for e in coerced]
    return "\n".join(messages)


@pytest.fixture(scope="module")
def published() -> GraphQLSchema:
    try:
        return shopify_schema.published_schema()
    except shopify_schema.SchemaUnavailable as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Shopify's published schema is needed under CI=true: {err}")
        pytest.skip(f"Shopify's published schema is not to be had here: {err}")


@pytest.fixture(scope="module")
def schema(published: GraphQLSchema) -> GraphQLSchema:
    return shopify_schema.pinned_schema(published)


# --- finding the documents ---------------------------------------------------------------------


def test_the_documents_cover_every_root_the_standin_answers_and_no_other():
    roots = {root_field(document) for document in DOCUMENTS.values()}

    assert DOCUMENTS
    assert roots == set(ROOT_FIELDS)


@pytest.mark.parametrize("module", ADAPTER_MODULES, ids=lambda module: module.__name__)
def test_no_graphql_document_is_written_outside_the_collected_names(module):
    """A document in a method body, or under another name, would escape the validation."""
    tree = ast.parse(inspect.getsource(module))
    collected: list[tuple[int, int]] = []
    for node in tree.body:
        names = []
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.FunctionDef):
            names = [node.name]
        if any(_DOCUMENT_NAME.search(n) or _GENERATOR_NAME.search(n) for n in names):
            collected.append((node.lineno, node.end_lineno or node.lineno))

    strays = []
    for node in ast.walk(tree):
        text = _leading_text(node)
        if text is None or not _LOOKS_LIKE_GRAPHQL.match(text):
            continue
        if not any(start <= node.lineno <= end for start, end in collected):
            strays.append(f"line {node.lineno}: {text[:60]!r}")

    assert strays == []


def _leading_text(node: ast.AST) -> str | None:
    """The text a string literal or f-string starts with."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


# --- the documents against the schema ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_the_document_validates_against_shopifys_schema(schema, name):
    assert failures(schema, DOCUMENTS[name]) == "", name


def test_a_wrong_document_fails_so_the_validation_is_no_formality(schema):
    wrong = "query Wrong($id: ID!) { product(id: $id) { id stock } }"

    assert "Cannot query field 'stock' on type 'Product'" in failures(schema, wrong)
    assert "variables" in failures(schema, "query Ok($id: ID!) { product(id: $id) { id } }", {})


def test_the_fields_added_for_our_pinned_version_are_missing_from_the_published_one(published):
    """Once a newer published schema has them, NEWER_FIELDS must drop them."""
    added = re.findall(r"extend (?:type|input) (\w+) \{ (\w+):", shopify_schema.NEWER_FIELDS)

    assert added
    for type_name, field_name in added:
        assert field_name not in published.get_type(type_name).fields, (type_name, field_name)


# --- what the adapter really sends ------------------------------------------------------------


def test_every_request_each_public_method_sends_validates_with_its_variables(schema, httpserver):
    """Each public method against the stand-in (the webhook ones in both API versions)."""
    shop = ShopifyStandIn(restore_rate=5000)
    shop.add_product(
        7001,
        "Winterzauber",
        *[Variant(8000 + n, 9000 + n, f"Größe {n}", sku=f"WZ-{n}") for n in range(3)],
    )
    shop.add_variant(44001, 808950810, "Sommerwiese", sku="SW-1")
    shop.add_item(9000, (501, 4, "2026-11-02T09:30:00Z"))
    shop.add_location(501, "Lager Hamburg")
    old_shop = ShopifyStandIn(restore_rate=5000, api_version="2025-07")
    base_url = shop.install(httpserver)
    old_shop.install(httpserver)
    admin = ShopifyAdmin(base_url, TOKEN, batch_size=2, variants_per_product=2)
    old_admin = ShopifyAdmin(base_url, TOKEN, api_version="2025-07")
    callback = "https://automation.elbkerzen.example/webhooks/shopify"
    calls: dict[str, Callable[[], object]] = {
        "fetch_levels": lambda: list(admin.fetch_levels([9000, 9001, 1])),
        "fetch_products": lambda: list(admin.fetch_products([7001, 1])),
        "fetch_item_products": lambda: admin.fetch_item_products([9000, 808950810, 1]),
        "fetch_locations": admin.fetch_locations,
        "search_products": lambda: admin.search_products("winter"),
        "search_variants": lambda: admin.search_variants("WZ"),
        "product_exists": lambda: admin.product_exists(7001),
        "inventory_level": lambda: admin.inventory_level(9000, 501),
        "shop_info": admin.shop_info,
        "order_for_checkout": lambda: admin.order_for_checkout(
            "tok-1", "anna@example.com", datetime(2026, 11, 2, tzinfo=UTC)
        ),
        "list_webhook_subscriptions": lambda: (
            admin.list_webhook_subscriptions() + old_admin.list_webhook_subscriptions()
        ),
        "create_webhook_subscription": lambda: (
            admin.create_webhook_subscription("orders/create", callback),
            old_admin.create_webhook_subscription("orders/create", callback),
        ),
    }
    public = {
        name
        for name, member in inspect.getmembers(ShopifyAdmin, inspect.isfunction)
        if not name.startswith("_") and name not in _LOCAL_METHODS
    }
    assert set(calls) == public, "a new public method: add it to `calls`"

    problems = []
    for name, call in calls.items():
        sent = len(shop.requests) + len(old_shop.requests)
        call()
        requests = (shop.requests + old_shop.requests)[sent:]
        assert requests, f"{name} sent nothing"
        for request in requests:
            problem = failures(schema, request.query, request.variables)
            if problem:
                problems.append(f"{name} ({request.operation}): {problem}")

    assert problems == []
    assert {r.answer for r in shop.requests + old_shop.requests} == {"ok"}
