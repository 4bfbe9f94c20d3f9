"""Act, and see it: a save decides at once, manual states hold, the status column says what matters.

Real PostgreSQL and Redis; the Ads backend is the dry run unless a test says otherwise, so every
decision is logged as an AdGroupAction the test can read.
"""

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.contrib.messages import get_messages
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation
from django.utils.text import capfirst
from django.utils.translation import gettext

from automation.google_ads import statuses as ads
from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import AdGroup, AdGroupAction, Delivery, StockLevel, WatchedProduct
from automation.platform.exceptions import TransientAdsError
from automation.reconcile import nightly as reconcile
from automation.stock import apply, levels, manual, rule
from tests.support.shopify_standin import TOKEN, ShopifyStandIn, Variant
from tests.support.signing import post_shopify
from tests.support.watching import variant, watch

ITEM = 808950810
PRODUCT = 7001
STORE = 24826418
CUSTOMER = "1234567890"
AD_GROUP = "555"
CHANGELIST = "/admin/automation/watchedproduct/"
SAMPLES = Path(__file__).resolve().parents[2] / "automation" / "samples" / "shopify"


def watched(label: str, item: int, ad_group_id: str, product_id: int) -> WatchedProduct:
    """A one-variant product (no options, one location), watched with all of its variants."""
    variant(item, product_id=product_id, variant_id=item + 1)
    return watch(None, ad_group_id, label=label, product_id=product_id, customer_id=CUSTOMER)


@pytest.fixture
def winterzauber(db):
    return watched("Winterzauber", ITEM, AD_GROUP, PRODUCT)


def group() -> AdGroup:
    return AdGroup.objects.get(customer_id=CUSTOMER, ad_group_id=AD_GROUP)


def stock(available, at="2026-12-01T07:00:00+01:00", location=STORE, item=ITEM) -> None:
    """A stored level, as a webhook leaves it (without the Ads call)."""
    levels.store_levels([LevelUpdate(item, location, available, datetime.fromisoformat(at))])


def decide(*products: WatchedProduct) -> None:
    """The products decided from the stored levels, as the last webhook left them (no Ads call)."""
    with transaction.atomic():
        apply.evaluate(apply.lock_products([product.pk for product in products]))


def actions() -> list[tuple[str, str]]:
    return list(AdGroupAction.objects.order_by("pk").values_list("source", "desired_status"))


def texts(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def change_form(product: WatchedProduct, **changes) -> dict:
    """The product's page as the browser posts it back (all variants, its ad groups)."""
    data = {
        "label": product.label,
        "product_id": product.product_id,
        "variants_all": "on",
        "pause_at": product.pause_at,
        "resume_at": "" if product.resume_at is None else product.resume_at,
        "enabled": "on" if product.enabled else "",
        "ad_groups": [f"{g.customer_id}:{g.ad_group_id}" for g in product.ad_groups.all()],
        "ad_groups_account": "",
        "ad_groups_ids": "",
        **changes,
    }
    return {key: value for key, value in data.items() if value != ""}


# --- a change takes effect at once ---------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_saving_the_threshold_pauses_at_once_from_the_stored_stock(admin_client, winterzauber):
    # Given 5 in stock and an ad group running (threshold 0)
    stock(5)
    # When the merchant sets "pause at" to 5 and saves
    url = reverse("admin:automation_watchedproduct_change", args=[winterzauber.pk])
    # A transactional test: the re-decision runs on the save's commit, as in production.
    response = admin_client.post(url, change_form(winterzauber, pause_at=5), follow=True)
    # Then the ad group is paused at once, logged like a webhook's, with source `admin`
    assert response.status_code == 200
    action = AdGroupAction.objects.get()
    assert (action.source, action.desired_status) == ("admin", "PAUSED")
    assert action.reason == "Winterzauber: 5 available ≤ 5"
    assert action.delivery is None
    # and the message names the ad group and says why
    assert any("Ad group 555 paused: Winterzauber: 5 available ≤ 5" in t for t in texts(response))


@pytest.mark.django_db(transaction=True)
def test_the_message_is_german_for_a_german_merchant(admin_client, winterzauber):
    stock(12)
    url = reverse("admin:automation_watchedproduct_change", args=[winterzauber.pk])
    response = admin_client.post(
        url, change_form(winterzauber, pause_at=5), follow=True, HTTP_ACCEPT_LANGUAGE="de"
    )
    with translation.override("de"):
        expected = gettext("Ad group %(group)s running: %(reason)s") % {
            "group": AD_GROUP,
            "reason": gettext("%(label)s: %(stock)s available > %(level)s")
            % {"label": "Winterzauber", "stock": 12, "level": 5},
        }
    assert expected == "Anzeigengruppe 555 läuft: Winterzauber: Bestand 12 > 5"
    assert any(expected in text for text in texts(response))
    assert actions() == [("admin", "ENABLED")]


@pytest.mark.django_db(transaction=True)
def test_a_list_edit_decides_every_changed_row_at_once(admin_client, winterzauber):
    other = watched("Sternenglanz", 4711, "777", 4712)
    stock(3)
    stock(9, item=4711)
    # Given the list (ordered by label: Sternenglanz, Winterzauber), the merchant raises
    # Winterzauber's threshold to 3 and leaves Sternenglanz alone
    data = {
        "form-TOTAL_FORMS": "2",
        "form-INITIAL_FORMS": "2",
        "form-0-id": str(other.pk),
        "form-0-pause_at": "0",
        "form-0-resume_at": "",
        "form-1-id": str(winterzauber.pk),
        "form-1-pause_at": "3",
        "form-1-resume_at": "",
        "_save": "Save",
    }
    response = admin_client.post(CHANGELIST, data, follow=True)
    assert response.status_code == 200
    # Then only the changed row is decided again
    action = AdGroupAction.objects.get()
    assert (action.ad_group_id, action.source, action.desired_status) == (
        AD_GROUP,
        "admin",
        "PAUSED",
    )
    assert any("Ad group 555 paused: Winterzauber: 3 available ≤ 3" in t for t in texts(response))


@pytest.mark.django_db(transaction=True)
def test_an_api_create_and_update_decide_at_once(admin_user, winterzauber):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(admin_user)
    variant(4711, product_id=4712, variant_id=4713)
    stock(4, item=4711)
    created = api.post(
        "/api/watched-products/",
        {
            "product_id": 4712,
            "label": "Sternenglanz",
            "ad_groups": [{"ad_group_id": "777", "customer_id": CUSTOMER}],
        },
        format="json",
    )
    assert created.status_code == 201, created.data
    assert actions() == [("admin", "ENABLED")]

    updated = api.patch(
        f"/api/watched-products/{created.data['id']}/", {"pause_at": 4}, format="json"
    )
    assert updated.status_code == 200
    assert actions() == [("admin", "ENABLED"), ("admin", "PAUSED")]
    assert AdGroupAction.objects.first().reason == "Sternenglanz: 4 available ≤ 4"


@pytest.mark.django_db(transaction=True)
def test_an_ads_error_is_a_warning_and_the_save_is_kept(
    admin_client, winterzauber, settings, monkeypatch
):
    settings.ADS_BACKEND = "google"

    def unavailable(customer_id, ad_group_id, status):
        raise TransientAdsError("UNAVAILABLE: try again later")

    monkeypatch.setattr(ads, "send_status", unavailable)
    stock(2)
    url = reverse("admin:automation_watchedproduct_change", args=[winterzauber.pk])
    response = admin_client.post(url, change_form(winterzauber, pause_at=2), follow=True)
    assert response.status_code == 200
    winterzauber.refresh_from_db()
    assert winterzauber.pause_at == 2  # the save stands
    failed = AdGroupAction.objects.get()
    assert (failed.source, failed.result) == ("admin", "failed")
    warnings = [m for m in get_messages(response.wsgi_request) if m.level_tag == "warning"]
    (warning,) = warnings  # our own sentence; the vendor's text stays in the log
    assert "Google Ads cannot be reached right now: try again later." in str(warning)
    assert "UNAVAILABLE" not in str(warning)
    assert str(warnings[0]).startswith(
        "Google Ads did not take the change for ad group 555: Google Ads cannot be reached"
    )


@pytest.mark.django_db(transaction=True)
def test_without_stored_stock_a_save_changes_nothing_and_says_so(admin_client, winterzauber):
    url = reverse("admin:automation_watchedproduct_change", args=[winterzauber.pk])
    response = admin_client.post(url, change_form(winterzauber, pause_at=5), follow=True)
    assert not AdGroupAction.objects.exists()
    assert any("No stock known yet for Winterzauber" in text for text in texts(response))


# --- manual pause and enable ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("sellable", "manual_status", "expected"),
    [
        (False, "", "PAUSED"),
        (True, "", "ENABLED"),
        (True, "PAUSED", "PAUSED"),  # paused by hand while 12 are in stock
        (False, "ENABLED", "ENABLED"),  # enabled by hand while sold out (pre-orders)
    ],
)
def test_a_manual_state_wins_over_the_stock(sellable, manual_status, expected):
    # The one owner of the decision: stock.rule.ad_group_status
    code = "in_stock" if sellable else "sold_out"
    product = rule.Sellability(sellable, rule.Reason(code, {"label": "Winterzauber"}))
    facts = rule.AdGroupFact(manual_status=manual_status, manual_by="admin", products=(product,))
    assert rule.ad_group_status(facts).status == expected


def test_the_pause_action_asks_for_a_reason_first(admin_client, winterzauber):
    data = {"action": "pause_manually", "_selected_action": [winterzauber.pk]}
    response = admin_client.post(CHANGELIST, data)
    assert response.status_code == 200
    assert 'name="reason"' in response.content.decode()
    assert not AdGroupAction.objects.exists()
    assert group().manual_status == ""


@pytest.mark.django_db(transaction=True)
def test_a_manual_pause_holds_against_a_later_webhook_until_released(
    client, admin_client, admin_user, run_worker, winterzauber
):
    stock(12)
    # Given the merchant pauses Winterzauber by hand, with a reason
    response = admin_client.post(
        CHANGELIST,
        {
            "action": "pause_manually",
            "_selected_action": [winterzauber.pk],
            "confirm": "yes",
            "reason": "Lieferant liefert erst Freitag",
        },
        follow=True,
    )
    assert response.status_code == 200
    manual_action = AdGroupAction.objects.get()
    assert (manual_action.source, manual_action.desired_status) == ("manual", "PAUSED")
    assert "manually paused by admin: Lieferant liefert erst Freitag" in manual_action.reason
    assert (group().manual_status, group().manual_by) == ("PAUSED", admin_user)

    # When a restock webhook arrives (20 in stock)
    post_shopify(
        client,
        {
            "inventory_item_id": ITEM,
            "location_id": STORE,
            "available": 20,
            "updated_at": "2026-12-01T09:00:00+01:00",
        },
        topic="inventory_levels/update",
    )
    run_worker()
    # Then the level is recorded but the ad group stays paused
    assert StockLevel.objects.get().available == 20
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DONE
    assert "manual state holds: Winterzauber (paused)" in delivery.result
    assert delivery.last_error == ""
    assert actions() == [("manual", "PAUSED")]  # already paused: no second Ads call
    # and the list shows that it holds
    page = admin_client.get(CHANGELIST).content.decode()
    assert "manually paused" in page and "Lieferant liefert erst Freitag" in page

    # When the merchant releases the manual control on the product's page
    release = reverse("admin:automation_watchedproduct_manual", args=[winterzauber.pk, "release"])
    assert admin_client.get(release).status_code == 200  # the confirmation
    response = admin_client.post(release, {"confirm": "yes"}, follow=True)
    # Then the stock decides again, at once: 20 > 0, enabled
    assert response.status_code == 200
    assert actions()[-1] == ("manual", "ENABLED")
    assert "manual control released by admin" in AdGroupAction.objects.first().reason
    assert group().manual_status == ""
    released = (
        "Ad group 555 running: manual control released by admin. Winterzauber: 20 available > 0"
    )
    assert any(text.startswith(released) for text in texts(response))


def test_the_product_page_pauses_by_hand_with_a_reason(admin_client, winterzauber):
    stock(7)
    change = reverse("admin:automation_watchedproduct_change", args=[winterzauber.pk])
    page = admin_client.get(change).content.decode()
    pause = reverse("admin:automation_watchedproduct_manual", args=[winterzauber.pk, "pause"])
    assert pause in page
    assert "manual/release/" not in page  # nothing to release yet

    refused = admin_client.post(pause, {"confirm": "yes", "reason": ""})
    assert refused.status_code == 200 and not AdGroupAction.objects.exists()  # reason required

    response = admin_client.post(pause, {"confirm": "yes", "reason": "Fotoshooting"}, follow=True)
    assert response.redirect_chain[-1][0] == change
    assert actions() == [("manual", "PAUSED")]
    assert "Ad group 555 paused manually: Fotoshooting – dry run: not sent to Google Ads" in (
        texts(response)
    )
    assert "manual/release/" in response.content.decode()


def test_a_manual_enable_holds_while_sold_out(winterzauber, admin_user):
    stock(0)
    manual.set_manual(group(), "ENABLED", "Vorbestellungen", admin_user)
    with transaction.atomic():
        apply.apply_levels(
            [LevelUpdate(ITEM, STORE, 0, datetime(2026, 12, 1, 10, tzinfo=UTC))], source="webhook"
        )
    assert actions() == [("manual", "ENABLED")]  # already enabled: no second Ads call


@pytest.mark.django_db(transaction=True)
def test_a_save_while_manual_keeps_the_manual_state(admin_client, winterzauber, admin_user):
    stock(12)
    manual.set_manual(group(), "PAUSED", "Fotoshooting", admin_user)
    url = reverse("admin:automation_watchedproduct_change", args=[winterzauber.pk])
    response = admin_client.post(url, change_form(winterzauber, pause_at=1), follow=True)
    assert actions() == [("manual", "PAUSED")]  # already paused: no second Ads call
    assert group().manual_status == "PAUSED"  # the form does not touch it
    assert any(
        "Ad group 555 is held manually; the stock does not change it." in text
        for text in texts(response)
    )


@pytest.mark.django_db(transaction=True)
def test_the_nightly_reconciliation_respects_the_manual_state(
    httpserver, settings, winterzauber, admin_user
):
    shop = ShopifyStandIn(restore_rate=5000)
    settings.SHOPIFY_ADMIN_URL = shop.install(httpserver)
    settings.SHOPIFY_ADMIN_TOKEN = TOKEN
    shop.add_product(PRODUCT, "Winterzauber", Variant(ITEM + 1, ITEM))
    stock(0, at="2026-11-30T18:00:00+01:00")
    manual.set_manual(group(), "PAUSED", "Kerzen nachgießen", admin_user)
    shop.add_item(ITEM, (STORE, 15, "2026-12-01T01:00:00Z"))  # restocked overnight

    run = reconcile.run_now()

    assert StockLevel.objects.get().available == 15  # the level is recorded
    assert actions() == [("manual", "PAUSED")]  # the state holds; paused already: no call
    assert run.corrections == []  # holding is no correction
    httpserver.check_handler_errors()


# --- the status column -----------------------------------------------------------------------


def action(status, at, result="dry_run", source="webhook", error=""):
    return AdGroupAction.objects.create(
        customer_id=CUSTOMER,
        ad_group_id=AD_GROUP,
        desired_status=status,
        reason="test",
        source=source,
        result=result,
        error=error,
        requested_at=at,
    )


def status_cell(html: str) -> str:
    cells = re.findall(r'<td class="field-status">(.*?)</td>', html, re.S)
    assert cells, html
    return cells[0]


def german(msgid: str, **values) -> str:
    with translation.override("de"):
        return gettext(msgid) % values


def test_paused_says_since_when_and_the_stock_in_german(admin_client, winterzauber):
    stock(0)
    decide(winterzauber)
    action("ENABLED", datetime(2026, 11, 30, 12, 0, tzinfo=UTC))
    action("PAUSED", datetime(2026, 12, 1, 6, 46, tzinfo=UTC))  # 07:46 in Berlin
    action("PAUSED", datetime(2026, 12, 1, 9, 0, tzinfo=UTC))  # the same status again
    html = admin_client.get(CHANGELIST, HTTP_ACCEPT_LANGUAGE="de").content.decode()
    expected = german(
        "paused since %(since)s – stock %(stock)s ≤ %(pause_at)s",
        since="1. Dez., 07:46",
        stock=0,
        pause_at=0,
    )
    assert expected == "pausiert seit 1. Dez., 07:46 – Bestand 0 ≤ 0"
    assert expected in status_cell(html)


def test_running_says_the_stock(admin_client, winterzauber, settings):
    settings.ADS_BACKEND = "google"
    stock(12)
    decide(winterzauber)
    action("ENABLED", datetime(2026, 12, 1, 6, 46, tzinfo=UTC), result="applied")
    cell = status_cell(admin_client.get(CHANGELIST).content.decode())
    assert "running – stock 12" in cell
    assert "dry run" not in cell


def test_dry_run_is_marked(admin_client, winterzauber, settings):
    settings.ADS_BACKEND = "dryrun"
    stock(12)
    decide(winterzauber)
    action("ENABLED", datetime(2026, 12, 1, 6, 46, tzinfo=UTC))
    html = admin_client.get(CHANGELIST, HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert german("dry run") in status_cell(html)


def test_manually_paused_shows_the_reason_on_hover(admin_client, winterzauber, admin_user):
    stock(12)
    manual.set_manual(group(), "PAUSED", "Fotoshooting", admin_user)
    cell = status_cell(admin_client.get(CHANGELIST).content.decode())
    assert re.search(r'title="Fotoshooting \(admin, [^"]+\)">manually paused<', cell), cell


def test_a_failed_last_change_is_shown_with_its_error(admin_client, winterzauber):
    stock(0)
    decide(winterzauber)
    action("ENABLED", datetime(2026, 12, 1, 6, 0, tzinfo=UTC), result="applied")
    action("PAUSED", datetime(2026, 12, 1, 7, 0, tzinfo=UTC), result="failed", error="quota")
    cell = status_cell(admin_client.get(CHANGELIST).content.decode())
    assert "running – stock 0 · last change failed" in cell and 'title="quota"' in cell


def test_the_list_shows_only_what_matters_in_one_query_per_page(admin_client, winterzauber):
    stock(3)
    decide(winterzauber)
    action("PAUSED", datetime(2026, 12, 1, 6, 46, tzinfo=UTC))

    def page_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(CHANGELIST).status_code == 200
        return len(queries)

    one = page_queries()
    for n in range(5):
        other = watched(f"Kerze {n}", 1000 + n, str(900 + n), 2000 + n)
        stock(n, item=1000 + n)
        decide(other)
    assert page_queries() == one  # no query per row
    html = admin_client.get(CHANGELIST).content.decode()
    columns = re.findall(r'<th scope="col" class="[^"]*column-([\w-]+)', html)
    assert columns == ["label", "product", "status", "pause_at", "resume_at", "stock_display"]


# --- a delivery links to what it caused ------------------------------------------------------


def test_a_delivery_links_to_its_ad_group_changes(admin_client, winterzauber):
    delivery = Delivery.objects.create(
        source="shopify",
        topic="inventory_levels/update",
        status="done",
        result="total available 0",
        body=b'{"inventory_item_id": 808950810, "location_id": 24826418, "available": 0,'
        b' "updated_at": "2026-12-01T07:46:00+01:00"}',
    )
    caused = AdGroupAction.objects.create(
        customer_id=CUSTOMER,
        ad_group_id=AD_GROUP,
        desired_status="PAUSED",
        reason="Winterzauber: 0 available ≤ 0",
        source="webhook",
        delivery=delivery,
        result="dry_run",
        requested_at=datetime(2026, 12, 1, 6, 46, tzinfo=UTC),
    )
    action("ENABLED", datetime(2026, 11, 30, 6, 46, tzinfo=UTC))  # another delivery's
    page = admin_client.get(reverse("admin:automation_delivery_change", args=[delivery.pk]))
    link = re.search(r'href="([^"]*delivery__id__exact=\d+)"', page.content.decode()).group(1)
    listed = admin_client.get(link.replace("&amp;", "&"))
    assert listed.status_code == 200
    assert list(listed.context["cl"].result_list) == [caused]


def test_a_checkout_delivery_links_to_its_reminder_decisions(admin_client):
    body = (SAMPLES / "checkouts_update.json").read_bytes()
    delivery = Delivery.objects.create(
        source="shopify", topic="checkouts/update", status="done", body=body
    )
    page = admin_client.get(reverse("admin:automation_delivery_change", args=[delivery.pk]))
    html = page.content.decode()
    assert "/admin/automation/reminderdecision/?q=b7d1c0a9e4f24f0e8a1d3c5b7e9f1a2c" in html
    listed = admin_client.get(
        "/admin/automation/reminderdecision/?q=b7d1c0a9e4f24f0e8a1d3c5b7e9f1a2c"
    )
    assert listed.status_code == 200
    # the link searches for the checkout's token (no decision was made for it yet)
    assert listed.context["cl"].query == "b7d1c0a9e4f24f0e8a1d3c5b7e9f1a2c"
    assert list(listed.context["cl"].result_list) == []


def test_the_delivery_list_shows_the_result_and_errors_only_as_errors(admin_client):
    Delivery.objects.create(
        source="shopify", topic="inventory_levels/update", status="done", result="total available 7"
    )
    html = admin_client.get(
        "/admin/automation/delivery/", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    with translation.override("de"):
        result, last_error = gettext("result"), gettext("last error")
    # a column header is the field's name with its first letter capitalised (capfirst)
    assert f"<span>{capfirst(result)}</span>" in html
    assert capfirst(last_error) not in html
    assert "total available 7" in html


@pytest.mark.django_db(transaction=True)
def test_a_processed_delivery_keeps_its_note_as_result_and_its_error_apart(
    client, run_worker, winterzauber
):
    post_shopify(
        client,
        {
            "inventory_item_id": ITEM,
            "location_id": STORE,
            "available": 3,
            "updated_at": "2026-12-01T09:00:00+01:00",
        },
        topic="inventory_levels/update",
    )
    run_worker()
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.result, delivery.last_error) == (
        "done",
        "total available 3",
        "",
    )
