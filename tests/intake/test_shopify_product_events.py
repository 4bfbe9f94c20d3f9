"""Shopify's product topics and `inventory_levels/disconnect` parsed at the edge: the samples
and Shopify's published example parse to typed events, malformed bodies are refused with the
field named, and a body re-sent under another topic (the topic header is unsigned) is refused."""

import copy
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from automation.intake.sources import events
from automation.intake.sources.shopify_products import (
    MAX_LISTED_VARIANTS,
    MAX_VARIANTS,
    TEXT_LIMIT,
    LevelDisconnected,
    ProductDeleted,
    ProductUpdate,
    VariantUpdate,
)
from automation.platform.exceptions import InvalidPayload
from tests.support.signing import SHOP

SAMPLES = Path(__file__).resolve().parents[2] / "automation" / "samples" / "shopify"
BIG = 2**53 + 1  # the first integer a JavaScript number (a double) cannot hold
MAX_ID = 2**63 - 1

# Shopify's published example of products/update (webhooks reference, 2024-07 to 2026-04,
# identical in each), ids as the reference's gids spell them: its variants carry no
# inventory item.
PUBLISHED_PRODUCT = {
    "admin_graphql_api_id": "gid://shopify/Product/788032119674292922",
    "body_html": "An example T-Shirt",
    "created_at": None,
    "handle": "example-t-shirt",
    "id": 788032119674292922,
    "product_type": "Shirts",
    "published_at": "2021-12-31T19:00:00-05:00",
    "template_suffix": None,
    "title": "Example T-Shirt",
    "updated_at": "2021-12-31T19:00:00-05:00",
    "vendor": "Acme",
    "status": "active",
    "published_scope": "web",
    "tags": "example, mens, t-shirt",
    "variants": [
        {
            "admin_graphql_api_id": "gid://shopify/ProductVariant/642667041472713922",
            "barcode": None,
            "compare_at_price": "24.99",
            "created_at": "2021-12-29T19:00:00-05:00",
            "id": 642667041472713922,
            "inventory_policy": "deny",
            "position": 1,
            "price": "19.99",
            "product_id": 788032119674292922,
            "sku": None,
            "taxable": True,
            "title": "Small",
            "updated_at": "2021-12-30T19:00:00-05:00",
            "option1": "Small",
            "option2": None,
            "option3": None,
            "image_id": None,
            "inventory_item_id": None,
            "inventory_quantity": 75,
            "old_inventory_quantity": 75,
        },
    ],
    "options": [],
    "images": [],
    "image": None,
    "media": [],
    "variant_gids": [
        {
            "admin_graphql_api_id": "gid://shopify/ProductVariant/642667041472713922",
            "updated_at": "2021-12-31T00:00:00.000Z",
        },
    ],
    "has_variants_that_requires_components": False,
    "category": None,
}


def sample(name: str) -> dict:
    return json.loads((SAMPLES / name).read_text())


def parse(topic: str, body: object):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return events.parse_event("shopify", topic, raw, SHOP)


# --- the samples ------------------------------------------------------------------------------


def test_the_update_sample_is_winterzauber_with_its_two_sizes():
    event = parse("products/update", sample("products_update.json"))
    assert event == ProductUpdate(
        product_id=632910392,
        title="Winterzauber",
        status="active",
        updated_at=datetime(2026, 11, 26, 15, 10, tzinfo=UTC),
        variants=(
            VariantUpdate(
                variant_id=808950810,
                inventory_item_id=808950810,
                title="klein",
                sku="WZ-24",
                tracked=None,
                inventory_policy="deny",
                position=1,
            ),
            VariantUpdate(
                variant_id=808950812,
                inventory_item_id=808950812,
                title="groß",
                sku="WZ-34",
                tracked=None,
                inventory_policy="deny",
                position=2,
            ),
        ),
        skipped=(),
        all_variants_listed=True,
    )


def test_the_create_sample_is_a_draft_with_a_pre_order_size():
    event = parse("products/create", sample("products_create.json"))
    assert (event.status, event.updated_at) == ("draft", datetime(2026, 11, 1, 9, 0, tzinfo=UTC))
    small, big = event.variants
    assert (small.title, small.inventory_policy) == ("klein", "deny")
    # Given a size sold on when out of stock, without a SKU
    # Then the event says so, and the SKU is "" rather than None
    assert (big.title, big.inventory_policy, big.sku) == ("groß", "continue", "")


def test_the_delete_and_disconnect_samples():
    assert parse("products/delete", sample("products_delete.json")) == ProductDeleted(632910392)
    assert parse(
        "inventory_levels/disconnect", sample("inventory_levels_disconnect.json")
    ) == LevelDisconnected(inventory_item_id=808950810, location_id=24826418)


def test_shopifys_published_example_parses_and_its_variant_without_an_item_is_skipped():
    """The reference's example (and Shopify's test notification) has `inventory_item_id: null`:
    refusing it would make Shopify's own body invalid; the variant is skipped, with why."""
    event = parse("products/update", PUBLISHED_PRODUCT)
    assert event.product_id == 788032119674292922
    assert event.variants == ()
    assert event.skipped == ("variant 642667041472713922 has no inventory_item_id",)
    assert event.updated_at == datetime(2022, 1, 1, 0, 0, tzinfo=UTC)


def test_the_event_is_frozen():
    event = parse("products/delete", {"id": 1})
    with pytest.raises(AttributeError):
        event.product_id = 2


# --- ids ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [BIG, MAX_ID])
def test_ids_beyond_two_to_the_53_are_kept_exactly(value):
    body = sample("products_update.json")
    body["id"] = value
    body.pop("admin_graphql_api_id")
    for variant in body["variants"]:
        variant["product_id"] = value
    body["variants"][0].update(id=value, inventory_item_id=value)
    event = parse("products/update", body)
    assert event.product_id == value
    assert (event.variants[0].variant_id, event.variants[0].inventory_item_id) == (value, value)
    assert parse("products/delete", {"id": value}) == ProductDeleted(value)
    disconnect = {"inventory_item_id": value, "location_id": value}
    assert parse("inventory_levels/disconnect", disconnect) == LevelDisconnected(value, value)


def test_a_literal_id_beyond_two_to_the_53_in_the_raw_body_is_read_exactly():
    raw = b'{"inventory_item_id": 271878346596884015, "location_id": 24826418}'
    assert parse("inventory_levels/disconnect", raw).inventory_item_id == 271878346596884015


# --- malformed product bodies -----------------------------------------------------------------


def _without(key):
    return lambda body: body.pop(key)


def _set(key, value):
    return lambda body: body.__setitem__(key, value)


def _variant_set(key, value):
    return lambda body: body["variants"][0].__setitem__(key, value)


def _too_many_variants(body):
    body["variants"] = [copy.deepcopy(body["variants"][0])] * (MAX_LISTED_VARIANTS + 1)


MALFORMED_PRODUCTS = [
    ("missing id", _without("id"), "id must be a positive integer"),
    ("negative id", _set("id", -632910392), "id must be a positive integer"),
    ("zero id", _set("id", 0), "id must be a positive integer"),
    ("id as a string", _set("id", "632910392"), "id must be a positive integer"),
    ("id as a boolean", _set("id", True), "id must be a positive integer"),
    ("id beyond 64 bits", _set("id", 2**63), "id must be a positive integer"),
    ("missing status", _without("status"), "status must be one of active, archived, draft"),
    ("unknown status", _set("status", "deleted"), "status must be one of active, archived"),
    ("status in capitals", _set("status", "ACTIVE"), "status must be one of"),
    ("status as a list", _set("status", ["active"]), "status must be one of"),
    ("missing updated_at", _without("updated_at"), "updated_at must be an ISO 8601 timestamp"),
    ("null updated_at", _set("updated_at", None), "updated_at must be an ISO 8601 timestamp"),
    (
        "updated_at without offset",
        _set("updated_at", "2026-11-26T16:10:00"),
        "updated_at must be an ISO 8601 timestamp with offset",
    ),
    ("missing title", _without("title"), "title must be a non-empty string"),
    ("title as a number", _set("title", 42), "title must be a non-empty string"),
    ("missing variants", _without("variants"), "variants must be a list"),
    ("variants as an object", _set("variants", {"0": {}}), "variants must be a list"),
    ("variants as a string", _set("variants", "klein"), "variants must be a list"),
    ("too many variants", _too_many_variants, f"more than {MAX_LISTED_VARIANTS} entries"),
    ("a variant that is no object", _set("variants", ["klein"]), r"variants\[0\] is not an"),
    ("variant id missing", lambda b: b["variants"][0].pop("id"), r"variants\[0\]\.id must be"),
    ("variant id as a string", _variant_set("id", "808950810"), r"variants\[0\]\.id must be"),
    ("variant id as a boolean", _variant_set("id", False), r"variants\[0\]\.id must be"),
    (
        "negative inventory item",
        _variant_set("inventory_item_id", -808950810),
        r"variants\[0\]\.inventory_item_id must be a positive integer",
    ),
    (
        "inventory item as a string",
        _variant_set("inventory_item_id", "808950810"),
        r"variants\[0\]\.inventory_item_id must be a positive integer",
    ),
    (
        "inventory item as a boolean",
        _variant_set("inventory_item_id", True),
        r"variants\[0\]\.inventory_item_id must be a positive integer",
    ),
    (
        "unknown inventory policy",
        _variant_set("inventory_policy", "sometimes"),
        r"variants\[0\]\.inventory_policy must be one of continue, deny",
    ),
    (
        "missing inventory policy",
        lambda b: b["variants"][0].pop("inventory_policy"),
        r"variants\[0\]\.inventory_policy must be one of",
    ),
    ("position as a string", _variant_set("position", "1"), r"position must be a non-negative"),
    ("negative position", _variant_set("position", -1), r"position must be a non-negative"),
    ("variant title as a list", _variant_set("title", ["klein"]), r"\.title must be a string"),
    ("sku as a number", _variant_set("sku", 24), r"variants\[0\]\.sku must be a string"),
    (
        "a variant of another product",
        _variant_set("product_id", 632910393),
        r"variants\[0\]\.product_id is not the product's id",
    ),
    (
        "product_id as a boolean",
        _variant_set("product_id", True),
        r"variants\[0\]\.product_id is not the product's id",
    ),
    (
        "an order's global id",
        _set("admin_graphql_api_id", "gid://shopify/Order/632910392"),
        "not a product body: admin_graphql_api_id names 'gid://shopify/Order/632910392'",
    ),
    (
        "a variant's global id on the product",
        _set("admin_graphql_api_id", "gid://shopify/ProductVariant/632910392"),
        "not a product body: admin_graphql_api_id names",
    ),
    (
        "a product's global id on a variant",
        _variant_set("admin_graphql_api_id", "gid://shopify/Product/808950810"),
        r"variants\[0\]\.admin_graphql_api_id names",
    ),
    (
        "inventory_management neither a handle nor null",
        _variant_set("inventory_management", True),
        r"variants\[0\]\.inventory_management must be a service's handle or null",
    ),
    ("variant_gids as an object", _set("variant_gids", {}), "variant_gids must be a list"),
    (
        "too many variant_gids",
        _set("variant_gids", [{}] * (MAX_VARIANTS + 1)),
        f"variant_gids has more than {MAX_VARIANTS} entries",
    ),
]


@pytest.mark.parametrize(
    ("break_it", "reason"),
    [(change, reason) for _, change, reason in MALFORMED_PRODUCTS],
    ids=[name for name, _, _ in MALFORMED_PRODUCTS],
)
@pytest.mark.parametrize("topic", ["products/create", "products/update"])
def test_a_malformed_product_body_is_refused_with_the_field_named(topic, break_it, reason):
    body = sample("products_update.json")
    break_it(body)
    with pytest.raises(InvalidPayload, match=reason):
        parse(topic, body)


@pytest.mark.parametrize("body", [[], "Winterzauber", 632910392, None])
@pytest.mark.parametrize(
    "topic",
    ["products/create", "products/update", "products/delete", "inventory_levels/disconnect"],
)
def test_a_body_that_is_not_an_object_is_refused(topic, body):
    with pytest.raises(InvalidPayload, match="body is not a JSON object"):
        parse(topic, body)


def test_titles_and_skus_are_cut_not_refused():
    body = sample("products_update.json")
    body["title"] = "W" * 10_000
    body["variants"][0]["sku"] = "S" * 10_000
    event = parse("products/update", body)
    assert event.title == "W" * TEXT_LIMIT
    assert event.variants[0].sku == "S" * TEXT_LIMIT


@pytest.mark.parametrize("status", ["active", "archived", "draft", "unlisted"])
def test_every_documented_status_is_accepted(status):
    body = sample("products_update.json")
    body["status"] = status
    assert parse("products/update", body).status == status


# --- tracking and selling on --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("legacy_value", "tracked"),
    [("shopify", True), ("amazon_marketplace_web", True), (None, False)],
)
def test_a_body_of_a_version_before_2024_07_says_whether_the_variant_is_tracked(
    legacy_value, tracked
):
    """Shopify removed `inventory_management` from product webhooks in 2024-07; a body that
    still carries it (an older version's) is read: a handle tracks, null does not."""
    body = sample("products_update.json")
    body["variants"][0]["inventory_management"] = legacy_value
    event = parse("products/update", body)
    assert event.variants[0].tracked is tracked
    assert event.variants[1].tracked is None


def test_an_untracked_variant_that_sells_on_is_kept_as_it_is():
    body = sample("products_update.json")
    body["variants"][1].update(inventory_management=None, inventory_policy="continue")
    big = parse("products/update", body).variants[1]
    assert (big.tracked, big.inventory_policy) == (False, "continue")


def test_a_2026_07_body_does_not_say_whether_a_variant_is_tracked():
    """The pinned version's body has no such field: None, not a guessed False."""
    event = parse("products/update", sample("products_update.json"))
    assert [variant.tracked for variant in event.variants] == [None, None]


# --- products with more variants than a body lists -------------------------------------------


def test_a_product_with_more_variants_than_the_body_lists_says_so():
    """Shopify lists the first 100 variants; `variant_gids` names all of them."""
    body = sample("products_update.json")
    body["variant_gids"] = body["variant_gids"] * 60  # 120 variants, 2 listed
    assert parse("products/update", body).all_variants_listed is False


def test_without_variant_gids_a_full_list_of_100_may_be_cut():
    body = sample("products_update.json")
    del body["variant_gids"]
    assert parse("products/update", body).all_variants_listed is True
    variant = body["variants"][0]
    body["variants"] = [
        {**variant, "id": 1000 + n, "inventory_item_id": 2000 + n}
        for n in range(MAX_LISTED_VARIANTS)
    ]
    event = parse("products/update", body)
    assert len(event.variants) == MAX_LISTED_VARIANTS
    assert event.all_variants_listed is False


# --- delete and disconnect --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({}, "id must be a positive integer"),
        ({"id": -1}, "id must be a positive integer"),
        ({"id": "632910392"}, "id must be a positive integer"),
        ({"id": True}, "id must be a positive integer"),
        ({"id": 1, "title": "Winterzauber"}, "not a products/delete body: it has title"),
    ],
)
def test_a_malformed_delete_body_is_refused(body, reason):
    with pytest.raises(InvalidPayload, match=reason):
        parse("products/delete", body)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"location_id": 24826418}, "inventory_item_id must be a positive integer"),
        ({"inventory_item_id": 808950810}, "location_id must be a positive integer"),
        ({"inventory_item_id": 0, "location_id": 1}, "inventory_item_id must be a positive"),
        ({"inventory_item_id": "808950810", "location_id": 1}, "inventory_item_id must be"),
        ({"inventory_item_id": 808950810, "location_id": False}, "location_id must be a positive"),
    ],
)
def test_a_malformed_disconnect_body_is_refused(body, reason):
    with pytest.raises(InvalidPayload, match=reason):
        parse("inventory_levels/disconnect", body)


# --- a body re-sent under another topic -------------------------------------------------------


def test_an_update_body_re_sent_as_delete_is_refused():
    """It has the product's `id`: accepted, it would delete a live product."""
    with pytest.raises(InvalidPayload) as refused:
        parse("products/delete", sample("products_update.json"))
    assert str(refused.value).startswith("not a products/delete body: it has admin_graphql_api_id")
    assert "which products/delete does not carry" in str(refused.value)


def test_a_level_update_body_re_sent_as_disconnect_is_refused():
    """It names the same item and location: accepted, the item would leave the location."""
    with pytest.raises(InvalidPayload) as refused:
        parse("inventory_levels/disconnect", sample("inventory_levels_update.json"))
    assert str(refused.value) == (
        "not an inventory_levels/disconnect body: it has admin_graphql_api_id, available, "
        "updated_at, which inventory_levels/disconnect does not carry"
    )


@pytest.mark.parametrize(
    ("sample_name", "topic", "reason"),
    [
        ("products_delete.json", "products/update", "not a product body: status must be"),
        ("products_delete.json", "products/create", "not a product body: status must be"),
        ("products_delete.json", "inventory_levels/disconnect", "it has id"),
        ("inventory_levels_disconnect.json", "products/delete", "it has inventory_item_id"),
        ("inventory_levels_disconnect.json", "products/update", "id must be a positive integer"),
        ("inventory_levels_update.json", "products/update", "id must be a positive integer"),
        ("orders_create.json", "products/update", "admin_graphql_api_id names"),
        ("orders_create.json", "products/delete", "not a products/delete body"),
        ("checkouts_update.json", "products/update", "id must be a positive integer"),
    ],
)
def test_another_topics_body_is_refused(sample_name, topic, reason):
    with pytest.raises(InvalidPayload, match=reason):
        parse(topic, sample(sample_name))


@pytest.mark.parametrize(
    ("sample_name", "topic"),
    [
        ("inventory_levels_disconnect.json", "inventory_levels/update"),
        ("products_update.json", "inventory_levels/update"),
    ],
)
def test_these_bodies_are_refused_under_the_older_topics_too(sample_name, topic):
    with pytest.raises(InvalidPayload):
        parse(topic, sample(sample_name))
