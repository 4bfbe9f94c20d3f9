"""The Shopify Admin adapter against the local stand-in: pagination, cost pacing, errors, webhooks.

The stand-in and the adapter share one fake clock whose `sleep` advances it, so throttle waits are
exact and instant: a test can say "the adapter waited 6.9 s" without taking 6.9 s.
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime

import pytest

from automation.shopify.queries import (
    LOCATIONS_PAGE_SIZE,
    PRODUCT_SEARCH_LIMIT,
    PRODUCT_SEARCH_VARIANTS,
    Level,
    LocationInfo,
    ProductInfo,
    ShopifyAdmin,
    ShopInfo,
    Subscription,
    VariantInfo,
    enum_to_topic,
    product_search_terms,
    topic_to_enum,
)
from automation.shopify.tokens import (
    TOKEN_RENEW_MARGIN,
    ClientCredentialsTokens,
    request_access_token,
)
from automation.shopify.transport import (
    ShopifyAdminError,
    ShopifyCredentialsError,
    ShopifyThrottled,
)
from tests.support.shopify_standin import (
    CLIENT_ID,
    LEVEL_CREATED_AT,
    SHOP_ID,
    SHOP_NAME,
    TOKEN,
    TOKEN_LIFETIME,
    ShopifyStandIn,
    Variant,
)

WHEN = "2026-11-02T09:30:00Z"
CALLBACK = "https://automation.elbkerzen.example/webhooks/shopify"


class FakeClock:
    """Monotonic time that only moves when someone sleeps."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def shop(httpserver, clock) -> ShopifyStandIn:
    standin = ShopifyStandIn(clock=clock)
    standin.install(httpserver)
    yield standin
    httpserver.check_handler_errors()


def make_admin(shop: ShopifyStandIn, clock: FakeClock, **kwargs) -> ShopifyAdmin:
    kwargs.setdefault("token", TOKEN)
    return ShopifyAdmin(shop.base_url, sleep=clock.sleep, clock=clock, **kwargs)


def stock(shop: ShopifyStandIn, items: range, locations: int = 3) -> None:
    for item_id in items:
        shop.add_item(item_id, *[(500 + n, n, WHEN) for n in range(locations)])


def answers(shop: ShopifyStandIn) -> list[str]:
    return [r.answer for r in shop.requests]


def test_token_header_version_and_variables_reach_shopify(shop, clock):
    shop.add_item(808950810, (24826418, 7, "2026-11-02T10:30:00+01:00"))
    admin = make_admin(shop, clock, levels_per_item=10)

    levels = list(admin.fetch_levels([808950810]))

    assert levels == [
        Level(808950810, 24826418, 7, datetime(2026, 11, 2, 9, 30, tzinfo=UTC)),
    ]
    assert levels[0].updated_at.tzinfo is UTC
    (request,) = shop.requests
    assert request.headers["X-Shopify-Access-Token"] == TOKEN
    assert request.root == "nodes"
    assert request.variables == {"ids": ["gid://shopify/InventoryItem/808950810"], "first": 10}
    assert admin.url.endswith("/admin/api/2026-07/graphql.json")


def test_levels_are_paged_across_batches_and_items_with_many_locations(shop, clock):
    """120 items in batches of 50; every tenth item has 7 levels, more than a page of 3."""
    for item_id in range(1, 121):
        count = 7 if item_id % 10 == 0 else 2
        shop.add_item(item_id, *[(9000 + n, item_id * 100 + n, WHEN) for n in range(count)])
    admin = make_admin(shop, clock, batch_size=50, levels_per_item=3)

    levels = list(admin.fetch_levels(list(range(1, 121))))

    expected = {
        (item_id, 9000 + n, item_id * 100 + n)
        for item_id in range(1, 121)
        for n in range(7 if item_id % 10 == 0 else 2)
    }
    assert {(lv.inventory_item_id, lv.location_id, lv.available) for lv in levels} == expected
    assert len(levels) == len(expected)  # nothing twice
    batches = [len(r.variables["ids"]) for r in shop.requests if r.root == "nodes"]
    assert batches == [50, 50, 20]
    follow_ups = [r for r in shop.requests if r.root == "inventoryItem"]
    assert len(follow_ups) == 12 * 2  # 7 levels = 3 in the batch, then pages of 3 and 1
    assert all(r.variables["after"] for r in follow_ups)
    assert set(answers(shop)) == {"ok"}


def test_deleted_item_is_skipped_and_undated_level_counted(shop, clock):
    shop.add_item(1, (11, 4, WHEN), (12, 5, None))
    shop.add_item(3, (11, 0, WHEN))
    admin = make_admin(shop, clock)

    levels = list(admin.fetch_levels([1, 2, 3]))

    assert [(lv.inventory_item_id, lv.location_id, lv.available) for lv in levels] == [
        (1, 11, 4),
        (3, 11, 0),
    ]
    assert admin.skipped == 1
    assert admin.missing == 1


def test_throttled_answers_are_waited_out_then_the_same_query_succeeds(shop, clock):
    stock(shop, range(1, 11))
    shop.script("THROTTLED", "THROTTLED")  # e.g. another worker emptied the bucket, twice
    admin = make_admin(shop, clock, levels_per_item=5)

    levels = list(admin.fetch_levels(list(range(1, 11))))

    assert len(levels) == 30
    assert answers(shop) == ["THROTTLED", "THROTTLED", "ok"]
    requested = shop.requests[0].requested_cost  # 10 items × (1 + 2 + 5) = 80
    assert requested == 80
    # Empty bucket, 100 points/s: 0.8 s is exactly enough, each time.
    assert clock.sleeps == [pytest.approx(0.8, abs=0.011)] * 2
    assert {r.variables["ids"][0] for r in shop.requests} == {"gid://shopify/InventoryItem/1"}
    assert admin.throttled == 2


def test_pacing_keeps_out_of_throttled_and_close_to_the_floor(httpserver, clock):
    """A small bucket (200 points, 50/s): the adapter waits before sending, never after."""
    shop = ShopifyStandIn(clock=clock, maximum_available=200, restore_rate=50)
    shop.install(httpserver)
    stock(shop, range(1, 201))
    admin = make_admin(shop, clock, batch_size=25, levels_per_item=3)

    levels = list(admin.fetch_levels(list(range(1, 201))))

    assert len(levels) == 600
    assert "THROTTLED" not in answers(shop)
    elapsed = clock.now - 1_000.0
    floor = (shop.total_actual_cost - 200) / 50
    last = shop.requests[-1]
    # The only unavoidable extra: the last query must find its *requested* cost in the bucket.
    assert floor <= elapsed <= floor + (last.requested_cost - last.actual_cost) / 50 + 0.05
    assert admin.actual_cost == shop.total_actual_cost


def test_http_429_honours_retry_after(shop, clock):
    stock(shop, range(1, 3))
    shop.script(("429", 2.5))
    admin = make_admin(shop, clock)

    assert len(list(admin.fetch_levels([1, 2]))) == 6

    assert answers(shop) == ["429", "ok"]
    assert clock.sleeps == [2.5]


def test_throttled_without_end_raises_shopify_throttled(shop, clock):
    stock(shop, range(1, 3))
    shop.script(*["THROTTLED"] * 3)
    admin = make_admin(shop, clock, max_retries=2)

    with pytest.raises(ShopifyThrottled) as caught:
        list(admin.fetch_levels([1, 2]))

    assert isinstance(caught.value, ShopifyAdminError)
    assert caught.value.retry_after and caught.value.retry_after > 0
    assert answers(shop) == ["THROTTLED"] * 3


def test_bad_token_says_so(shop, clock):
    admin = make_admin(shop, clock, token="shpat_wrong")

    with pytest.raises(ShopifyAdminError, match="access token") as caught:
        list(admin.fetch_levels([1]))

    assert caught.value.status == 401
    assert len(shop.requests) == 1  # not retried


def test_batch_over_max_cost_is_split_in_halves(shop, clock):
    """50 items × (1 + 2 + 50) = 2,650 points > 1,000: halves, then halves again."""
    stock(shop, range(1, 51), locations=50)
    admin = make_admin(shop, clock, batch_size=50, levels_per_item=50)

    assert len(list(admin.fetch_levels(list(range(1, 51))))) == 2500

    assert [len(r.variables["ids"]) for r in shop.requests] == [12, 13, 12, 13]
    assert max(r.requested_cost for r in shop.requests) <= 1000
    assert "MAX_COST_EXCEEDED" not in answers(shop)


def test_pages_shrink_to_the_levels_items_have(shop, clock):
    """Asking for 50 levels when items have 3 reserves 47 unused points per item: ask for 6."""
    stock(shop, range(1, 101))
    shop.add_item(77, *[(500 + n, n, WHEN) for n in range(9)])  # one item at more locations
    admin = make_admin(shop, clock, batch_size=50, levels_per_item=50)

    assert len(list(admin.fetch_levels(list(range(1, 101))))) == 99 * 3 + 9

    shapes = [
        (r.root, len(r.variables.get("ids", [])), r.variables["first"]) for r in shop.requests
    ]
    assert shapes == [
        ("nodes", 12, 50),  # nothing known yet: 12 × 53 = 636 fits, 25 × 53 would not
        ("nodes", 13, 6),
        ("nodes", 25, 6),
        ("nodes", 50, 6),  # item 77's 9 levels arrive as 6 ...
        ("inventoryItem", 0, 50),  # ... and the rest in one follow-up
    ]


def test_a_refused_batch_teaches_the_cost_and_is_split(httpserver, clock):
    """Shopify's formula differs from ours (here: a stricter cap): the refusal is not fatal."""
    shop = ShopifyStandIn(clock=clock, max_query_cost=300)
    shop.install(httpserver)
    stock(shop, range(1, 41))
    admin = make_admin(shop, clock, batch_size=40, levels_per_item=10)  # 40 × 13 = 520 points

    assert len(list(admin.fetch_levels(list(range(1, 41))))) == 120

    assert answers(shop)[0] == "MAX_COST_EXCEEDED"
    assert [len(r.variables["ids"]) for r in shop.requests[1:]] == [20, 20]
    assert set(answers(shop)[1:]) == {"ok"}


def test_server_error_is_retried_for_reads(shop, clock):
    stock(shop, range(1, 2))
    shop.script(503)
    admin = make_admin(shop, clock)

    assert len(list(admin.fetch_levels([1]))) == 3
    assert answers(shop) == ["503", "ok"]


def test_unreachable_shop_is_our_error(clock):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    admin = ShopifyAdmin(f"http://127.0.0.1:{port}", TOKEN, sleep=clock.sleep, clock=clock)

    with pytest.raises(ShopifyAdminError, match="unreachable"):
        list(admin.fetch_levels([1]))


def test_missing_subscription_is_found_and_created(shop, clock):
    """Three of our four topics are subscribed (among 101 others: two pages); one is missing."""
    wanted = ["inventory_levels/update", "checkouts/create", "checkouts/update", "orders/create"]
    for n in range(101):
        shop.subscriptions.append(
            {
                "id": f"gid://shopify/WebhookSubscription/{n}",
                "topic": "PRODUCTS_UPDATE",
                "uri": f"https://other.example/{n}",
            }
        )
    for n, topic in enumerate(["INVENTORY_LEVELS_UPDATE", "CHECKOUTS_CREATE", "ORDERS_CREATE"]):
        shop.subscriptions.append(
            {"id": f"gid://shopify/WebhookSubscription/9{n}", "topic": topic, "uri": CALLBACK}
        )
    admin = make_admin(shop, clock)

    present = admin.list_webhook_subscriptions()
    have = {s.topic for s in present if s.callback_url == CALLBACK}
    missing = [topic for topic in wanted if topic not in have]
    created = [admin.create_webhook_subscription(topic, CALLBACK) for topic in missing]

    assert len(present) == 104
    assert [r.variables["after"] is None for r in shop.requests[:2]] == [True, False]
    assert missing == ["checkouts/update"]
    assert created == [Subscription(created[0].id, "checkouts/update", CALLBACK)]
    mutation = shop.requests[-1]
    assert mutation.root == "webhookSubscriptionCreate"
    assert mutation.variables == {
        "topic": "CHECKOUTS_UPDATE",
        "webhookSubscription": {"uri": CALLBACK, "format": "JSON"},
    }
    assert {"topic": "CHECKOUTS_UPDATE", "uri": CALLBACK}.items() <= shop.subscriptions[-1].items()


def test_create_refused_by_shopify_raises_with_its_message(shop, clock):
    shop.subscriptions.append(
        {"id": "gid://shopify/WebhookSubscription/1", "topic": "ORDERS_CREATE", "uri": CALLBACK}
    )
    admin = make_admin(shop, clock)

    with pytest.raises(ShopifyAdminError, match="already been taken"):
        admin.create_webhook_subscription("orders/create", CALLBACK)


def test_older_api_versions_use_callback_url(httpserver, clock):
    """Before 2025-10 there is no `uri`: the endpoint union and `callbackUrl` input instead."""
    shop = ShopifyStandIn(clock=clock, api_version="2025-07")
    shop.install(httpserver)
    admin = make_admin(shop, clock, api_version="2025-07")

    created = admin.create_webhook_subscription("inventory_levels/update", CALLBACK)
    listed = admin.list_webhook_subscriptions()

    assert shop.requests[0].variables["webhookSubscription"] == {
        "callbackUrl": CALLBACK,
        "format": "JSON",
    }
    assert "WebhookHttpEndpoint" in shop.requests[1].query
    assert listed == [created]
    assert created.callback_url == CALLBACK


@pytest.mark.parametrize(
    ("topic", "enum"),
    [
        ("inventory_levels/update", "INVENTORY_LEVELS_UPDATE"),
        ("checkouts/create", "CHECKOUTS_CREATE"),
        ("checkouts/update", "CHECKOUTS_UPDATE"),
        ("orders/create", "ORDERS_CREATE"),
        ("app/uninstalled", "APP_UNINSTALLED"),
        ("app/scopes_update", "APP_SCOPES_UPDATE"),
    ],
)
def test_topic_names_map_both_ways(topic, enum):
    assert topic_to_enum(topic) == enum
    assert enum_to_topic(enum) == topic
    assert topic_to_enum(enum) == enum


# --- client credentials (Dev Dashboard apps) ---------------------------------------------------

SECRET = "shpss_standin_secret"


@pytest.fixture
def dev_shop(httpserver, clock) -> ShopifyStandIn:
    """A shop whose app comes from the Dev Dashboard: no static token, only client credentials."""
    standin = ShopifyStandIn(clock=clock, token="", client_id=CLIENT_ID, client_secret=SECRET)
    standin.install(httpserver)
    stock(standin, range(1, 3))
    yield standin
    httpserver.check_handler_errors()


def credentials(shop: ShopifyStandIn, clock: FakeClock, **kwargs) -> ClientCredentialsTokens:
    kwargs.setdefault("client_secret", SECRET)
    return ClientCredentialsTokens(
        shop.base_url,
        CLIENT_ID,
        kwargs.pop("client_secret"),
        clock=clock,
        request=lambda *args, **kw: request_access_token(*args, sleep=clock.sleep, **kw),
        **kwargs,
    )


def test_a_client_credentials_token_is_fetched_once_and_sent(dev_shop, clock):
    tokens = credentials(dev_shop, clock)
    admin = make_admin(dev_shop, clock, token=tokens)

    assert len(list(admin.fetch_levels([1, 2]))) == 6
    assert len(list(admin.fetch_levels([1]))) == 3

    (grant,) = dev_shop.token_requests
    assert grant.form == {"grant_type": "client_credentials", "client_id": CLIENT_ID}
    sent = {r.headers["X-Shopify-Access-Token"] for r in dev_shop.requests}
    assert sent == set(dev_shop.issued)
    assert answers(dev_shop) == ["ok", "ok"]


def test_the_token_answer_is_read_as_shopify_documents_it(dev_shop, clock):
    token = request_access_token(dev_shop.base_url, CLIENT_ID, SECRET)

    assert token.expires_in == TOKEN_LIFETIME == 86399
    assert token.value in dev_shop.issued
    assert token.value not in repr(token)


def test_a_token_is_renewed_five_minutes_before_it_expires(dev_shop, clock):
    tokens = credentials(dev_shop, clock)
    first = tokens.current()

    clock.now += TOKEN_LIFETIME - TOKEN_RENEW_MARGIN - 1
    assert tokens.current() == first  # 5 min and 1 s left: still good
    clock.now += 1
    second = tokens.current()  # 5 min left: Shopify would still take it, we do not risk it

    assert second != first
    assert len(dev_shop.token_requests) == 2


def test_an_expired_token_gets_401_then_one_new_token_and_the_query_again(dev_shop, clock):
    tokens = credentials(dev_shop, clock, renew_margin=0)
    admin = make_admin(dev_shop, clock, token=tokens)
    list(admin.fetch_levels([1]))
    dev_shop.expire_tokens()  # e.g. the machine slept through the token's 24 hours

    assert len(list(admin.fetch_levels([1, 2]))) == 6

    assert answers(dev_shop) == ["ok", "401", "ok"]
    assert len(dev_shop.token_requests) == 2
    assert admin.token_renewals == 1
    retried = dev_shop.requests[-1]
    assert (
        retried.headers["X-Shopify-Access-Token"]
        != dev_shop.requests[1].headers["X-Shopify-Access-Token"]
    )
    assert retried.variables == dev_shop.requests[1].variables


def test_a_mutation_refused_with_401_is_sent_again_with_the_new_token(dev_shop, clock):
    admin = make_admin(dev_shop, clock, token=credentials(dev_shop, clock))
    admin.list_webhook_subscriptions()
    dev_shop.expire_tokens()

    created = admin.create_webhook_subscription("orders/create", CALLBACK)

    assert [r.root for r in dev_shop.requests[1:]] == ["webhookSubscriptionCreate"] * 2
    assert answers(dev_shop)[1:] == ["401", "ok"]
    assert [s["id"] for s in dev_shop.subscriptions] == [created.id]


def test_a_second_401_is_an_error_not_a_loop(dev_shop, clock):
    dev_shop.script(401, 401, 401)  # the app's access was revoked: fresh tokens are refused too
    admin = make_admin(dev_shop, clock, token=credentials(dev_shop, clock))

    with pytest.raises(ShopifyAdminError, match="freshly fetched") as caught:
        list(admin.fetch_levels([1]))

    assert caught.value.status == 401
    assert answers(dev_shop) == ["401", "401"]
    assert len(dev_shop.token_requests) == 2  # the first token and exactly one renewal


def test_a_wrong_client_secret_is_a_clear_permanent_error(dev_shop, clock):
    tokens = credentials(
        dev_shop, clock, client_secret="shpss_wrong", credentials_hint="SHOPIFY_CLIENT_SECRET"
    )
    admin = make_admin(dev_shop, clock, token=tokens)

    with pytest.raises(ShopifyCredentialsError) as caught:
        list(admin.fetch_levels([1]))

    assert "invalid_client" in str(caught.value)
    assert "SHOPIFY_CLIENT_SECRET" in str(caught.value)
    assert "shpss_wrong" not in str(caught.value)
    assert (caught.value.status, caught.value.code) == (400, "invalid_client")
    assert len(dev_shop.token_requests) == 1  # not retried: waiting does not fix a secret
    assert dev_shop.requests == []


def test_the_token_endpoint_failing_briefly_is_retried(dev_shop, clock):
    dev_shop.script_token(503)

    assert request_access_token(dev_shop.base_url, CLIENT_ID, SECRET, sleep=clock.sleep)

    assert [r.answer for r in dev_shop.token_requests] == ["503", "ok"]


def test_the_token_endpoint_down_is_a_transient_error_not_a_credentials_error(dev_shop, clock):
    dev_shop.script_token(502, 503, 500)

    with pytest.raises(ShopifyAdminError) as caught:
        request_access_token(dev_shop.base_url, CLIENT_ID, SECRET, sleep=clock.sleep)

    assert not isinstance(caught.value, ShopifyCredentialsError)
    assert caught.value.status == 500
    assert len(dev_shop.token_requests) == 3


def test_the_token_endpoint_unreachable_is_our_error(clock):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    with pytest.raises(ShopifyAdminError, match="unreachable") as caught:
        request_access_token(f"http://127.0.0.1:{port}", CLIENT_ID, SECRET, sleep=clock.sleep)
    assert not isinstance(caught.value, ShopifyCredentialsError)


def test_the_static_token_is_refused_when_the_shop_only_knows_client_credentials(dev_shop, clock):
    admin = make_admin(dev_shop, clock)  # the legacy TOKEN

    with pytest.raises(ShopifyAdminError, match="access token") as caught:
        list(admin.fetch_levels([1]))

    assert caught.value.status == 401
    assert dev_shop.token_requests == []  # a static token cannot be renewed


def test_a_token_living_less_than_the_margin_is_used_once_and_not_kept(dev_shop, clock):
    dev_shop.token_lifetime = TOKEN_RENEW_MARGIN - 1
    tokens = credentials(dev_shop, clock)

    first, second = tokens.current(), tokens.current()

    assert first != second
    assert len(dev_shop.token_requests) == 2


def test_shop_info_names_the_shop_the_token_opens_and_a_refused_token_says_so(shop, clock):
    """`shop { id name }` (https://shopify.dev/docs/api/admin-graphql/latest/queries/shop):
    the public read privacy.py's uninstall check uses, and "Verbindung testen" will. Fails
    before: the adapter had no public read of the shop (privacy.py called `_execute`)."""
    admin = make_admin(shop, clock)

    assert admin.shop_info() == ShopInfo(id=SHOP_ID, name=SHOP_NAME)
    (request,) = shop.requests
    assert (request.root, request.answer, request.actual_cost) == ("shop", "ok", 1)

    shop.token = ""  # the app uninstalled: the token no longer opens the shop
    with pytest.raises(ShopifyAdminError) as refused:
        admin.shop_info()
    assert refused.value.status == 401


# --- the catalogue: products, variants, inventory items, locations -----------------------------

LATER = "2026-11-28T15:10:00Z"
BIG_ID = 2**53 + 1  # Shopify ids can exceed what a JSON double holds


def catalogue(shop: ShopifyStandIn, products: range, variants: int = 1) -> None:
    """Products 1..n, each with `variants` variants (id 100 × product + n, item 1000 × ...)."""
    for product_id in products:
        shop.add_product(
            product_id,
            f"Kerze {product_id}",
            *[
                Variant(
                    100 * product_id + n, 1000 * product_id + n, f"Größe {n}", f"K{product_id}-{n}"
                )
                for n in range(variants)
            ],
        )


def test_a_product_comes_with_its_variants_tracked_or_not_deny_or_continue(shop, clock):
    """The shapes of Product and ProductVariant (shopify.dev 2026-07): enums upper-case on the
    wire, lower-case for us like the REST webhook; a null `sku` is ""."""
    shop.add_product(
        BIG_ID,
        "Winterzauber",
        Variant(44001, 808950810, "Klein", sku="WZ-S"),
        Variant(44002, 808950811, "Vorbestellung", inventory_policy="CONTINUE"),
        Variant(44003, 808950812, "Geschenkkarte", tracked=False),
        status="UNLISTED",
        updated_at="2026-11-28T16:10:00+01:00",
    )
    admin = make_admin(shop, clock)

    (product,) = admin.fetch_products([BIG_ID])

    assert product == ProductInfo(
        product_id=BIG_ID,
        title="Winterzauber",
        status="unlisted",
        updated_at=datetime(2026, 11, 28, 15, 10, tzinfo=UTC),
        variants=(
            VariantInfo(44001, 808950810, "Klein", "WZ-S", True, "deny", 1),
            VariantInfo(44002, 808950811, "Vorbestellung", "", True, "continue", 2),
            VariantInfo(44003, 808950812, "Geschenkkarte", "", False, "deny", 3),
        ),
    )
    assert product.updated_at.tzinfo is UTC
    assert all(v.available is None for v in product.variants)  # not asked for
    (request,) = shop.requests
    assert (request.operation, request.answer) == ("ProductsByIds", "ok")
    assert request.variables == {"ids": [f"gid://shopify/Product/{BIG_ID}"], "variants": 50}
    assert admin.deleted_products == set()


@pytest.mark.parametrize("status", ["ACTIVE", "ARCHIVED", "DRAFT", "UNLISTED"])
def test_every_product_status_arrives_as_the_webhook_spells_it(shop, clock, status):
    shop.add_product(1, "Kerze", Variant(11, 111), status=status)

    (product,) = make_admin(shop, clock).fetch_products([1])

    assert product.status == status.lower()


def test_deleted_products_are_reported_not_yielded(shop, clock):
    catalogue(shop, range(1, 4))
    shop.add_item(1001, (11, 4, WHEN))  # an inventory item's id is no product's
    admin = make_admin(shop, clock)

    products = list(admin.fetch_products([1, 7, 3, 1001, 3]))

    assert sorted(p.product_id for p in products) == [1, 3]
    assert admin.deleted_products == {7, 1001}
    assert len(shop.requests) == 1  # ids asked once, duplicates dropped
    assert shop.requests[0].variables["ids"] == [
        f"gid://shopify/Product/{n}" for n in (1, 7, 3, 1001)
    ]


def test_variants_are_paged_across_batches_and_products_with_many_variants(shop, clock):
    """30 products in batches of 20; every tenth has 7 variants, more than a page of 3."""
    for product_id in range(1, 31):
        catalogue(
            shop, range(product_id, product_id + 1), variants=7 if product_id % 10 == 0 else 2
        )
    admin = make_admin(shop, clock, batch_size=20, variants_per_product=3)

    products = {p.product_id: p for p in admin.fetch_products(list(range(1, 31)))}

    assert sorted(products) == list(range(1, 31))
    assert [v.position for v in products[10].variants] == [1, 2, 3, 4, 5, 6, 7]
    assert [v.variant_id for v in products[20].variants] == [2000 + n for n in range(7)]
    assert len(products[11].variants) == 2
    batches = [len(r.variables["ids"]) for r in shop.requests if r.root == "nodes"]
    assert batches == [20, 10]
    follow_ups = [r for r in shop.requests if r.operation == "ProductVariantsPage"]
    assert len(follow_ups) == 3 * 2  # 7 variants = 3 in the batch, then pages of 3 and 1
    assert all(r.variables["after"] and r.variables["first"] == 3 for r in follow_ups)
    assert set(answers(shop)) == {"ok"}


def test_a_product_deleted_between_two_pages_of_variants_is_reported(shop, clock, monkeypatch):
    catalogue(shop, range(1, 3), variants=5)
    answer_page = shop._product_root

    def deleted_meanwhile(query, variables):
        shop.products.pop(2, None)
        return answer_page(query, variables)

    monkeypatch.setattr(shop, "_product_root", deleted_meanwhile)
    admin = make_admin(shop, clock, variants_per_product=2)

    products = list(admin.fetch_products([1, 2]))

    assert [(p.product_id, len(p.variants)) for p in products] == [(1, 5)]
    assert admin.deleted_products == {2}  # its first page arrived, its second did not
    assert [r.operation for r in shop.requests].count("ProductVariantsPage") == 3


def test_product_batches_are_split_by_cost_and_pages_shrink_to_the_variants_products_have(
    shop, clock
):
    """50 products × (3 + 2 × 50) = 5,150 points > 1,000: halves until 6 fit (618), then pages
    of twice the variants seen (2 × 2 = 4): 44 × (3 + 8) = 484."""
    catalogue(shop, range(1, 51), variants=2)
    admin = make_admin(shop, clock, batch_size=50, variants_per_product=50)

    assert len(list(admin.fetch_products(list(range(1, 51))))) == 50

    shapes = [(len(r.variables["ids"]), r.variables["variants"]) for r in shop.requests]
    assert shapes == [(6, 50), (6, 4), (13, 4), (25, 4)]
    assert shop.requests[0].requested_cost == 6 * (3 + 2 * 50) == 618
    assert [r.requested_cost for r in shop.requests] == [
        admin.estimate_cost("products", n, first) for n, first in shapes
    ]
    assert max(r.requested_cost for r in shop.requests) <= 1000
    assert "MAX_COST_EXCEEDED" not in answers(shop)


def test_a_refused_product_batch_teaches_the_cost_and_is_split(httpserver, clock):
    shop = ShopifyStandIn(clock=clock, max_query_cost=300)
    shop.install(httpserver)
    catalogue(shop, range(1, 21))
    admin = make_admin(shop, clock, batch_size=20, variants_per_product=5)  # 20 × 13 = 260

    shop.max_query_cost = 200  # Shopify's limit is stricter than we thought
    assert len(list(admin.fetch_products(list(range(1, 21))))) == 20

    assert answers(shop)[0] == "MAX_COST_EXCEEDED"
    assert [len(r.variables["ids"]) for r in shop.requests[1:]] == [10, 10]
    assert set(answers(shop)[1:]) == {"ok"}


def test_products_are_paced_by_the_bucket_not_throttled(httpserver, clock):
    """A small bucket (200 points, 50/s): the adapter waits before sending, never after."""
    shop = ShopifyStandIn(clock=clock, maximum_available=200, restore_rate=50)
    shop.install(httpserver)
    catalogue(shop, range(1, 121), variants=3)
    admin = make_admin(shop, clock, batch_size=10, variants_per_product=6)

    assert len(list(admin.fetch_products(list(range(1, 121))))) == 120

    assert "THROTTLED" not in answers(shop)
    assert clock.sleeps  # it did wait
    elapsed = clock.now - 1_000.0
    floor = (shop.total_actual_cost - 200) / 50
    last = shop.requests[-1]
    assert floor <= elapsed <= floor + (last.requested_cost - last.actual_cost) / 50 + 0.05


def test_inventory_items_learn_their_product_and_variant_in_batches(shop, clock):
    catalogue(shop, range(1, 61))
    shop.add_item(5, (11, 4, WHEN))  # levels but no variant: as good as unknown here
    admin = make_admin(shop, clock, batch_size=25)

    found = admin.fetch_item_products([1000 * n for n in range(1, 61)] + [5, 1000])

    assert found == {1000 * n: (n, 100 * n) for n in range(1, 61)}
    assert admin.missing == 1
    assert [len(r.variables["ids"]) for r in shop.requests] == [25, 25, 11]
    assert {r.operation for r in shop.requests} == {"InventoryItemProducts"}
    assert shop.requests[0].requested_cost == 25 * 3
    assert shop.requests[0].variables["ids"][0] == "gid://shopify/InventoryItem/1000"


def test_locations_include_inactive_and_offline_ones_over_several_pages(shop, clock):
    """`locations` lists active ones only unless asked (includeInactive: true)."""
    for n in range(LOCATIONS_PAGE_SIZE + 20):
        shop.add_location(600 + n, f"Filiale {n}")
    shop.add_location(501, "Lager Hamburg", fulfills_online_orders=False)
    shop.add_location(502, "Alter Laden", is_active=False, fulfills_online_orders=False)
    shop.add_location(503, "Versanddienst (alt)", legacy=True)
    admin = make_admin(shop, clock)

    locations = {location.location_id: location for location in admin.fetch_locations()}

    assert len(locations) == LOCATIONS_PAGE_SIZE + 23
    assert locations[501] == LocationInfo(501, "Lager Hamburg", False, True)
    assert locations[502] == LocationInfo(502, "Alter Laden", False, False)
    assert locations[503] == LocationInfo(503, "Versanddienst (alt)", True, True)
    assert locations[600] == LocationInfo(600, "Filiale 0", True, True)
    assert [r.variables["after"] is None for r in shop.requests] == [True, False]
    assert "includeInactive: true" in shop.requests[0].query
    assert shop.requests[0].requested_cost == 2 + LOCATIONS_PAGE_SIZE


def test_the_standin_lists_active_locations_only_by_default(shop, clock):
    """Shopify's default, which the adapter's query overrides: checked here on the stand-in."""
    shop.add_location(501, "Lager", is_active=False)
    shop.add_location(502, "Laden")
    admin = make_admin(shop, clock)

    data = admin._execute(
        "query L { locations(first: 5) { edges { node { id } } } }", {}, kind="locations", first=5
    )

    assert [e["node"]["id"] for e in data["locations"]["edges"]] == ["gid://shopify/Location/502"]


# --- the product picker ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "sent"),
    [
        ("winter", "title:winter* OR sku:winter*"),
        ("  WZ-200 ", "title:WZ-200* OR sku:WZ-200*"),
        ("Kerze (rot)", "title:Kerze* title:rot*"),
        ("kerze OR -rot", "title:kerze* title:OR* title:rot*"),
        ('a"b:c*', "title:a* title:b* title:c*"),
        ("*:() -", ""),
    ],
)
def test_what_the_merchant_types_becomes_a_title_or_sku_search(typed, sent):
    assert product_search_terms(typed) == sent


@pytest.fixture
def candles(shop) -> ShopifyStandIn:
    shop.add_location(11, "Laden")
    shop.add_location(12, "Lager", fulfills_online_orders=False)
    shop.add_location(13, "Alter Laden", is_active=False)
    shop.add_product(
        1,
        "Winterzauber Duftkerze",
        Variant(101, 1001, "Klein", "WZ-S"),
        Variant(102, 1002, "Groß", "WZ-L", inventory_policy="CONTINUE"),
    )
    shop.add_product(2, "Sommerwiese", Variant(201, 2001, sku="SW-1"), status="DRAFT")
    shop.add_product(3, "Rote Kerze", Variant(301, 3001, sku="RK-1", tracked=False))
    shop.add_item(1001, (11, 4, WHEN), (12, 3, WHEN), (13, 9, WHEN))
    shop.add_item(1002, (11, 0, WHEN))
    return shop


def test_a_search_by_title_shows_every_variant_with_its_stock(candles, clock):
    admin = make_admin(candles, clock)

    (product,) = admin.search_products("winter")

    assert (product.product_id, product.title, product.status) == (
        1,
        "Winterzauber Duftkerze",
        "active",
    )
    assert product.variants == (
        VariantInfo(101, 1001, "Klein", "WZ-S", True, "deny", 1, available=7),  # 4 + 3, not 9
        VariantInfo(102, 1002, "Groß", "WZ-L", True, "continue", 2, available=0),
    )
    (request,) = candles.requests
    assert request.operation == "ProductSearch"
    assert request.variables == {
        "query": "title:winter* OR sku:winter*",
        "first": PRODUCT_SEARCH_LIMIT,
        "variants": PRODUCT_SEARCH_VARIANTS,
    }
    # 2 + 10 products × (product 1 + variants 2 + 10 × (variant 1 + item 1)): Shopify's rules
    assert request.requested_cost == 2 + 10 * (3 + 10 * 2) == 232
    assert request.requested_cost == admin.estimate_cost(
        "product_search", PRODUCT_SEARCH_LIMIT, PRODUCT_SEARCH_VARIANTS
    )


def test_a_search_by_sku_or_several_words_finds_drafts_and_untracked_products(candles, clock):
    admin = make_admin(candles, clock)

    by_sku = admin.search_products("SW-")
    by_words = admin.search_products("kerze ROT")
    by_word = admin.search_products("kerze")

    assert [(p.product_id, p.status) for p in by_sku] == [(2, "draft")]
    assert [p.product_id for p in by_words] == [3]
    assert by_words[0].variants[0].tracked is False
    assert by_words[0].variants[0].available == 0
    assert [p.product_id for p in by_word] == [3]  # a word's start: "Duftkerze" is not "kerze…"


def test_a_found_product_with_more_variants_than_the_page_is_followed_up(shop, clock):
    variants = [Variant(500 + n, 5000 + n, f"Duft {n}") for n in range(PRODUCT_SEARCH_VARIANTS + 3)]
    shop.add_product(5, "Duftset", *variants)
    shop.add_item(5012, (11, 6, WHEN))
    admin = make_admin(shop, clock)

    (product,) = admin.search_products("duft")

    assert len(product.variants) == PRODUCT_SEARCH_VARIANTS + 3
    assert product.variants[-1] == VariantInfo(512, 5012, "Duft 12", "", True, "deny", 13, 6)
    assert [r.operation for r in shop.requests] == ["ProductSearch", "ProductVariantsPage"]
    assert "inventoryQuantity" in shop.requests[1].query


def test_nothing_to_search_sends_nothing(shop, clock):
    assert make_admin(shop, clock).search_products("  *:- ") == []
    assert shop.requests == []


# --- confirming destructive webhooks with the shop -------------------------------------------


def test_product_exists_until_shopify_answers_null(shop, clock):
    catalogue(shop, range(1, 2))
    admin = make_admin(shop, clock)

    assert admin.product_exists(1) is True
    assert admin.product_exists(2) is False

    assert [(r.operation, r.requested_cost, r.actual_cost) for r in shop.requests] == [
        ("ProductExists", 1, 1),
        ("ProductExists", 1, 0),
    ]
    assert shop.requests[1].variables == {"id": "gid://shopify/Product/2"}


def test_inventory_level_reads_the_level_or_none_where_the_item_is_not_stocked(shop, clock):
    shop.add_item(808950810, (24826418, 7, LATER), (24826419, 2, None))
    admin = make_admin(shop, clock)

    stocked = admin.inventory_level(808950810, 24826418)
    undated = admin.inventory_level(808950810, 24826419)
    disconnected = admin.inventory_level(808950810, 99)
    gone = admin.inventory_level(1, 24826418)

    assert stocked == Level(808950810, 24826418, 7, datetime(2026, 11, 28, 15, 10, tzinfo=UTC))
    assert undated is not None and undated.available == 2
    assert undated.updated_at == datetime.fromisoformat(LEVEL_CREATED_AT)  # the level's own
    assert disconnected is None and gone is None
    assert shop.requests[0].variables == {
        "id": "gid://shopify/InventoryItem/808950810",
        "locationId": "gid://shopify/Location/24826418",
    }
    assert [r.actual_cost for r in shop.requests] == [3, 3, 1, 0]


def test_confirming_calls_wait_out_throttling_like_every_other(shop, clock):
    catalogue(shop, range(1, 2))
    shop.script("THROTTLED")
    admin = make_admin(shop, clock)

    assert admin.product_exists(1) is True

    assert answers(shop) == ["THROTTLED", "ok"]
    assert clock.sleeps == [pytest.approx(0.05, abs=0.011)]  # 1 point at 100/s, or the floor
    assert admin.throttled == 1
