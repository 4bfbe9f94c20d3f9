"""The demo history: 30 labelled days through the real paths, made once, removed cleanly."""

import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone, translation

from automation.management.commands.demo_setup import WINTERZAUBER_PRODUCT_ID
from automation.models import (
    AdGroupAction,
    BrakeSettings,
    CheckoutState,
    Claim,
    DashboardSettings,
    Delivery,
    Product,
    ReminderDecision,
    ReminderSettings,
    StockLevel,
    WatchedProduct,
)
from automation.ui.dashboard import demo, selectors
from automation.ui.dashboard.demo_history import create_demo
from tests.support import people
from tests.support.watching import watch
from tests.ui.test_chart_labels import assert_no_overlap

pytestmark = pytest.mark.django_db


def _all_rows() -> dict[str, set[int]]:
    """Every row of every model of the app, by model: what must survive the removal."""
    return {
        model.__name__: set(model.objects.values_list("pk", flat=True))
        for model in apps.get_app_config("automation").get_models()
    }


@pytest.fixture
def shop_rows():
    """A real shop's rows of every kind the demo makes, and its settings (kept by a removal)."""
    now = timezone.now()
    BrakeSettings.load()
    DashboardSettings.load()
    delivery = Delivery.objects.create(
        source="shopify",
        shop_domain="elbkerzen.myshopify.com",
        topic="inventory_levels/update",
        webhook_id="real-1",
        status=Delivery.Status.DONE,
    )
    watch(808950810, "158962471302", label="Winterzauber", product_id=7001)
    StockLevel.objects.create(
        inventory_item_id=808950810, location_id=1, available=0, updated_at=now
    )
    AdGroupAction.objects.create(
        customer_id="1234567890",
        ad_group_id="158962471302",
        desired_status="PAUSED",
        reason="Winterzauber: 0 available ≤ 0",
        source="webhook",
        delivery=delivery,
        result="dry_run",
        requested_at=now,
    )
    checkout = CheckoutState.objects.create(
        source="shopify",
        token="real-token",
        shop_domain="elbkerzen.myshopify.com",
        email="kim@example.org",
        updated_at=now,
    )
    ReminderDecision.objects.create(
        checkout=checkout, checkout_version=now, arm="plain", reason="plain"
    )
    Claim.objects.create(key="reminder:shopify:real-token", created_at=now, expires_at=now)
    ReminderSettings.objects.update_or_create(pk=1, defaults={"discount_code": "ELBE10"})
    return _all_rows()


def test_demo_setup_makes_thirty_days_of_labelled_history(redis, queue, mailoutbox):
    call_command("demo_setup", stdout=open("/dev/null", "w"))  # noqa: SIM115

    items = WatchedProduct.objects.filter(product_id__in=demo.DEMO_PRODUCT_IDS)
    assert sorted(items.values_list("label", flat=True)) == [
        "Demo – Friesennacht",
        "Demo – Nordlicht",
        "Demo – Sturmlicht",
    ]
    assert not items.filter(enabled=True).exists(), "nothing live touches the invented groups"
    deliveries = Delivery.objects.filter(shop_domain=demo.DEMO_SHOP)
    assert set(deliveries.values_list("topic", flat=True)) == {
        "inventory_levels/update",
        "checkouts/create",
        "orders/create",
    }
    assert set(deliveries.values_list("status", flat=True)) == {"done"}
    oldest = deliveries.order_by("received_at").first().received_at
    assert timezone.now() - oldest > timedelta(days=demo.DEMO_DAYS - 2)
    assert timezone.now() - oldest <= timedelta(days=demo.DEMO_DAYS)

    sell_outs = selectors.sell_outs().measured
    assert len(sell_outs) >= 6
    assert {s.label for s in sell_outs} == set(items.values_list("label", flat=True))
    assert all(timedelta(seconds=0.5) < s.reaction < timedelta(seconds=5) for s in sell_outs)
    paused = AdGroupAction.objects.filter(ad_group_id__in=demo.DEMO_AD_GROUP_IDS)
    assert paused.filter(desired_status="ENABLED").exists(), "restocks enable the groups again"
    assert not paused.exclude(result="dry_run").exists()

    arms = selectors.decisions_by_arm()
    assert all(arms[arm] >= 2 for arm in ("none", "plain", "discount")), arms
    recovered = [
        d
        for d in ReminderDecision.objects.filter(sent_at__isnull=False).select_related("checkout")
        if d.checkout.completed_at and d.checkout.completed_at > d.sent_at
    ]
    assert recovered, "at least one order for a checkout that got a reminder"
    assert all(m.to[0].endswith("@example.com") for m in mailoutbox)
    assert ReminderSettings.load().discount_code == "", "the merchant's settings are kept"
    assert queue.scheduled_job_registry.count == 0, "the demo decides its reminders itself"


def test_running_it_twice_changes_nothing(redis):
    create_demo()
    before = _all_rows()

    assert create_demo() is None
    call_command("demo_setup", stdout=open("/dev/null", "w"))  # noqa: SIM115

    after = _all_rows()
    own = ("WatchedProduct", "Product", "Variant", "AdGroup")
    assert {k: v for k, v in after.items() if k not in own} == {
        k: v for k, v in before.items() if k not in own
    }
    # the command adds only the local shop's own product (Winterzauber), as before: the watched
    # product, its catalogue rows (product, variant) and its ad group, one each
    assert {k: len(after[k] - before[k]) for k in own} == dict.fromkeys(own, 1)
    assert WatchedProduct.objects.filter(product_id=WINTERZAUBER_PRODUCT_ID).count() == 1


def test_removal_deletes_the_demo_and_leaves_the_shop_s_rows(redis, shop_rows):
    create_demo()
    assert ReminderSettings.load().discount_code == "ELBE10"
    assert Delivery.objects.count() > 100

    call_command("demo_setup", "--remove", stdout=open("/dev/null", "w"))  # noqa: SIM115

    assert _all_rows() == shop_rows
    assert not demo.demo_present()


def test_removal_keeps_a_real_item_labelled_demo_on_a_demo_inventory_item(redis):
    """The merchant watches the demo's candle for real, under a demo-like label: it stays."""
    create_demo()
    item_id, product_id = demo.DEMO_ITEM_IDS[0], demo.DEMO_PRODUCT_IDS[0]
    real = watch(item_id, "5550001", label="Demo – Nordlicht", product_id=product_id)
    levels = set(StockLevel.objects.filter(inventory_item_id=item_id).values_list("pk", flat=True))
    assert levels, "the demo history recorded levels for the item"

    demo.remove_demo()

    real.refresh_from_db()
    assert not real.demo
    assert list(real.variants.values_list("inventory_item_id", flat=True)) == [item_id]
    assert real.ad_groups.get().ad_group_id == "5550001"
    assert Product.objects.filter(product_id=product_id).exists()
    assert (
        set(StockLevel.objects.filter(inventory_item_id=item_id).values_list("pk", flat=True))
        == levels
    )
    assert not WatchedProduct.objects.filter(demo=True).exists()
    assert not Delivery.objects.filter(shop_domain=demo.DEMO_SHOP).exists()


@pytest.fixture
def remover(client):
    client.force_login(people.staff(*people.DASHBOARD_READER, "delete_watchedproduct"))
    return client


def test_the_dashboard_says_demo_and_its_button_removes_it(redis, remover, shop_rows):
    create_demo()
    page = remover.get(reverse("dashboard")).content.decode()
    assert 'id="demo"' in page
    assert reverse("dashboard-demo-remove") in page

    response = remover.post(reverse("dashboard-demo-remove"), follow=True)

    assert response.redirect_chain[-1][0] == reverse("dashboard")
    assert _all_rows() == shop_rows
    assert "Demo data removed: " in str(list(response.context["messages"])[0])
    assert 'id="demo"' not in response.content.decode()


def test_only_staff_allowed_to_delete_watched_products_may_remove_it(
    redis, client, django_user_model
):
    create_demo()
    client.force_login(people.view_only())

    page = client.get(reverse("dashboard")).content.decode()
    assert 'id="demo"' in page
    assert reverse("dashboard-demo-remove") not in page
    assert client.post(reverse("dashboard-demo-remove")).status_code == 403
    assert client.get(reverse("dashboard-demo-remove")).status_code == 403
    assert demo.demo_present()


def test_the_dashboard_over_the_demo_speaks_german(redis, remover, settings):
    settings.LANGUAGE_CODE = "de"
    create_demo()

    with translation.override("de"):
        page = remover.get(reverse("dashboard"), HTTP_ACCEPT_LANGUAGE="de").content.decode()

    assert "Demo – Nordlicht" in page
    assert re.search(r"<td>\d\d\.\d\d\.\d{4}, \d\d:\d\d:\d\d</td>", page), "German dates"
    assert re.search(r"\d+,\d\d €", page), "German money"
    assert not re.search(r"\d+\.\d\d €", page), "no English decimals next to a euro sign"
    svgs = re.findall(r"<svg class=\"chart\".*?</svg>", page, flags=re.S)
    assert len(svgs) == 4
    for svg in svgs:
        assert_no_overlap(svg.replace("&nbsp;", " "))


def test_demo_setup_writes_the_marked_demo_imprint_only_into_empty_settings(redis):
    ReminderSettings.objects.filter(pk=1).update(mail_imprint="")
    call_command("demo_setup", "--no-history", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert ReminderSettings.load().mail_imprint == demo.DEMO_IMPRINT
    assert ReminderSettings.load().mail_imprint.startswith("DEMO-IMPRESSUM")

    ReminderSettings.objects.filter(pk=1).update(mail_imprint="Kerzen Müller, Hamburg")
    call_command("demo_setup", "--no-history", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert ReminderSettings.load().mail_imprint == "Kerzen Müller, Hamburg"


def test_demo_setup_gives_its_admin_an_address_for_test_mails(redis, django_user_model):
    call_command("demo_setup", "--no-history", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert django_user_model.objects.get(username="admin").email == "admin@localhost"


def test_the_history_sends_its_reminders_without_an_imprint_and_leaves_it_empty(redis, mailoutbox):
    ReminderSettings.objects.filter(pk=1).update(mail_imprint="")
    create_demo()
    assert ReminderDecision.objects.filter(sent_at__isnull=False).exists()
    assert all(demo.DEMO_IMPRINT in message.body for message in mailoutbox)
    assert ReminderSettings.load().mail_imprint == ""
