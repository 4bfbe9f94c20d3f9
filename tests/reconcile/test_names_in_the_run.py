"""The nightly run, its mail, its page, promotions, margin rules and the API name products
and ad groups as the merchant knows them (the id beside it in plain text, on hover on pages).

Real PostgreSQL and Redis; Shopify's Admin API is the local stand-in, Google Ads the stand-in
behind the real client (or the dry run).
"""

from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import (
    AdGroup,
    AdGroupAction,
    MarginRule,
    Product,
    Promotion,
    PromotionAdGroup,
    ReconcileRun,
)
from automation.promotions import edges as promotions
from automation.reconcile import nightly as reconcile
from automation.stock import apply
from tests.support.shopify_standin import TOKEN, ShopifyStandIn
from tests.support.shopify_standin import Variant as ShopVariant
from tests.support.watching import CUSTOMER, ad_group, variant, watch

pytestmark = pytest.mark.django_db(transaction=True)

ITEM = 808950810
STORE = 24826418
PRODUCT = 632910392
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


@pytest.fixture
def shop(httpserver, settings):
    standin = ShopifyStandIn(restore_rate=5000)
    settings.SHOPIFY_ADMIN_URL = standin.install(httpserver)
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    settings.SHOPIFY_WEBHOOKS_MANAGED_BY = "toml"  # subscriptions are not this file's subject
    standin.add_product(PRODUCT, "Winterzauber", ShopVariant(808950811, ITEM, "klein"))
    yield standin
    httpserver.check_handler_errors()


@pytest.fixture
def named_group(db):
    """Winterzauber klein, watched by its item, controlling the ad group "Kerzen Suche"."""
    watched = watch(ITEM, "555", product_id=PRODUCT, name="Kerzen Suche", campaign_name="Winter")
    variant(ITEM, product_id=PRODUCT, variant_id=808950811, title="klein")
    Product.objects.filter(product_id=PRODUCT).update(title="Winterzauber")
    return watched


def webhook(available: int, at: str) -> None:
    update = LevelUpdate(ITEM, STORE, available, datetime.fromisoformat(at))
    with transaction.atomic():
        apply.apply_levels([update], source="webhook")


def test_a_correction_stores_and_mails_the_names_beside_the_ids(shop, named_group, admin_client):
    webhook(5, "2026-11-28T10:00:00+01:00")
    shop.add_item(ITEM, (STORE, 0, "2026-11-28T15:10:00Z"))  # sold out; the webhook was lost

    run = reconcile.run_now()

    [correction] = run.corrections
    assert (correction["ad_group_name"], correction["item_name"]) == (
        "Kerzen Suche",
        "Winterzauber – klein",
    )
    body = mail.outbox[0].body
    assert "Winterzauber: ad group Kerzen Suche (555) ENABLED → PAUSED" in body
    AdGroup.objects.filter(ad_group_id="555").update(name="Umbenannt")
    page = admin_client.get(f"/admin/automation/reconcilerun/{run.pk}/change/", **EN)
    assert '<span title="id 555">Kerzen Suche</span>' in page.content.decode()  # as at the run


def test_a_correction_without_a_label_is_named_by_its_item(shop, named_group, admin_client):
    run = ReconcileRun.objects.create(local_date=timezone.localdate(), started_at=timezone.now())
    run.corrections = [
        {"kind": "stock", "item": ITEM, "label": "", "ad_group": "555", "was": "ENABLED"}
        | {"now": "PAUSED", "reason": ""}
    ]
    run.held = [{"item": ITEM, "label": "", "ad_group": "555", "held": "PAUSED"}]
    reconcile.name_entries(run)
    run.save()

    summary = reconcile.summary(run)
    assert "  Winterzauber – klein (808950810): ad group Kerzen Suche (555) ENABLED" in summary
    assert "  Winterzauber – klein (808950810): ad group Kerzen Suche (555) → PAUSED" in summary
    page = admin_client.get(f"/admin/automation/reconcilerun/{run.pk}/change/", **EN)
    assert f'<span title="id {ITEM}">Winterzauber – klein</span>' in page.content.decode()


def test_a_drift_repair_is_stored_and_mailed_by_name(shop, named_group, google_ads):
    webhook(0, "2026-11-28T10:00:00+01:00")  # sold out, paused
    google_ads.statuses["555"] = "ENABLED"  # switched on by hand in Google Ads
    google_ads.add_ad_group("555", "Kerzen Suche", "Winter")
    shop.add_item(ITEM, (STORE, 0, "2026-11-28T15:10:00Z"))

    run = reconcile.run_now()

    [correction] = run.corrections
    assert (correction["kind"], correction["ad_group_name"]) == ("drift", "Kerzen Suche")
    assert "Winterzauber: ad group Kerzen Suche (555) ENABLED → PAUSED" in mail.outbox[0].body


def test_a_product_deleted_in_shopify_is_named_in_the_errors(shop, named_group):
    del shop.products[PRODUCT]

    run = reconcile.run_now()

    assert any(
        error.startswith(f"product Winterzauber ({PRODUCT}) no longer exists")
        for error in run.errors
    ), run.errors


def test_an_item_whose_ads_call_fails_is_named_in_the_errors(shop, named_group, google_ads):
    webhook(5, "2026-11-28T10:00:00+01:00")
    shop.add_item(ITEM, (STORE, 0, "2026-11-28T15:10:00Z"))
    google_ads.script([], default="denied")  # every call refused

    run = reconcile.run_now()

    assert run.errors and run.errors[0].startswith(f"item Winterzauber – klein ({ITEM}): ")
    assert f"item Winterzauber – klein ({ITEM}): " in mail.outbox[0].body


def test_an_ad_group_gone_from_google_ads_is_named_in_the_errors(shop, named_group, google_ads):
    run = reconcile.run_now()  # the stand-in holds no ad group 555

    assert "ad group Kerzen Suche (555): not found in Google Ads" in run.errors


def test_the_nightly_read_renames_the_ad_groups_of_current_and_coming_promotions(shop, google_ads):
    now = timezone.now()
    coming = Promotion.objects.create(name="Advent", start_at=now + timedelta(days=3))
    over = Promotion.objects.create(
        name="Ostern", end_at=now - timedelta(days=3), ended_at=now - timedelta(days=3)
    )
    ad_group("777", name="Advent alt")
    PromotionAdGroup.objects.create(promotion=coming, customer_id=CUSTOMER, ad_group_id="777")
    PromotionAdGroup.objects.create(promotion=coming, customer_id=CUSTOMER, ad_group_id="779")
    PromotionAdGroup.objects.create(promotion=over, customer_id=CUSTOMER, ad_group_id="778")
    google_ads.add_ad_group("777", "Advent – Suche", "Advent 2026", status="PAUSED")
    google_ads.add_ad_group("779", "Advent – Shopping", "Advent 2026", status="PAUSED")
    google_ads.add_ad_group("778", "Ostern – Suche", "Ostern 2026", status="PAUSED")
    google_ads.statuses.update({"777": "PAUSED", "778": "PAUSED", "779": "PAUSED"})

    run = reconcile.run_now()

    names = dict(AdGroup.objects.values_list("ad_group_id", "name"))
    assert names == {"777": "Advent – Suche", "779": "Advent – Shopping"}  # 778: ended
    assert "778" not in google_ads.searches[-1].request.query
    assert not AdGroupAction.objects.exists()  # named only: the promotion switches them
    assert (run.ad_groups_read, run.errors) == (0, [])


def test_a_promotion_error_names_the_ad_group(queue, google_ads):
    ad_group("777", name="Advent – Suche")
    google_ads.always("777", "permanent")
    promotion = Promotion.objects.create(name="Advent", end_at=timezone.now() - timedelta(hours=1))
    PromotionAdGroup.objects.create(promotion=promotion, customer_id=CUSTOMER, ad_group_id="777")

    promotions.run_edge(promotion.pk, "end", promotion.end_at)

    promotion.refresh_from_db()
    assert promotion.last_error.startswith(f"Advent – Suche ({CUSTOMER}/777): ")
    assert f"Advent – Suche ({CUSTOMER}/777): " in mail.outbox[0].body


def test_the_dashboard_names_the_item_of_an_unlabelled_correction(named_group, admin_client):
    ReconcileRun.objects.create(
        local_date=timezone.localdate(),
        started_at=timezone.now(),
        status=ReconcileRun.Status.CORRECTED,
        corrections=[
            {"kind": "drift", "item": ITEM, "label": "", "ad_group": "555", "was": "PAUSED"}
            | {"now": "ENABLED", "ad_group_name": "Kerzen Suche", "item_name": "Wz <klein>"}
        ],
    )

    html = admin_client.get(reverse("dashboard"), **EN).content.decode()

    assert f'<span title="id {ITEM}">Wz &lt;klein&gt;</span>' in html
    assert '<span title="id 555">Kerzen Suche</span>' in html


def test_margin_rules_name_their_variant_and_product(named_group, admin_client):
    MarginRule.objects.create(rate="0.55", variant_id=808950811)
    MarginRule.objects.create(rate="0.40", product_id=PRODUCT)
    MarginRule.objects.create(rate="0.30", product_id=1)  # not in the catalogue

    html = admin_client.get("/admin/automation/marginrule/", **EN).content.decode()

    assert '<span title="id 808950811">Winterzauber – klein</span>' in html
    assert f'<span title="id {PRODUCT}">Winterzauber</span>' in html
    assert '<td class="field-product">1</td>' in html


def test_the_api_names_the_ad_group_of_an_action(named_group, admin_client, settings):
    settings.ADS_BACKEND = "dryrun"
    webhook(0, "2026-11-28T10:00:00+01:00")
    ad_group("556")
    AdGroupAction.objects.create(
        customer_id=CUSTOMER,
        ad_group_id="556",
        desired_status="PAUSED",
        reason="test",
        source="admin",
        result="applied",
        requested_at=datetime(2026, 11, 28, tzinfo=UTC),
    )

    rows = admin_client.get("/api/ad-group-actions/").json()["results"]

    assert {(row["ad_group_id"], row["ad_group_name"]) for row in rows} == {
        ("555", "Kerzen Suche"),
        ("556", ""),
    }


def test_a_promotion_page_names_its_ad_groups(admin_client):
    ad_group("777", name="Advent – <Suche>")
    promotion = Promotion.objects.create(name="Advent")
    PromotionAdGroup.objects.create(promotion=promotion, customer_id=CUSTOMER, ad_group_id="777")
    PromotionAdGroup.objects.create(promotion=promotion, customer_id=CUSTOMER, ad_group_id="778")

    page = admin_client.get(f"/admin/automation/promotion/{promotion.pk}/change/", **EN)

    html = page.content.decode()
    assert "Advent – &lt;Suche&gt;" in html
    assert "Advent – <Suche>" not in html
