"""The nightly reconciliation against a local Shopify Admin stand-in."""

import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core import mail
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db import transaction
from django.utils import timezone

from automation import jobs
from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import (
    AdGroup,
    AdGroupAction,
    Claim,
    Delivery,
    Location,
    Product,
    ReconcileRun,
    StockLevel,
    Variant,
    WatchedProduct,
)
from automation.reconcile import nightly as reconcile
from automation.shopify import access as shopify_access
from automation.shopify import subscriptions
from automation.shopify.queries import topic_to_enum
from automation.shopify.tokens import TOKEN_RENEW_MARGIN
from automation.stock import apply
from tests.support import shopify_admin
from tests.support.shopify_standin import CLIENT_ID, TOKEN
from tests.support.shopify_standin import Variant as ShopVariant
from tests.support.watching import variant, watch

pytestmark = pytest.mark.django_db(transaction=True)

ITEM = 808950810
STORE = 24826418
PUBLIC = shopify_admin.PUBLIC
CALLBACK = shopify_admin.CALLBACK
SECRET = shopify_admin.CLIENT_SECRET
OUR_TOPICS = [topic_to_enum(topic) for topic in subscriptions.REQUIRED_TOPICS]


@pytest.fixture
def shop(httpserver, settings):
    """A shop whose Admin API answers on 127.0.0.1, subscribed to every topic we need."""
    yield from shopify_admin.shop(httpserver, settings, OUR_TOPICS)


@pytest.fixture
def dev_shop(httpserver, settings, redis):
    """A Dev Dashboard app: client id and secret only, tokens that expire, nothing static."""
    standin = shopify_admin.dev_app_shop(httpserver, settings)
    settings.PUBLIC_BASE_URL = PUBLIC
    shopify_admin.subscribe(standin, OUR_TOPICS)
    yield standin
    httpserver.check_handler_errors()


@pytest.fixture
def winterzauber(db):
    """Watched by its one inventory item (as a migrated watched item is)."""
    return watch(ITEM, "555")


def webhook(available: int, at: str, item: int = ITEM, location: int = STORE) -> None:
    update = LevelUpdate(item, location, available, datetime.fromisoformat(at))
    with transaction.atomic():
        apply.apply_levels([update], source="webhook")


def test_a_dropped_sell_out_webhook_is_corrected(shop, winterzauber):
    webhook(5, "2026-11-28T10:00:00+01:00")  # Saturday morning: in stock, ad group enabled
    shop.add_item(ITEM, (STORE, 0, "2026-11-28T15:10:00Z"))  # sold out; the webhook was lost

    run = reconcile.run_now()

    assert run.status == ReconcileRun.Status.CORRECTED
    assert run.items_checked == 1
    assert run.levels_changed == 1
    assert run.corrections == [
        {
            "kind": "stock",
            "item": ITEM,
            "label": "Winterzauber",
            "ad_group": "555",
            "was": "ENABLED",
            "now": "PAUSED",
            "total_available": 0,
            "reason": "Winterzauber: 0 available ≤ 0",
            "ad_group_name": "",  # none known yet: the pages and the mail show the ids
            "item_name": "",
        }
    ]
    latest = AdGroupAction.objects.first()
    assert (latest.desired_status, latest.source) == ("PAUSED", "reconcile")
    assert len(mail.outbox) == 1
    assert "ENABLED → PAUSED" in mail.outbox[0].body
    request = next(r for r in shop.requests if "inventoryLevels" in r.query)
    assert request.headers["X-Shopify-Access-Token"] == TOKEN
    assert f"gid://shopify/InventoryItem/{ITEM}" in str(request.variables)


def test_an_older_shopify_level_leaves_state_untouched(shop, winterzauber):
    webhook(7, "2026-11-28T16:00:00+01:00")
    shop.add_item(ITEM, (STORE, 0, "2026-11-28T14:00:00Z"))  # older than what we stored

    run = reconcile.run_now()

    assert StockLevel.objects.get().available == 7
    assert run.corrections == []
    assert run.levels_changed == 0
    assert run.status == ReconcileRun.Status.OK
    assert AdGroupAction.objects.count() == 1


def test_throttling_waits_instead_of_failing(shop, winterzauber):
    shop.add_item(ITEM, (STORE, 3, "2026-11-28T15:10:00Z"))
    shop.script("THROTTLED", "429")

    run = reconcile.run_now()

    assert run.errors == []
    assert run.status == ReconcileRun.Status.OK
    assert StockLevel.objects.get().available == 3


def test_a_second_nightly_run_on_the_same_date_does_nothing(shop, winterzauber):
    shop.add_item(ITEM, (STORE, 3, "2026-11-28T15:10:00Z"))
    assert reconcile.run_nightly() is not None
    calls = len(shop.requests)
    assert reconcile.run_nightly() is None
    assert jobs.nightly_reconcile() == "already ran today"
    assert len(shop.requests) == calls
    assert ReconcileRun.objects.count() == 1


def test_the_missing_subscription_is_recreated_and_the_merchant_told(shop, winterzauber):
    shop.subscriptions = [s for s in shop.subscriptions if s["topic"] != "CHECKOUTS_UPDATE"]
    shop.add_item(ITEM, (STORE, 3, "2026-11-28T15:10:00Z"))

    run = reconcile.run_now()

    assert run.subscriptions_created == ["checkouts/update"]
    created = [s for s in shop.subscriptions if s["topic"] == "CHECKOUTS_UPDATE"]
    assert len(created) == 1
    assert "checkouts/update" in mail.outbox[0].body
    assert subscriptions.missing_subscriptions(shopify_access.admin_client()) == []


def test_a_wrong_token_is_recorded_as_an_error_not_a_crash(shop, winterzauber, settings):
    settings.SHOPIFY_ADMIN_TOKEN = "shpat_wrong"
    run = reconcile.run_now()
    assert run.status == ReconcileRun.Status.ERRORS
    assert any("token" in error for error in run.errors)
    assert len(mail.outbox) == 1


def test_without_a_token_the_run_says_not_configured(settings, admin_client):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = ""
    run = reconcile.run_now()
    assert run.status == ReconcileRun.Status.NOT_CONFIGURED
    page = admin_client.get("/admin/automation/reconcilerun/").content.decode()
    assert "not configured" in page
    assert "SHOPIFY_CLIENT_ID and SHOPIFY_CLIENT_SECRET" in reconcile.summary(run)


# --- Dev Dashboard apps: client credentials, tokens that expire --------------------------------


def test_the_nightly_run_works_with_client_credentials_alone(dev_shop, winterzauber):
    webhook(5, "2026-11-28T10:00:00+01:00")
    dev_shop.add_item(ITEM, (STORE, 0, "2026-11-28T15:10:00Z"))

    run = reconcile.run_nightly()

    assert run.status == ReconcileRun.Status.CORRECTED
    assert run.corrections[0]["now"] == "PAUSED"
    assert len(dev_shop.token_requests) == 1  # one token for the stock and the subscriptions
    (token,) = dev_shop.issued
    assert {r.headers["X-Shopify-Access-Token"] for r in dev_shop.requests} == {token}


def test_the_day_after_the_token_expired_the_run_fetches_a_new_one(dev_shop, winterzauber):
    dev_shop.add_item(ITEM, (STORE, 3, "2026-11-28T15:10:00Z"))
    assert reconcile.run_now().status == ReconcileRun.Status.OK
    dev_shop.expire_tokens()  # 24 hours later at Shopify; our cache still holds the old one

    run = reconcile.run_now()

    assert run.errors == []
    assert run.status == ReconcileRun.Status.OK
    assert len(dev_shop.token_requests) == 2
    assert [r.answer for r in dev_shop.requests].count("401") == 1


def test_a_short_lived_token_is_replaced_before_it_expires(dev_shop, winterzauber):
    dev_shop.token_lifetime = TOKEN_RENEW_MARGIN + 1  # we keep it for one second
    dev_shop.add_item(ITEM, (STORE, 3, "2026-11-28T15:10:00Z"))
    reconcile.run_now()
    time.sleep(1.1)

    run = reconcile.run_now()

    assert run.status == ReconcileRun.Status.OK
    assert len(dev_shop.token_requests) == 2
    assert "401" not in [r.answer for r in dev_shop.requests]


def test_a_wrong_client_secret_is_an_error_that_names_the_settings(
    dev_shop, winterzauber, settings
):
    settings.SHOPIFY_CLIENT_SECRET = "shpss_wrong"

    run = reconcile.run_now()

    assert run.status == ReconcileRun.Status.ERRORS
    assert all("SHOPIFY_CLIENT_SECRET" in error for error in run.errors)
    assert "invalid_client" in run.errors[0]
    assert dev_shop.requests == []
    assert "SHOPIFY_CLIENT_ID and SHOPIFY_CLIENT_SECRET" in mail.outbox[0].body


def test_the_legacy_static_token_still_works_beside_client_credentials(shop, settings):
    settings.SHOPIFY_CLIENT_ID = CLIENT_ID  # set too, but the static token wins
    settings.SHOPIFY_CLIENT_SECRET = SECRET

    run = reconcile.run_now()

    assert run.status == ReconcileRun.Status.OK
    assert {r.headers["X-Shopify-Access-Token"] for r in shop.requests} == {TOKEN}
    assert shop.token_requests == []


# --- SHOPIFY_WEBHOOKS_MANAGED_BY ------------------------------------------------------------


@pytest.fixture
def toml_shop(dev_shop, settings):
    """Our topics declared in shopify.app.toml: app-scoped, never listed by the API."""
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "toml"
    dev_shop.app_subscriptions, dev_shop.subscriptions = dev_shop.subscriptions, []
    return dev_shop


def test_with_toml_the_nightly_run_never_creates_subscriptions(toml_shop, winterzauber):
    toml_shop.add_item(ITEM, (STORE, 3, "2026-11-28T15:10:00Z"))

    run = reconcile.run_nightly()

    assert run.status == ReconcileRun.Status.OK
    assert run.subscriptions_created == []
    # the catalogue and the stock only: no subscription is listed or created
    assert {r.root for r in toml_shop.requests} == {"locations", "nodes"}
    assert toml_shop.subscriptions == []  # nothing doubled
    assert "managed by shopify.app.toml" in reconcile.summary(run)
    assert mail.outbox == []


def test_with_api_the_same_shop_would_get_every_topic_twice(toml_shop, winterzauber, settings):
    """Why the setting exists: the API cannot see the TOML subscriptions and "heals" them."""
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "api"

    run = reconcile.run_now()

    assert len(run.subscriptions_created) == len(OUR_TOPICS)
    assert len(toml_shop.subscriptions) + len(toml_shop.app_subscriptions) == 2 * len(OUR_TOPICS)


def test_with_toml_the_command_reports_and_refuses_to_sync(toml_shop, capsys):
    call_command("shopify_webhooks", "--check")
    assert "managed by shopify.app.toml" in capsys.readouterr().out

    with pytest.raises(CommandError, match="shopify.app.toml"):
        call_command("shopify_webhooks", "--sync")
    with pytest.raises(ImproperlyConfigured, match="SHOPIFY_WEBHOOKS_MANAGED_BY"):
        subscriptions.heal_subscriptions(shopify_access.admin_client())
    assert toml_shop.requests == []
    assert toml_shop.subscriptions == []


def test_the_command_without_credentials_names_both_ways(settings):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    settings.SHOPIFY_CLIENT_ID = ""

    with pytest.raises(CommandError, match="SHOPIFY_CLIENT_ID .* or SHOPIFY_ADMIN_TOKEN"):
        call_command("shopify_webhooks", "--check")


def test_the_command_checks_with_client_credentials(dev_shop, capsys):
    call_command("shopify_webhooks", "--check")
    assert f"all {len(OUR_TOPICS)} subscriptions present" in capsys.readouterr().out
    assert len(dev_shop.token_requests) == 1


def test_overdue_run_happens_when_the_last_success_is_older_than_26_hours(settings):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    now = timezone.now()
    ReconcileRun.objects.create(
        local_date=(now - timedelta(days=2)).date(),
        started_at=now - timedelta(hours=25),
        status=ReconcileRun.Status.OK,
    )
    assert reconcile.run_if_overdue(now) is None
    ReconcileRun.objects.update(started_at=now - timedelta(hours=27))
    assert reconcile.run_if_overdue(now) is not None


def test_housekeeping_deletes_expired_claims_and_drops_old_bodies(settings):
    settings.SHOPIFY_ADMIN_TOKEN = ""
    now = timezone.now()
    Claim.objects.create(
        key="old", created_at=now - timedelta(days=31), expires_at=now - timedelta(days=1)
    )
    Claim.objects.create(key="live", created_at=now, expires_at=now + timedelta(days=1))
    old = Delivery.objects.create(source="shopify", topic="x", webhook_id="1", body=b"{}")
    new = Delivery.objects.create(source="shopify", topic="x", webhook_id="2", body=b"{}")
    Delivery.objects.filter(pk=old.pk).update(received_at=now - timedelta(days=31))

    run = reconcile.run_now()

    assert (run.claims_deleted, run.bodies_dropped) == (1, 1)
    assert list(Claim.objects.values_list("key", flat=True)) == ["live"]
    old.refresh_from_db()
    new.refresh_from_db()
    assert old.body is None and old.topic == "x"
    assert bytes(new.body) == b"{}"


def test_reconcile_command_prints_the_summary(shop, winterzauber, capsys):
    shop.add_item(ITEM, (STORE, 3, "2026-11-28T15:10:00Z"))
    call_command("reconcile")
    out = capsys.readouterr().out
    assert "items checked: 1" in out


def test_shopify_webhooks_command_checks_and_syncs(shop, capsys):
    shop.subscriptions = shop.subscriptions[:-2]
    with pytest.raises(CommandError, match="2 subscription"):
        call_command("shopify_webhooks", "--check")
    call_command("shopify_webhooks", "--sync")
    assert "checkouts/update" in capsys.readouterr().out
    call_command("shopify_webhooks", "--check")


def test_nightly_cron_fires_at_three_local_in_winter_and_summer(redis):
    from django_rq.cron import DjangoCronScheduler

    scheduler = DjangoCronScheduler()
    scheduler.load_config_from_file("automation.cron")
    (nightly,) = [
        job for job in scheduler.get_jobs() if job.func_name.endswith("nightly_reconcile")
    ]
    assert nightly.cron == "0 3 * * *"
    berlin = ZoneInfo("Europe/Berlin")
    for base, expected in [
        ("2026-07-01T12:00:00+00:00", "2026-07-02T01:00:00+00:00"),  # CEST
        ("2026-12-01T12:00:00+00:00", "2026-12-02T02:00:00+00:00"),  # CET
    ]:
        nightly.latest_enqueue_time = datetime.fromisoformat(base)
        fires = nightly.get_next_enqueue_time()
        assert fires == datetime.fromisoformat(expected).astimezone(UTC)
        assert fires.astimezone(berlin).hour == 3


def test_a_transient_ads_failure_gets_a_second_pass(shop, winterzauber, google_ads):
    webhook(5, "2026-11-28T10:00:00+01:00")  # dryrun-free: the google stand-in answers
    shop.add_item(ITEM, (STORE, 0, "2026-11-28T15:10:00Z"))
    google_ads.script(["transient"] * 5)  # the whole in-job retry budget of the first pass

    run = reconcile.run_now()

    assert run.errors == []
    assert run.corrections[0]["now"] == "PAUSED"
    assert AdGroupAction.objects.filter(result="applied").first().desired_status == "PAUSED"


def test_the_worker_class_does_maintenance_every_30_seconds(queue):
    from automation.platform.workers import Worker

    assert Worker([queue], connection=queue.connection).maintenance_interval == 30


# --- the catalogue the rule reads ---------------------------------------------------------------

PRODUCT = 632910392
KLEIN, GROSS = 808950810, 808950812
POPUP = 24826419


@pytest.fixture
def two_sizes(shop, db):
    """Winterzauber in klein and groß, all variants watched, known to Shopify's Admin API."""
    shop.add_product(
        PRODUCT,
        "Winterzauber",
        ShopVariant(808950810, KLEIN, "klein", "WZ-24"),
        ShopVariant(808950812, GROSS, "groß", "WZ-34"),
    )
    shop.add_location(STORE, "Lager Hamburg")
    # what the products/update webhook told us before
    variant(KLEIN, product_id=PRODUCT, variant_id=808950810, title="klein")
    variant(GROSS, product_id=PRODUCT, variant_id=808950812, title="groß")
    return watch(None, "555", product_id=PRODUCT)


def test_the_nightly_run_learns_the_products_variants_and_their_stock(shop, two_sizes):
    shop.add_item(KLEIN, (STORE, 0, "2026-11-28T15:10:00Z"))
    shop.add_item(GROSS, (STORE, 4, "2026-11-28T15:10:00Z"))

    run = reconcile.run_now()

    assert run.errors == []
    assert set(Variant.objects.values_list("inventory_item_id", "title")) == {
        (KLEIN, "klein"),
        (GROSS, "groß"),
    }
    assert run.items_checked == 2
    assert WatchedProduct.objects.get().stock == 4
    assert AdGroupAction.objects.get().desired_status == "ENABLED"
    assert Location.objects.get(location_id=STORE).name == "Lager Hamburg"


def test_a_level_at_a_location_shopify_no_longer_reports_is_dropped(shop, two_sizes):
    webhook(0, "2026-11-28T10:00:00+01:00", item=KLEIN)
    webhook(0, "2026-11-28T10:00:00+01:00", item=GROSS)
    webhook(6, "2026-11-28T10:00:00+01:00", item=GROSS, location=POPUP)  # a pop-up shop
    assert AdGroupAction.objects.first().desired_status == "ENABLED"
    # the pop-up closed: Shopify no longer reports it; the disconnect webhook was lost
    shop.add_item(KLEIN, (STORE, 0, "2026-11-28T09:10:00Z"))
    shop.add_item(GROSS, (STORE, 0, "2026-11-28T09:10:00Z"))

    run = reconcile.run_now()

    assert not StockLevel.objects.filter(location_id=POPUP).exists()
    assert run.levels_changed == 1
    assert AdGroupAction.objects.first().desired_status == "PAUSED"
    assert run.corrections[0]["now"] == "PAUSED"


def test_a_level_shopify_reports_without_a_timestamp_is_kept(shop, two_sizes):
    webhook(3, "2026-11-28T10:00:00+01:00", item=KLEIN)
    shop.add_item(KLEIN, (STORE, 3, None))  # InventoryQuantity.updatedAt may be null
    shop.add_item(GROSS, (STORE, 0, "2026-11-28T09:10:00Z"))

    reconcile.run_now()

    assert StockLevel.objects.get(inventory_item_id=KLEIN).available == 3


def test_a_location_that_does_not_ship_online_orders_stops_counting(shop, two_sizes):
    shop.add_location(POPUP, "Laden St. Pauli", fulfills_online_orders=False)
    shop.add_item(KLEIN, (STORE, 0, "2026-11-28T15:10:00Z"), (POPUP, 5, "2026-11-28T15:10:00Z"))
    shop.add_item(GROSS, (STORE, 0, "2026-11-28T15:10:00Z"))

    reconcile.run_now()

    assert Location.objects.get(location_id=POPUP).counted is False
    assert WatchedProduct.objects.get().stock == 0
    assert AdGroupAction.objects.get().desired_status == "PAUSED"


def test_an_archived_product_is_paused_by_the_nightly_run(shop, two_sizes):
    shop.products[PRODUCT].status = "ARCHIVED"
    shop.products[PRODUCT].updated_at = "2026-11-28T16:00:00Z"
    shop.add_item(KLEIN, (STORE, 5, "2026-11-28T15:10:00Z"))
    shop.add_item(GROSS, (STORE, 5, "2026-11-28T15:10:00Z"))

    reconcile.run_now()

    assert Product.objects.get(product_id=PRODUCT).status == "archived"
    action = AdGroupAction.objects.get()
    assert action.desired_status == "PAUSED"
    assert "archived" in action.reason


def test_a_product_shopify_deleted_stops_being_watched(shop, two_sizes):
    del shop.products[PRODUCT]

    run = reconcile.run_now()

    assert WatchedProduct.objects.get().enabled is False
    assert any("no longer exists in Shopify" in error for error in run.errors)
    assert any("Deleted in Shopify" in m.subject for m in mail.outbox)


def test_a_product_known_by_one_inventory_item_learns_its_product(shop, winterzauber):
    shop.add_product(PRODUCT, "Winterzauber", ShopVariant(808950810, ITEM, "klein"))
    shop.add_item(ITEM, (STORE, 2, "2026-11-28T15:10:00Z"))

    reconcile.run_now()

    winterzauber.refresh_from_db()
    assert winterzauber.product_id == PRODUCT
    assert Variant.objects.get(inventory_item_id=ITEM).title == "klein"
    assert list(winterzauber.variants.values_list("inventory_item_id", flat=True)) == [ITEM]


# --- the names the pages show ----------------------------------------------------------------


def test_the_nightly_run_keeps_a_renamed_product_and_variant(shop, two_sizes):
    Product.objects.filter(product_id=PRODUCT).update(title="Winterzauber alt")
    shop.products[PRODUCT].title = "Winterzauber Duo"
    shop.products[PRODUCT].variants[0].title = "klein (8 cm)"
    shop.products[PRODUCT].updated_at = "2026-11-28T16:00:00Z"
    shop.add_item(KLEIN, (STORE, 5, "2026-11-28T15:10:00Z"))
    shop.add_item(GROSS, (STORE, 5, "2026-11-28T15:10:00Z"))

    reconcile.run_now()

    assert Product.objects.get(product_id=PRODUCT).title == "Winterzauber Duo"
    assert Variant.objects.get(inventory_item_id=KLEIN).title == "klein (8 cm)"


def test_the_nightly_run_keeps_a_renamed_ad_group_and_campaign(shop, winterzauber, google_ads):
    AdGroup.objects.filter(ad_group_id="555").update(name="Kerzen Suche", campaign_name="Winter")
    google_ads.add_ad_group("555", "Winterzauber – Suche", "Winter 2026")
    google_ads.statuses["555"] = "ENABLED"

    run = reconcile.run_now()

    assert run.ad_groups_read == 1
    group = AdGroup.objects.get(ad_group_id="555")
    assert (group.name, group.campaign_name) == ("Winterzauber – Suche", "Winter 2026")
    query = google_ads.searches[-1].request.query
    assert "ad_group.name" in query and "campaign.name" in query


def test_a_dry_run_night_keeps_the_stored_names(shop, winterzauber, settings):
    """The dry run reads back only the statuses it recorded: the names stay as picked."""
    settings.ADS_BACKEND = "dryrun"
    AdGroup.objects.filter(ad_group_id="555").update(name="Kerzen Suche", campaign_name="Winter")
    webhook(5, "2026-11-28T10:00:00+01:00")  # the dry run records ENABLED

    reconcile.run_now()

    group = AdGroup.objects.get(ad_group_id="555")
    assert (group.name, group.campaign_name) == ("Kerzen Suche", "Winter")
