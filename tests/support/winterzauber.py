"""The shop the admin's tests pick from: Winterzauber in two sizes, and the ads that sell it.

In the Shopify stand-in: Winterzauber (product 7001) with "klein" (sold out) and "groß" (12 in
stock) at Lager Hamburg, an archived Sommerwiese, and the locations. In the Google Ads
stand-in: the account's ad groups by campaign.
"""

from collections.abc import Iterator
from urllib.parse import urlencode

from tests.support.shopify_standin import TOKEN, ShopifyStandIn, Variant

CUSTOMER = "1234567890"
PRODUCT = 7001
KLEIN, GROSS = 808950810, 808950811  # inventory items of the two sizes
KLEIN_VARIANT, GROSS_VARIANT = 44001, 44002
ARCHIVED = 7002
STORE = 24826418  # Lager Hamburg: ships online orders
SHOP = 24826419  # Laden Altona: a shop that does not
AD_GROUPS = {
    "555": ("Winterzauber Suche", "Kerzen Winter", "ENABLED"),
    "556": ("Winterzauber Display", "Kerzen Winter", "ENABLED"),
    "557": ("Sommerwiese Suche", "Kerzen Sommer", "PAUSED"),
    "558": ("Altes Winterzeug", "Kerzen Winter", "REMOVED"),
}


def shop(httpserver, settings) -> ShopifyStandIn:
    """The shop's Admin API (static token) answering on 127.0.0.1 with the catalogue above."""
    standin = ShopifyStandIn(restore_rate=5000)
    settings.SHOPIFY_ADMIN_URL = standin.install(httpserver)
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    settings.SHOPIFY_CLIENT_ID = ""
    standin.add_product(
        PRODUCT,
        "Winterzauber",
        Variant(KLEIN_VARIANT, KLEIN, "klein", sku="WZ-S"),
        Variant(GROSS_VARIANT, GROSS, "groß", sku="WZ-L"),
    )
    standin.add_product(
        ARCHIVED, "Sommerwiese", Variant(44003, 808950812, sku="SW-200"), status="ARCHIVED"
    )
    standin.add_item(KLEIN, (STORE, 0, "2026-12-01T06:00:00Z"))
    standin.add_item(GROSS, (STORE, 12, "2026-12-01T06:00:00Z"))
    standin.add_location(STORE, "Lager Hamburg")
    standin.add_location(SHOP, "Laden Altona", fulfills_online_orders=False)
    return standin


def served_shop(httpserver, settings) -> Iterator[ShopifyStandIn]:
    """shop() for a test's whole run, then any error the stand-in's handlers raised; use as a
    fixture: `shop = pytest.fixture(name="shop")(winterzauber.served_shop)`."""
    yield shop(httpserver, settings)
    httpserver.check_handler_errors()


def account(google_ads, settings):
    """The Google Ads stand-in with the shop's account and its ad groups."""
    settings.GOOGLE_ADS_CUSTOMER_ID = CUSTOMER
    google_ads.reset_search()
    for ad_group_id, (name, campaign, status) in AD_GROUPS.items():
        google_ads.add_ad_group(ad_group_id, name, campaign, status)
    return google_ads


def ads_account(google_ads, settings):
    """account() for a test's whole run, its search answers reset afterwards; use as a
    fixture: `account = pytest.fixture(name="account")(winterzauber.ads_account)`."""
    yield account(google_ads, settings)
    google_ads.reset_search()


def ref(ad_group_id: str) -> str:
    """What the form posts for an ad group the picker found (as the page's script does)."""
    name, campaign, _status = AD_GROUPS[ad_group_id]
    return urlencode(
        {
            "customer_id": CUSTOMER,
            "ad_group_id": ad_group_id,
            "name": name,
            "campaign_name": campaign,
        }
    )


def watched_product_form(**changes) -> dict:
    """The watched product's form as the browser posts it: Winterzauber, all variants, 555;
    a change to None leaves that field out."""
    data = {
        "product_id": str(PRODUCT),
        "label": "Winterzauber",
        "variants_all": "on",
        "pause_at": "0",
        "resume_at": "",
        "enabled": "on",
        "ad_groups": [ref("555")],
        "ad_groups_account": "123-456-7890",
        "ad_groups_ids": "",
        **changes,
    }
    return {key: value for key, value in data.items() if value is not None}
