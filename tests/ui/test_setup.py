"""The set-up page and the pickers: each connection's states, its test button against the
stand-ins (success and failure), secrets never in the page, and the pickers' JSON."""

import time

import pytest
from django.core import mail
from django.utils import timezone

from automation.models import Delivery, WatchedProduct
from automation.shopify import subscriptions
from automation.shopify.queries import topic_to_enum
from automation.ui.setup.forms import WatchedProductForm
from tests.support.hanging import hanging_server
from tests.support.shopify_standin import SHOP_NAME, TOKEN, ShopifyStandIn
from tests.support.vendors import STRIPE_KEY
from tests.support.watching import watch

PUBLIC = "https://automation.elbkerzen.example"
CALLBACK = f"{PUBLIC}/webhooks/shopify/"
# Every topic the service needs, as Shopify names them; the shop has the first two of them.
OUR_TOPICS = [topic_to_enum(topic) for topic in subscriptions.REQUIRED_TOPICS]
EXISTING = ["INVENTORY_LEVELS_UPDATE", "CHECKOUTS_CREATE"]
WEBHOOK_SECRET = "shpss_do_not_show_this_webhook_secret"
STRIPE_SECRET = "whsec_do_not_show_this_stripe_secret"
SMTP_PASSWORD = "do-not-show-this-smtp-password"
CUSTOMER = "1234567890"
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


@pytest.fixture
def no_connections(settings):
    settings.SHOPIFY_WEBHOOK_SECRETS = []
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = ""
    settings.SHOPIFY_CLIENT_SECRET = ""
    settings.STRIPE_WEBHOOK_SECRETS = []
    settings.ADS_BACKEND = "dryrun"
    settings.GOOGLE_ADS_CUSTOMER_ID = ""
    settings.ALERT_EMAILS = []


@pytest.fixture
def shop(httpserver, settings):
    """A shop on 127.0.0.1 with a static token; two of the subscriptions we need exist."""
    standin = ShopifyStandIn(restore_rate=5000)
    settings.SHOPIFY_ADMIN_URL = standin.install(httpserver)
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    settings.SHOPIFY_CLIENT_ID = ""
    settings.SHOPIFY_WEBHOOK_SECRETS = [WEBHOOK_SECRET]
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "api"
    settings.PUBLIC_BASE_URL = PUBLIC
    standin.subscriptions = [
        {"id": f"gid://shopify/WebhookSubscription/{n}", "topic": topic, "uri": CALLBACK}
        for n, topic in enumerate(EXISTING)
    ]
    standin.add_variant(44001, 808950810, "Winterzauber", sku="WZ-200")
    standin.add_variant(44002, 808950811, "Sommerwiese", "Groß", sku="SW-L")
    yield standin
    httpserver.check_handler_errors()


@pytest.fixture
def account(google_ads, settings):
    """The Google Ads stand-in with the shop's account and three ad groups."""
    settings.GOOGLE_ADS_CUSTOMER_ID = CUSTOMER
    google_ads.reset_search()
    google_ads.add_ad_group("555", "Winterzauber Suche", "Kerzen Winter")
    google_ads.add_ad_group("556", "Sommerwiese Suche", "Kerzen Sommer", "PAUSED")
    google_ads.add_ad_group("557", "Altes Winterzeug", "Kerzen Winter", "REMOVED")
    yield google_ads
    google_ads.reset_search()


def page(client, **post):
    if post:
        response = client.post("/admin/setup/", post, **EN)
    else:
        response = client.get("/admin/setup/", **EN)
    assert response.status_code == 200
    return response.content.decode()


def section(html: str, key: str) -> str:
    start = html.index(f'id="setup-{key}"')
    end = html.find("</section>", start)
    return html[start:end]


# --- the page ----------------------------------------------------------------------------------


def test_the_page_is_for_staff_only(client, django_user_model):
    visitor = client.get("/admin/setup/")
    assert visitor.status_code == 302
    assert visitor["Location"].startswith("/admin/login/")
    client.force_login(django_user_model.objects.create_user("kunde", password="x"))
    response = client.get("/admin/setup/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_linked_from_the_admin_index_and_the_dashboard(admin_client):
    assert 'href="/admin/setup/"' in admin_client.get("/admin/").content.decode()
    dashboard = admin_client.get("/admin/dashboard/").content.decode()
    assert dashboard.count('href="/admin/setup/"') == 1


def test_without_any_connection_every_section_says_what_is_missing(admin_client, no_connections):
    html = page(admin_client)
    assert "light-red" in section(html, "shopify")
    assert "SHOPIFY_WEBHOOK_SECRETS" in section(html, "shopify")
    assert "SHOPIFY_CLIENT_ID" in section(html, "shopify")
    ads = section(html, "google_ads")
    # nothing connected is not "partly ready", even in the dry run
    assert "light-red" in ads and "Dry run" in ads and "GOOGLE_ADS_CUSTOMER_ID" in ads
    assert "Not connected" in ads
    assert "ALERT_EMAILS is not set" in section(html, "alerts")  # the admin's address instead
    stripe = section(html, "stripe")
    assert "light-yellow" in stripe and "STRIPE_WEBHOOK_SECRETS" in stripe
    # the page's own frame: the admin's header and breadcrumbs
    assert 'id="header"' in html and "breadcrumbs" in html


def test_a_complete_shopify_set_up_is_green(admin_client, shop):
    shopify = section(page(admin_client), "shopify")
    assert "light-green" in shopify
    assert "access token (app created in the Shopify admin)" in shopify
    assert "set up by this service" in shopify


def test_live_ads_without_credentials_is_red(admin_client, settings, monkeypatch):
    monkeypatch.delenv("GOOGLE_ADS_DEVELOPER_TOKEN", raising=False)
    monkeypatch.delenv("GOOGLE_ADS_CONFIGURATION_FILE_PATH", raising=False)
    settings.ADS_BACKEND = "google"
    settings.GOOGLE_ADS_CUSTOMER_ID = CUSTOMER
    ads = section(page(admin_client), "google_ads")
    assert "light-red" in ads and "GOOGLE_ADS_DEVELOPER_TOKEN" in ads


def test_stripe_shows_the_last_event_received(admin_client, settings):
    settings.STRIPE_WEBHOOK_SECRETS = [STRIPE_SECRET]
    settings.STRIPE_API_KEY = STRIPE_KEY
    stripe = section(page(admin_client), "stripe")
    assert "light-yellow" in stripe and "No event has arrived yet" in stripe
    Delivery.objects.create(
        source="stripe",
        topic="checkout.session.expired",
        webhook_id="evt_1",
        status="done",
        received_at=timezone.now(),
    )
    stripe = section(page(admin_client), "stripe")
    assert "light-green" in stripe and "checkout.session.expired" in stripe


def test_secrets_are_never_in_the_page(admin_client, shop, settings):
    settings.STRIPE_WEBHOOK_SECRETS = [STRIPE_SECRET]
    settings.SHOPIFY_CLIENT_SECRET = "shpss_do_not_show_this_client_secret"
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST_PASSWORD = SMTP_PASSWORD
    for html in (
        page(admin_client),
        page(admin_client, action="shopify_test"),
        page(admin_client, action="email_test"),
    ):
        for secret in (
            WEBHOOK_SECRET,
            STRIPE_SECRET,
            SMTP_PASSWORD,
            TOKEN,
            "shpss_do_not_show_this_client_secret",
        ):
            assert secret not in html


# --- Shopify's test button -----------------------------------------------------------------


def test_testing_shopify_reads_the_shops_name_and_lists_the_subscriptions(admin_client, shop):
    shopify = section(page(admin_client, action="shopify_test"), "shopify")
    assert "setup-result ok" in shopify
    assert f"Connected to the shop “{SHOP_NAME}”" in shopify
    assert "inventory_levels/update: subscribed" in shopify
    assert "checkouts/update: missing" in shopify
    assert 'value="shopify_webhooks"' in shopify  # "Set up now"


def test_set_up_now_creates_the_missing_subscriptions(admin_client, shop):
    shopify = section(page(admin_client, action="shopify_webhooks"), "shopify")
    assert (
        "Webhook subscriptions created: inventory_levels/disconnect, products/create, "
        "products/update, products/delete, checkouts/update, orders/create"
    ) in shopify
    assert sorted(s["topic"] for s in shop.subscriptions) == sorted(OUR_TOPICS)
    shopify = section(page(admin_client, action="shopify_test"), "shopify")
    assert "missing" not in shopify and 'value="shopify_webhooks"' not in shopify


def test_subscriptions_declared_in_toml_are_neither_listed_nor_offered(
    admin_client, shop, settings
):
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "toml"
    shopify = section(page(admin_client, action="shopify_test"), "shopify")
    assert "shopify.app.toml" in shopify and 'value="shopify_webhooks"' not in shopify


def test_a_refused_token_is_a_sentence_not_a_500(admin_client, shop, settings):
    settings.SHOPIFY_ADMIN_TOKEN = "shpat_wrong"
    shopify = section(page(admin_client, action="shopify_test"), "shopify")
    assert "setup-result failed" in shopify
    assert "Shopify refused the access" in shopify
    assert "shpat_wrong" not in shopify


def test_a_hanging_shop_is_a_sentence_within_seconds(admin_client, settings):
    # The merchant waits on the button: one try of VENDOR_INTERACTIVE_TIMEOUT, not three of 10 s
    settings.VENDOR_INTERACTIVE_TIMEOUT = 0.5
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    with hanging_server() as (url, held):
        settings.SHOPIFY_ADMIN_URL = url
        started = time.monotonic()
        shopify = section(page(admin_client, action="shopify_test"), "shopify")
        assert time.monotonic() - started < 2.0
        assert len(held) == 1
    assert "setup-result failed" in shopify
    assert "Shopify did not answer within 0.5 seconds: try again in a minute." in shopify


def test_testing_shopify_without_access_says_so(admin_client, no_connections):
    shopify = section(page(admin_client, action="shopify_test"), "shopify")
    assert "setup-result failed" in shopify and "No Admin API access is configured" in shopify


# --- Google Ads' test button ---------------------------------------------------------------


def test_testing_google_ads_reads_the_account_and_the_watched_ad_groups(admin_client, account):
    watch(1, "555", label="Winterzauber", customer_id=CUSTOMER)
    watch(2, "556", label="Sommerwiese", customer_id=CUSTOMER)
    ads = section(page(admin_client, action="google_ads_test"), "google_ads")
    assert "setup-result ok" in ads
    assert "Connected to the account “Elbkerzen Ads”" in ads
    assert "Winterzauber: “Winterzauber Suche” in campaign “Kerzen Winter”, running" in ads
    assert "Sommerwiese: “Sommerwiese Suche” in campaign “Kerzen Sommer”, paused" in ads
    query = account.searches[-1].request.query
    assert "FROM ad_group WHERE ad_group.id IN (555, 556)" in query


def test_a_watched_ad_group_missing_from_the_account_is_named(admin_client, account):
    watch(1, "999", label="Verschollen", customer_id=CUSTOMER)
    ads = section(page(admin_client, action="google_ads_test"), "google_ads")
    assert "setup-result failed" in ads
    assert "Verschollen: ad group 999 not found in account 1234567890" in ads


def test_refused_access_to_the_account_is_a_sentence(admin_client, account):
    account.search_behaviour = "denied"
    ads = section(page(admin_client, action="google_ads_test"), "google_ads")
    assert "setup-result failed" in ads and "Google Ads refuses access to this account" in ads


def test_a_slow_google_ads_is_a_sentence_within_seconds(admin_client, account, settings):
    settings.VENDOR_INTERACTIVE_TIMEOUT = 0.5
    account.slow_seconds = 5
    account.search_behaviour = "slow"
    started = time.monotonic()
    ads = section(page(admin_client, action="google_ads_test"), "google_ads")
    assert time.monotonic() - started < 2.0
    assert "setup-result failed" in ads and "Google Ads cannot be reached right now" in ads


def test_google_ads_unavailable_is_a_sentence(admin_client, account):
    account.search_behaviour = "transient"
    ads = section(page(admin_client, action="google_ads_test"), "google_ads")
    assert "setup-result failed" in ads and "Google Ads cannot be reached right now" in ads


# --- e-mail --------------------------------------------------------------------------------


def test_the_test_mail_goes_to_the_signed_in_user(admin_client, admin_user):
    email = section(page(admin_client, action="email_test"), "email")
    assert "setup-result ok" in email and admin_user.email in email
    assert [m.to for m in mail.outbox] == [[admin_user.email]]


def test_without_an_address_the_test_mail_explains_why_it_was_not_sent(admin_client, admin_user):
    admin_user.email = ""
    admin_user.save()
    email = section(page(admin_client, action="email_test"), "email")
    assert "setup-result failed" in email and "has no e-mail address" in email
    assert mail.outbox == []


def test_the_test_mail_waits_on_the_mail_server_for_seconds_only(admin_client, settings):
    settings.VENDOR_INTERACTIVE_TIMEOUT = 0.5
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    with hanging_server() as (url, held):
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", int(url.rsplit(":", 1)[1])
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        started = time.monotonic()
        email = section(page(admin_client, action="email_test"), "email")
        assert time.monotonic() - started < 2.0
    assert "setup-result failed" in email
    assert "The mail server did not answer within 0.5 seconds" in email


def test_a_broken_mail_server_is_a_sentence(admin_client, settings):
    settings.EMAIL_BACKEND = "tests.ui.test_setup.RefusingBackend"
    email = section(page(admin_client, action="email_test"), "email")
    assert "setup-result failed" in email and "The mail server refused" in email


def test_alert_recipients_are_listed(admin_client, settings):
    settings.ALERT_EMAILS = ["inhaberin@elbkerzen.example"]
    assert "inhaberin@elbkerzen.example" in section(page(admin_client), "alerts")


class RefusingBackend:
    def __init__(self, *args, **kwargs):
        pass

    def send_messages(self, messages):
        raise ConnectionRefusedError(111, "Connection refused")


# --- pickers -------------------------------------------------------------------------------


def test_the_product_picker_finds_products_by_title_and_sku(admin_client, shop):
    winterzauber = next(p.id for p in shop.products.values() if p.title == "Winterzauber")
    sommerwiese = next(p.id for p in shop.products.values() if p.title == "Sommerwiese")
    found = admin_client.get("/admin/setup/pick/products/", {"q": "winter"}, **EN).json()
    assert [r["value"] for r in found["results"]] == [str(winterzauber)]
    assert found["results"][0]["label"] == "Winterzauber"
    assert found["results"][0]["fill_empty"] == {"label": "Winterzauber"}
    assert [v["detail"] for v in found["results"][0]["variants"]] == ["SKU WZ-200"]
    found = admin_client.get("/admin/setup/pick/products/", {"q": "SW-"}, **EN).json()
    assert [(r["value"], r["label"]) for r in found["results"]] == [
        (str(sommerwiese), "Sommerwiese")
    ]
    assert [(v["value"], v["label"]) for v in found["results"][0]["variants"]] == [
        ("808950811", "Groß – 0 in stock")
    ]
    assert shop.requests[-1].variables["query"] == "title:SW-* OR sku:SW-*"


def test_the_ad_group_picker_finds_by_ad_group_or_campaign_name(admin_client, account):
    found = admin_client.get("/admin/setup/pick/ad-groups/", {"q": "winter"}, **EN).json()
    assert [r["value"] for r in found["results"]] == ["555"]  # 557 is removed
    assert found["results"][0]["ref"] == {
        "customer_id": CUSTOMER,
        "ad_group_id": "555",
        "name": "Winterzauber Suche",
        "campaign_name": "Kerzen Winter",
    }
    found = admin_client.get("/admin/setup/pick/ad-groups/", {"q": "kerzen sommer"}, **EN).json()
    assert [r["value"] for r in found["results"]] == ["556"]
    queries = [s.request.query for s in account.searches[-2:]]
    assert any("ad_group.name LIKE '%kerzen sommer%'" in q for q in queries)
    assert any("campaign.name LIKE '%kerzen sommer%'" in q for q in queries)


def test_pickers_without_a_connection_answer_empty_with_a_hint(admin_client, no_connections):
    for kind in ("products", "ad-groups"):
        found = admin_client.get(f"/admin/setup/pick/{kind}/", {"q": "winter"}, **EN).json()
        assert found["results"] == [] and "enter the" in found["hint"]


def test_pickers_turn_errors_into_hints(admin_client, account):
    account.search_behaviour = "denied"
    found = admin_client.get("/admin/setup/pick/ad-groups/", {"q": "winter"}, **EN).json()
    assert found["results"] == [] and "refuses access" in found["hint"]


def test_pickers_are_for_staff_only(client, shop):
    response = client.get("/admin/setup/pick/products/", {"q": "winter"})
    assert response.status_code == 302
    assert shop.requests == []


def test_the_watched_product_form_has_pickers_only_where_a_connection_is(admin_client, shop):
    html = admin_client.get("/admin/automation/watchedproduct/add/", **EN).content.decode()
    assert 'data-url="/admin/setup/pick/products/"' in html
    assert 'data-target="id_product_id"' in html
    assert "Search in Google Ads is not available" in html  # dry run, no account: ids by hand
    assert 'name="ad_groups_ids"' in html and 'name="product_id"' in html


def test_typed_ids_still_save_without_any_connection(admin_client, no_connections):
    response = admin_client.post(
        "/admin/automation/watchedproduct/add/",
        {
            "label": "Winterzauber",
            "product_id": "7001",
            "variants_all": "on",
            "ad_groups_account": "123-456-7890",
            "ad_groups_ids": "555",
            "pause_at": "0",
            "enabled": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    product = WatchedProduct.objects.get()
    assert product.product_id == 7001
    assert [group.key for group in product.ad_groups.all()] == [(CUSTOMER, "555")]


def test_the_form_is_the_watched_product_admins_form():
    from django.contrib import admin

    assert issubclass(admin.site._registry[WatchedProduct].form, WatchedProductForm)
