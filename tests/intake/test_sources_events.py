"""Payloads parsed at the edge: one registry says which parser turns a topic's body into its
typed event, the inbox parses once, and no module outside intake/sources/ decodes a body."""

import ast
import inspect
import json
import typing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from automation.intake import inbox
from automation.intake.sources import events, load_body
from automation.intake.sources.checkout_version import CheckoutVersion
from automation.intake.sources.shopify_checkouts import OrderEvent
from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.intake.sources.shopify_privacy import (
    DataRequestBody,
    RedactRequest,
    ShopRedactRequest,
)
from automation.intake.sources.shopify_products import (
    LevelDisconnected,
    ProductDeleted,
    ProductUpdate,
)
from automation.models import CheckoutState, Delivery
from automation.platform.exceptions import InvalidPayload
from tests.support.signing import SHOP, post_shopify

AUTOMATION = Path(__file__).resolve().parents[2] / "automation"
SAMPLES = AUTOMATION / "samples"
SOURCES = AUTOMATION / "intake" / "sources"


def _real_handlers() -> dict:
    """Every registered handler by (source, topic); a batch handler by its handler function."""
    handlers = {**inbox.HANDLERS, **{key: b.handler for key, b in inbox.BATCH_HANDLERS.items()}}
    return {key: fn for key, fn in handlers.items() if not key[1].startswith("test/")}


def _json_loads_calls(path: Path) -> list[int]:
    """Line numbers of `json.loads(...)` or a bare `loads(...)` imported from json."""
    tree = ast.parse(path.read_text(), filename=str(path))
    bare = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "json"
        for alias in node.names
        if alias.name == "loads"
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "loads"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "json"
            )
            or (isinstance(node.func, ast.Name) and node.func.id in bare)
        )
    ]


def test_no_module_outside_sources_decodes_a_body():
    """Bodies are decoded by sources.load_body only (handlers, inbox, dashboard and admin
    included). Fails before: inventory, checkouts, privacy and the inbox each called
    json.loads(bytes(delivery.body))."""
    found = {
        str(path.relative_to(AUTOMATION)): lines
        for path in sorted(AUTOMATION.rglob("*.py"))
        if not path.is_relative_to(SOURCES) and (lines := _json_loads_calls(path))
    }
    assert found == {}


def test_sources_decode_a_body_in_one_place():
    """Within sources/ too: the envelopes and the parsers go through load_body."""
    found = {
        path.name: lines
        for path in sorted(SOURCES.glob("*.py"))
        if (lines := _json_loads_calls(path))
    }
    assert list(found) == ["__init__.py"]
    assert len(found["__init__.py"]) == 1


# Topics whose parsers are registered before their handlers: the inbox answers such a
# delivery `ignored` without reading its body. Remove a topic here once its handler exists.
def test_every_handled_topic_has_its_parser_and_nothing_else_is_parsed():
    """Fails before: there was no registry; each handler decoded and parsed its body itself."""
    handled = set(_real_handlers())
    assert handled == set(events.PARSERS)


@pytest.mark.parametrize("key", sorted(events.PARSERS))
def test_a_handler_takes_the_event_its_parser_returns(key):
    """The handler's first parameter is annotated with the type its topic's parser returns
    (a batch handler's: a sequence of (that type, Delivery) pairs)."""
    handler = _real_handlers()[key]
    parser = events.PARSERS[key]
    parse = getattr(parser, "__wrapped__", parser)
    returned = typing.get_type_hints(parse)["return"]
    first = next(iter(inspect.signature(handler).parameters))
    annotation = typing.get_type_hints(handler)[first]
    if key in inbox.BATCH_HANDLERS:
        assert typing.get_args(annotation) == (tuple[returned, Delivery],)
    else:
        assert annotation is returned


@pytest.mark.parametrize(
    ("source", "topic", "sample", "event_type"),
    [
        ("shopify", "inventory_levels/update", "shopify/inventory_levels_update.json", LevelUpdate),
        (
            "shopify",
            "inventory_levels/disconnect",
            "shopify/inventory_levels_disconnect.json",
            LevelDisconnected,
        ),
        ("shopify", "products/create", "shopify/products_create.json", ProductUpdate),
        ("shopify", "products/update", "shopify/products_update.json", ProductUpdate),
        ("shopify", "products/delete", "shopify/products_delete.json", ProductDeleted),
        ("shopify", "checkouts/create", "shopify/checkouts_create.json", CheckoutVersion),
        ("shopify", "checkouts/update", "shopify/checkouts_update.json", CheckoutVersion),
        ("shopify", "orders/create", "shopify/orders_create.json", OrderEvent),
        (
            "stripe",
            "checkout.session.expired",
            "stripe/checkout_session_expired.json",
            CheckoutVersion,
        ),
    ],
)
def test_each_sample_parses_to_its_typed_event(source, topic, sample, event_type):
    body = (SAMPLES / sample).read_bytes()
    event = events.parse_event(source, topic, body, SHOP)
    assert type(event) is event_type
    assert typing.get_type_hints(type(event))  # a dataclass with typed fields, not a dict


PRIVACY_BODIES = [
    (
        "customers/redact",
        {
            "shop_id": 1,
            "shop_domain": SHOP,
            "customer": {"id": 7, "email": "kim@example.com", "phone": None},
            "orders_to_redact": [],
        },
        RedactRequest,
    ),
    ("shop/redact", {"shop_id": 1, "shop_domain": SHOP}, ShopRedactRequest),
    (
        "customers/data_request",
        {"shop_id": 1, "shop_domain": SHOP, "customer": {"id": 7}, "data_request": {"id": 9}},
        DataRequestBody,
    ),
]


@pytest.mark.parametrize(("topic", "body", "event_type"), PRIVACY_BODIES)
def test_privacy_bodies_parse_and_check_their_shop(topic, body, event_type):
    raw = json.dumps(body).encode()
    assert type(events.parse_event("shopify", topic, raw, SHOP)) is event_type
    with pytest.raises(InvalidPayload, match="body names shop 'elbkerzen.myshopify.com'"):
        events.parse_event("shopify", topic, raw, "other-shop.myshopify.com")


def test_an_order_event_carries_the_checkout_and_the_customer():
    body = json.loads((SAMPLES / "shopify/orders_create.json").read_text())
    body.update(
        checkout_token=" tok-1 ", created_at="2026-11-30T12:00:00+01:00", email="Kim@Example.com"
    )
    order = events.parse_event("shopify", "orders/create", json.dumps(body).encode())
    assert order.checkout_token == "tok-1"
    assert order.created_at == datetime(2026, 11, 30, 11, 0, tzinfo=UTC)
    assert order.named_email.lower() == "kim@example.com"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ([], "body is not a JSON object"),
        ({"id": "1"}, "not an orders/create body: id must be a positive integer"),
        (
            {"id": 1, "admin_graphql_api_id": "gid://shopify/Checkout/1"},
            "not an orders/create body: admin_graphql_api_id names",
        ),
        (
            {"id": 1, "checkout_token": "t", "created_at": "yesterday"},
            "created_at must be an ISO 8601 timestamp with offset",
        ),
    ],
)
def test_an_order_body_without_an_orders_shape_is_refused(body, reason):
    with pytest.raises(InvalidPayload, match=reason):
        events.parse_event("shopify", "orders/create", json.dumps(body).encode())


def test_a_topic_without_a_parser_has_no_event_and_its_body_is_not_read():
    assert events.parse_event("shopify", "test/topic", b"not json") is None


def test_load_body_decodes_stored_bytes_and_memoryviews():
    assert load_body(memoryview(b'{"a": 1}')) == {"a": 1}
    with pytest.raises(ValueError):
        load_body(b"{")


@pytest.mark.django_db(transaction=True)
def test_the_inbox_hands_the_handler_the_parsed_event(client, run_worker):
    """The inbox parses once and passes the typed event with the delivery."""
    seen = []

    def record(event, delivery):
        seen.append((event, delivery.topic))
        return inbox.Outcome(Delivery.Status.DONE, "seen")

    key = ("shopify", "checkouts/update")
    real = inbox.HANDLERS[key]
    inbox.HANDLERS[key] = record
    try:
        post_shopify(
            client,
            json.loads((SAMPLES / "shopify/checkouts_update.json").read_text()),
            topic="checkouts/update",
        )
        run_worker()
    finally:
        inbox.HANDLERS[key] = real
    assert len(seen) == 1
    event, topic = seen[0]
    assert topic == "checkouts/update"
    assert isinstance(event, CheckoutVersion)
    assert event.source == CheckoutState.Source.SHOPIFY
    assert Delivery.objects.get().status == Delivery.Status.DONE
