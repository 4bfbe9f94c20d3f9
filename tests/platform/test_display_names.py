"""Pages name products, variants and ad groups as the merchant knows them, the id on hover:
the ad group changes, held changes and their confirmation, watched products, stock levels
and the dashboard, all through `display_names.named`; names come from vendors and are escaped.

Real PostgreSQL and Redis; the shop is the local Shopify stand-in (tests/support/winterzauber.py),
the Ads backend the dry run.
"""

from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from django.utils import timezone

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import AdGroup, AdGroupAction, Delivery, Product
from automation.platform.display_names import named
from automation.stock import levels
from tests.support import people, winterzauber
from tests.support.brake import sell_out_burst
from tests.support.levels import apply_level
from tests.support.watching import CUSTOMER, variant, watch
from tests.support.winterzauber import GROSS, GROSS_VARIANT, KLEIN, KLEIN_VARIANT, PRODUCT, STORE

pytestmark = pytest.mark.django_db
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
HOSTILE = '<img src=x onerror="alert(1)"> Suche'
ESCAPED = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; Suche"


def test_a_name_is_shown_escaped_with_its_id_in_the_title():
    assert named(HOSTILE, 555) == f'<span title="id 555">{ESCAPED}</span>'
    assert named("", 990000000013) == "990000000013"
    assert named(None, "<b>") == "&lt;b&gt;"


def test_the_ad_group_changes_show_the_ad_group_by_name(admin_client):
    watch(KLEIN, "555", name=HOSTILE)
    watch(GROSS, "556", label="Ohne Namen")
    apply_level(LevelUpdate(KLEIN, STORE, 0, datetime(2026, 12, 1, tzinfo=UTC)), source="webhook")
    apply_level(LevelUpdate(GROSS, STORE, 0, datetime(2026, 12, 1, tzinfo=UTC)), source="webhook")
    assert AdGroupAction.objects.count() == 2

    html = admin_client.get("/admin/automation/adgroupaction/", **EN).content.decode()

    assert f'<span title="id 555">{ESCAPED}</span>' in html
    assert HOSTILE not in html
    assert '<td class="field-ad_group">556</td>' in html  # no name known: the id


def test_held_changes_show_the_ad_group_by_name(admin_client):
    held = sell_out_burst()
    html = admin_client.get("/admin/automation/heldchange/", **EN).content.decode()
    for change in held:
        name = AdGroup.objects.get(ad_group_id=change.ad_group_id).name
        assert f'<span title="id {change.ad_group_id}">{name}</span>' in html


def test_stock_levels_name_the_product_variant_and_location(admin_client):
    variant(KLEIN, product_id=PRODUCT, variant_id=KLEIN_VARIANT, title="klein")
    Product.objects.filter(product_id=PRODUCT).update(title="Winter<zauber>")
    levels.store_levels([LevelUpdate(KLEIN, STORE, 3, datetime(2026, 12, 1, tzinfo=UTC))])
    levels.store_levels([LevelUpdate(GROSS, STORE, 1, datetime(2026, 12, 1, tzinfo=UTC))])

    html = admin_client.get("/admin/automation/stocklevel/", **EN).content.decode()

    assert f'<span title="id {KLEIN}">Winter&lt;zauber&gt; – klein</span>' in html
    assert f">{GROSS}</a></th>" in html  # not in the catalogue: the id
    assert f'<td class="field-location">{STORE}</td>' in html  # not described yet


def test_watched_products_show_the_product_by_title(admin_client):
    watch(KLEIN, "555", product_id=PRODUCT, name="Winterzauber Suche")
    variant(KLEIN, product_id=PRODUCT, variant_id=KLEIN_VARIANT, title="klein")
    Product.objects.filter(product_id=PRODUCT).update(title="Winterzauber & Co")

    html = admin_client.get("/admin/automation/watchedproduct/", **EN).content.decode()

    assert f'<span title="id {PRODUCT}">Winterzauber &amp; Co</span>' in html
    assert f'<span title="id {KLEIN}">klein</span>' in html


def test_the_dashboard_names_the_ad_group_of_a_sell_out(client):
    watch(KLEIN, "555", name=HOSTILE)
    triggered = timezone.now() - timedelta(hours=1)
    delivery = Delivery.objects.create(
        source="shopify",
        topic="inventory_levels/update",
        webhook_id="wh-1",
        triggered_at=triggered,
        status=Delivery.Status.DONE,
    )
    AdGroupAction.objects.create(
        customer_id=CUSTOMER,
        ad_group_id="555",
        desired_status="PAUSED",
        reason="sold out",
        source="webhook",
        delivery=delivery,
        result="applied",
        requested_at=triggered + timedelta(seconds=2),
        applied_at=triggered + timedelta(seconds=2),
    )
    client.force_login(people.staff(*people.DASHBOARD_READER))

    html = client.get(reverse("dashboard"), **EN).content.decode()

    assert f'<td><span title="id 555">{ESCAPED}</span>' in html
    assert HOSTILE not in html


shop = pytest.fixture(name="shop")(winterzauber.served_shop)


@pytest.mark.django_db(transaction=True)
def test_a_name_from_the_picker_is_kept_and_shown_escaped(admin_client, shop):
    picked = urlencode(
        {
            "customer_id": CUSTOMER,
            "ad_group_id": "555",
            "name": HOSTILE,
            "campaign_name": "Kerzen <Winter>",
        }
    )
    levels.store_levels([LevelUpdate(GROSS, STORE, 4, datetime(2026, 12, 1, tzinfo=UTC))])
    answer = admin_client.post(
        "/admin/automation/watchedproduct/add/",
        winterzauber.watched_product_form(ad_groups=[picked]),
        **EN,
    )
    assert answer.status_code == 302

    group = AdGroup.objects.get(ad_group_id="555")
    assert (group.name, group.campaign_name) == (HOSTILE, "Kerzen <Winter>")
    assert Product.objects.get(product_id=PRODUCT).title == "Winterzauber"  # from Shopify
    html = admin_client.get("/admin/automation/adgroupaction/", **EN).content.decode()
    assert f'<span title="id 555">{ESCAPED}</span>' in html
    assert HOSTILE not in html


def test_a_product_renamed_in_shopify_is_kept_when_the_picker_shows_it(admin_client, shop):
    variant(KLEIN, product_id=PRODUCT, variant_id=KLEIN_VARIANT, title="klein")
    variant(GROSS, product_id=PRODUCT, variant_id=GROSS_VARIANT, title="groß")
    Product.objects.filter(product_id=PRODUCT).update(title="Winterzauber alt")

    admin_client.get("/admin/setup/pick/products/", {"q": "winter"}, **EN)

    assert Product.objects.get(product_id=PRODUCT).title == "Winterzauber"


def test_a_held_change_that_fails_names_its_ad_group(admin_client, google_ads, settings):
    settings.ADS_BACKEND = "dryrun"
    held = sell_out_burst()
    settings.ADS_BACKEND = "google"
    google_ads.script([], default="denied")  # every call refused: each change fails

    answer = admin_client.post(
        "/admin/automation/heldchange/apply-all/",
        {"confirm": "yes", "change": [held[0].pk]},
        follow=True,
        **EN,
    )

    said = [str(message) for message in answer.context["messages"]]
    name = AdGroup.objects.get(ad_group_id=held[0].ad_group_id).name
    assert any(text.startswith(f"Ad group {name}: ") for text in said), said
