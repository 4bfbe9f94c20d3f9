"""The adapters' reads for set-up and picking, checked where they meet the vendor: what is sent
(GraphQL variables, GAQL text) and how answers and failures come back."""

import pytest

from automation.google_ads import adapter as google_ads
from automation.platform.exceptions import PermanentAdsError, TransientAdsError
from automation.shopify.queries import ShopifyAdmin, VariantChoice, variant_search_terms
from automation.shopify.transport import ShopifyAdminError
from tests.support.ads_standin import make_test_client
from tests.support.shopify_standin import TOKEN, ShopifyStandIn

CUSTOMER = "1234567890"


@pytest.fixture
def shop(httpserver):
    standin = ShopifyStandIn(restore_rate=5000)
    standin.add_variant(44001, 808950810, "Winterzauber", sku="WZ-200")
    standin.add_variant(44002, 808950811, "Sommerwiese", "Groß", sku="SW-L")
    client = ShopifyAdmin(standin.install(httpserver), TOKEN)
    yield standin, client
    client.close()
    httpserver.check_handler_errors()


@pytest.mark.parametrize(
    ("typed", "sent"),
    [
        ("winter", "winter* OR sku:winter*"),
        ("  WZ-200 ", "WZ-200* OR sku:WZ-200*"),
        ("Kerze (rot)", '"Kerze rot"'),
        ('a"b:c*', '"a b c"'),
        ("*:()", ""),
    ],
)
def test_what_the_merchant_types_becomes_a_safe_search(typed, sent):
    assert variant_search_terms(typed) == sent


def test_search_variants_asks_product_variants_and_returns_inventory_items(shop):
    standin, client = shop
    found = client.search_variants("sommer")
    assert found == [
        VariantChoice(
            variant_id=44002,
            inventory_item_id=808950811,
            product_title="Sommerwiese",
            variant_title="Groß",
            sku="SW-L",
        )
    ]
    request = standin.requests[-1]
    assert request.root == "productVariants"
    assert request.variables == {"query": "sommer* OR sku:sommer*", "first": 10}
    assert "inventoryItem { id }" in request.query


def test_search_variants_by_sku(shop):
    standin, client = shop
    assert [v.inventory_item_id for v in client.search_variants("WZ-2")] == [808950810]


def test_nothing_to_search_sends_nothing(shop):
    standin, client = shop
    assert client.search_variants("  ** ") == []
    assert standin.requests == []


def test_a_refused_token_raises_our_error(shop):
    standin, client = shop
    standin.token = "shpat_other"
    with pytest.raises(ShopifyAdminError) as caught:
        client.search_variants("winter")
    assert caught.value.status == 401


@pytest.fixture(params=[True, False], ids=["proto-plus", "raw-protobuf"])
def account(request, ads_standin):
    ads_standin.reset_search()
    ads_standin.add_ad_group("555", "Winterzauber Suche", "Kerzen Winter")
    ads_standin.add_ad_group("556", "50% 'Rabatt'", "Kerzen Sommer", "PAUSED")
    ads_standin.add_ad_group("557", "Winterzauber alt", "Kerzen Winter", "REMOVED")
    yield ads_standin, make_test_client(ads_standin, use_proto_plus=request.param)
    ads_standin.reset_search()


def test_account_name_reads_the_descriptive_name(account):
    standin, client = account
    assert google_ads.account_name("123-456-7890", client=client) == "Elbkerzen Ads"
    search = standin.searches[-1].request
    assert search.customer_id == CUSTOMER
    assert search.query == "SELECT customer.id, customer.descriptive_name FROM customer"


def test_mapped_ad_groups_are_read_by_id_with_name_status_and_campaign(account):
    standin, client = account
    found = google_ads.ad_groups_for_setup(CUSTOMER, ["556", "555", "555", "x"], client=client)
    assert [(g.ad_group_id, g.name, g.status, g.campaign_name) for g in found] == [
        ("556", "50% 'Rabatt'", "PAUSED", "Kerzen Sommer"),
        ("555", "Winterzauber Suche", "ENABLED", "Kerzen Winter"),
    ]
    assert standin.searches[-1].request.query == (
        "SELECT ad_group.id, ad_group.name, ad_group.status, campaign.name FROM ad_group "
        "WHERE ad_group.id IN (555, 556)"
    )


def test_no_mapped_ad_groups_no_request(account):
    standin, client = account
    assert google_ads.ad_groups_for_setup(CUSTOMER, [], client=client) == []
    assert standin.searches == []


def test_picking_searches_ad_group_and_campaign_names_without_removed_ones(account):
    standin, client = account
    found = google_ads.search_ad_groups_for_picking(CUSTOMER, "WINTER", client=client)
    assert [g.ad_group_id for g in found] == ["555"]
    queries = [s.request.query for s in standin.searches]
    assert len(queries) == 2  # GAQL has no OR: one query per name
    assert "WHERE ad_group.name LIKE '%WINTER%' AND ad_group.status != 'REMOVED'" in queries[0]
    assert "WHERE campaign.name LIKE '%WINTER%' AND ad_group.status != 'REMOVED'" in queries[1]


def test_quotes_and_like_wildcards_in_the_text_are_taken_literally(account):
    standin, client = account
    found = google_ads.search_ad_groups_for_picking(CUSTOMER, "50% 'rab", client=client)
    assert [g.ad_group_id for g in found] == ["556"]
    assert "LIKE '%50[%] \\'rab%'" in standin.searches[0].request.query
    assert google_ads.search_ad_groups_for_picking(CUSTOMER, "5_%", client=client) == []


@pytest.mark.parametrize(
    ("behaviour", "error"),
    [("denied", PermanentAdsError), ("transient", TransientAdsError)],
)
def test_search_failures_arrive_as_our_errors(account, behaviour, error):
    standin, client = account
    standin.search_behaviour = behaviour
    with pytest.raises(error):
        google_ads.account_name(CUSTOMER, client=client)
