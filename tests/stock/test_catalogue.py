"""A real catalogue: a candle in two sizes, pre-orders, closed locations, archived products,
stock around the threshold, ad groups watched twice or in a promotion: each through signed
webhooks and a real RQ worker, against the one rule."""

import copy
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.core import mail
from django.utils import timezone

import automation
from automation.models import (
    AdGroup,
    AdGroupAction,
    Delivery,
    Location,
    Product,
    Promotion,
    PromotionAdGroup,
    StockLevel,
    Variant,
    WatchedProduct,
)
from automation.stock import apply, held_changes, manual
from tests.support.signing import post_shopify
from tests.support.watching import CUSTOMER, ad_group, watch

pytestmark = pytest.mark.django_db(transaction=True)

SAMPLES = Path(automation.__file__).parent / "samples" / "shopify"
PRODUCT = 632910392
KLEIN, GROSS = 808950810, 808950812
STORE, POPUP = 24826418, 24826419
AD_GROUP = "555"


def sample(name: str) -> dict:
    return json.loads((SAMPLES / f"{name}.json").read_text())


def product_body(**changes) -> dict:
    body = sample("products_update")
    variants = changes.pop("variants", None)
    body.update(changes)
    if variants is not None:
        body["variants"] = variants
    return body


def variant_body(body: dict, index: int, **changes) -> dict:
    found = copy.deepcopy(body["variants"][index])
    found.update(changes)
    return found


def level(item: int, available: int | None, minute: int, location: int = STORE) -> dict:
    return {
        "inventory_item_id": item,
        "location_id": location,
        "available": available,
        "updated_at": f"2026-11-26T16:{minute:02d}:00+01:00",
    }


@pytest.fixture
def winterzauber(client, run_worker):
    """Winterzauber in sizes klein and groß, all variants watched, one ad group: the
    variant map comes from Shopify's products/update webhook."""
    watched = watch(None, AD_GROUP, product_id=PRODUCT)
    post_shopify(client, product_body(), topic="products/update")
    run_worker()
    assert set(Variant.objects.values_list("inventory_item_id", flat=True)) == {KLEIN, GROSS}
    return watched


def send(client, run_worker, *bodies: dict, topic: str = "inventory_levels/update") -> None:
    for body in bodies:
        post_shopify(client, body, topic=topic)
    run_worker()


def statuses(ad_group_id: str = AD_GROUP) -> list[str]:
    return list(
        AdGroupAction.objects.filter(ad_group_id=ad_group_id)
        .exclude(result=AdGroupAction.Result.FAILED)
        .order_by("pk")
        .values_list("desired_status", flat=True)
    )


def test_one_size_sold_out_keeps_the_ad_group_running_without_flapping(
    client, run_worker, winterzauber
):
    send(client, run_worker, level(GROSS, 12, 0), level(KLEIN, 3, 1))
    assert statuses() == ["ENABLED"]
    # klein sells out while groß is in stock, then groß sells one: no pause, no flapping
    send(client, run_worker, level(KLEIN, 0, 2))
    send(client, run_worker, level(GROSS, 11, 3))
    assert statuses() == ["ENABLED"]
    # both sizes sold out: the ad group pauses, and the reason says so
    send(client, run_worker, level(GROSS, 0, 4))
    assert statuses() == ["ENABLED", "PAUSED"]
    action = AdGroupAction.objects.order_by("-pk").first()
    assert action.reason == "Winterzauber: all variants sold out (0 available ≤ 0)"
    assert Delivery.objects.order_by("-pk").first().result.startswith("total available 0")


def test_the_product_status_is_what_the_webhook_said(client, run_worker, winterzauber):
    assert Product.objects.get(product_id=PRODUCT).status == "active"
    assert WatchedProduct.objects.get().product_id == PRODUCT


def test_a_pre_order_variant_is_sellable_at_zero(client, run_worker, winterzauber):
    body = product_body(updated_at="2026-11-26T17:00:00+01:00")
    body["variants"][1]["inventory_policy"] = "continue"
    send(client, run_worker, body, topic="products/update")
    send(client, run_worker, level(KLEIN, 0, 1), level(GROSS, 0, 2))
    assert statuses() == ["ENABLED"]
    product = WatchedProduct.objects.get()
    assert product.sellable is True
    assert product.reason["code"] == "keeps_selling"


def test_a_chosen_subset_counts_only_its_variants(client, run_worker, winterzauber):
    winterzauber.variants.set([Variant.objects.get(inventory_item_id=KLEIN)])
    send(client, run_worker, level(GROSS, 12, 0), level(KLEIN, 0, 1))
    assert statuses() == ["PAUSED"]


def test_an_archived_product_pauses_its_ads_whatever_its_stock(client, run_worker, winterzauber):
    send(client, run_worker, level(GROSS, 12, 0))
    assert statuses() == ["ENABLED"]
    send(
        client,
        run_worker,
        product_body(status="archived", updated_at="2026-11-27T09:00:00+01:00"),
        topic="products/update",
    )
    assert statuses() == ["ENABLED", "PAUSED"]
    assert "archived" in AdGroupAction.objects.order_by("-pk").first().reason


def test_an_older_product_message_does_not_override_a_newer_one(client, run_worker, winterzauber):
    send(
        client,
        run_worker,
        product_body(status="archived", updated_at="2026-11-25T09:00:00+01:00"),
        topic="products/update",
    )
    assert Delivery.objects.order_by("-pk").first().status == Delivery.Status.STALE
    assert Product.objects.get(product_id=PRODUCT).status == "active"


def test_a_variant_added_later_counts_at_once(client, run_worker, winterzauber):
    send(client, run_worker, level(KLEIN, 0, 0), level(GROSS, 0, 1))
    assert statuses() == ["PAUSED"]
    body = product_body(updated_at="2026-11-27T09:00:00+01:00")
    body["variants"].append(
        variant_body(body, 1, id=808950814, inventory_item_id=808950814, title="mittel", position=3)
    )
    send(client, run_worker, body, topic="products/update")
    send(client, run_worker, level(808950814, 4, 5))
    assert statuses() == ["PAUSED", "ENABLED"]


def test_a_variant_shopify_no_longer_lists_stops_counting(client, run_worker, winterzauber):
    send(client, run_worker, level(KLEIN, 0, 0), level(GROSS, 5, 1))
    assert statuses() == ["ENABLED"]
    body = product_body(updated_at="2026-11-27T09:00:00+01:00")
    body["variants"] = body["variants"][:1]
    body["variant_gids"] = body["variant_gids"][:1]
    send(client, run_worker, body, topic="products/update")
    assert statuses() == ["ENABLED", "PAUSED"]
    assert Variant.objects.get(inventory_item_id=GROSS).deleted_at is not None


def test_a_disconnected_location_stops_counting(client, run_worker, winterzauber):
    send(client, run_worker, level(GROSS, 0, 0), level(KLEIN, 0, 0))
    send(client, run_worker, level(KLEIN, 4, 1, location=POPUP))
    assert statuses() == ["PAUSED", "ENABLED"]
    disconnect = {"inventory_item_id": KLEIN, "location_id": POPUP}
    send(client, run_worker, disconnect, topic="inventory_levels/disconnect")
    assert not StockLevel.objects.filter(location_id=POPUP).exists()
    assert statuses() == ["PAUSED", "ENABLED", "PAUSED"]
    delivery = Delivery.objects.order_by("-pk").first()
    assert delivery.status == Delivery.Status.DONE
    assert delivery.result.startswith(f"location {POPUP} disconnected")


def test_a_level_body_sent_as_disconnect_is_refused(client, run_worker, winterzauber):
    send(client, run_worker, level(KLEIN, 4, 1, location=POPUP))
    send(
        client, run_worker, level(KLEIN, 4, 1, location=POPUP), topic="inventory_levels/disconnect"
    )
    assert Delivery.objects.order_by("-pk").first().status == Delivery.Status.INVALID
    assert StockLevel.objects.filter(location_id=POPUP).exists()


def test_a_location_that_does_not_ship_online_orders_does_not_count(
    client, run_worker, winterzauber
):
    Location.objects.create(location_id=POPUP, name="Laden", fulfills_online_orders=False)
    send(client, run_worker, level(GROSS, 0, 0))
    send(client, run_worker, level(KLEIN, 0, 0), level(KLEIN, 4, 1, location=POPUP))
    assert statuses() == ["PAUSED"]
    # the merchant decides it counts after all: decided again at once
    location = Location.objects.get(location_id=POPUP)
    location.counting = Location.Counting.ALWAYS
    location.save()
    apply.redecide_counting(POPUP)
    assert statuses() == ["PAUSED", "ENABLED"]


def test_stock_around_the_threshold_waits_for_the_resume_level(client, run_worker, winterzauber):
    WatchedProduct.objects.update(pause_at=0, resume_at=3)
    winterzauber.variants.set([Variant.objects.get(inventory_item_id=KLEIN)])
    send(client, run_worker, level(KLEIN, 0, 0))
    send(client, run_worker, level(KLEIN, 2, 1))  # one restocked, one sold: still paused
    send(client, run_worker, level(KLEIN, 1, 2))
    assert statuses() == ["PAUSED"]
    assert WatchedProduct.objects.get().reason["code"] == "below_resume"
    send(client, run_worker, level(KLEIN, 4, 3))
    send(client, run_worker, level(KLEIN, 1, 4))  # running: only the pause level counts
    assert statuses() == ["PAUSED", "ENABLED"]


def test_an_ad_group_watched_for_two_products_runs_while_either_sells(client, run_worker):
    watch(KLEIN, AD_GROUP, label="Winterzauber")
    watch(4711, AD_GROUP, label="Sternenglanz")
    send(client, run_worker, level(4711, 3, 1))
    send(client, run_worker, level(KLEIN, 0, 0))
    assert statuses() == ["ENABLED"]
    send(client, run_worker, level(4711, 0, 2))
    assert statuses() == ["ENABLED", "PAUSED"]
    reason = AdGroupAction.objects.order_by("-pk").first().reason
    assert "Winterzauber" in reason and "Sternenglanz" in reason


def test_a_product_drives_several_ad_groups(client, run_worker):
    watch(KLEIN, ["555", "556"])
    send(client, run_worker, level(KLEIN, 0, 0))
    assert sorted(AdGroupAction.objects.values_list("ad_group_id", "desired_status")) == [
        ("555", "PAUSED"),
        ("556", "PAUSED"),
    ]


def test_outside_its_promotion_a_watched_ad_group_stays_paused(client, run_worker):
    watch(KLEIN, AD_GROUP)
    now = timezone.now()
    promotion = Promotion.objects.create(
        name="Adventsaktion", start_at=now - timedelta(days=3), end_at=now - timedelta(days=1)
    )
    PromotionAdGroup.objects.create(promotion=promotion, customer_id=CUSTOMER, ad_group_id=AD_GROUP)
    send(client, run_worker, level(KLEIN, 12, 0))
    assert statuses() == ["PAUSED"]
    assert AdGroupAction.objects.get().reason == "promotion “Adventsaktion” ended"
    # a new window opens: the stock decides again
    promotion.end_at = now + timedelta(days=1)
    promotion.save()
    send(client, run_worker, level(KLEIN, 11, 1))
    assert statuses() == ["PAUSED", "ENABLED"]


def test_a_manual_pause_holds_against_the_stock(client, run_worker, admin_user):
    watch(KLEIN, AD_GROUP)
    group = AdGroup.objects.get(ad_group_id=AD_GROUP)
    manual.set_manual(group, "PAUSED", "Fotoshooting", admin_user)
    send(client, run_worker, level(KLEIN, 12, 0))
    assert statuses() == ["PAUSED"]
    assert "manual state holds" in Delivery.objects.get().result
    manual.release_manual(group, admin_user)
    assert statuses() == ["PAUSED", "ENABLED"]


def test_applying_a_held_pause_respects_a_manual_state_and_every_product(
    client, run_worker, admin_user, settings
):
    """A held change once read only the first watched row of its ad group and ignored a
    manual pause; now it asks the one rule."""
    from automation.models import BrakeEpisode, HeldChange

    watch(KLEIN, AD_GROUP, label="Winterzauber")
    watch(4711, AD_GROUP, label="Sternenglanz")
    send(client, run_worker, level(KLEIN, 0, 0), level(4711, 5, 1))
    episode = BrakeEpisode.objects.create(started_at=timezone.now(), reason="test")
    change = HeldChange.objects.create(
        episode=episode,
        customer_id=CUSTOMER,
        ad_group_id=AD_GROUP,
        desired_status="PAUSED",
        reason="Winterzauber: 0 available ≤ 0",
        source="webhook",
        held_at=timezone.now(),
    )
    decided = held_changes.apply(HeldChange.objects.filter(pk=change.pk), admin_user)
    assert decided.decided == 1
    change.refresh_from_db()
    assert change.applied_status == "ENABLED"  # Sternenglanz still sells
    group = AdGroup.objects.get(ad_group_id=AD_GROUP)
    manual.set_manual(group, "ENABLED", "läuft trotzdem", admin_user)
    second = HeldChange.objects.create(
        episode=BrakeEpisode.objects.create(started_at=timezone.now(), reason="again"),
        customer_id=CUSTOMER,
        ad_group_id=AD_GROUP,
        desired_status="PAUSED",
        reason="x",
        source="webhook",
        held_at=timezone.now(),
    )
    held_changes.apply(HeldChange.objects.filter(pk=second.pk), admin_user)
    second.refresh_from_db()
    assert second.applied_status == "ENABLED"  # the manual state wins


def test_a_deleted_product_stops_being_watched_and_the_merchant_is_told(
    client, run_worker, winterzauber
):
    send(client, run_worker, level(KLEIN, 3, 0))
    send(client, run_worker, {"id": PRODUCT}, topic="products/delete")
    delivery = Delivery.objects.order_by("-pk").first()
    assert delivery.status == Delivery.Status.DONE
    assert "no longer watched" in delivery.result
    assert WatchedProduct.objects.get().enabled is False
    assert Product.objects.get(product_id=PRODUCT).deleted_at is not None
    [told] = mail.outbox  # the stock of 3 sent no alert; the deletion is the one mail
    assert told.subject == "[Elbkerzen] Deleted in Shopify: Winterzauber"
    assert "It is no longer watched" in told.body
    # its ad group stays as it was: nothing else controls it
    assert statuses() == ["ENABLED"]


def test_an_update_body_sent_as_delete_is_refused(client, run_worker, winterzauber):
    send(client, run_worker, product_body(), topic="products/delete")
    assert Delivery.objects.order_by("-pk").first().status == Delivery.Status.INVALID
    assert WatchedProduct.objects.get().enabled is True


def test_an_unwatched_product_is_not_stored(client, run_worker):
    send(client, run_worker, product_body(), topic="products/update")
    assert Delivery.objects.get().status == Delivery.Status.IGNORED
    assert not Product.objects.exists()


def test_an_ad_group_is_created_once_for_every_watcher():
    watch(KLEIN, AD_GROUP)
    watch(GROSS, AD_GROUP)
    assert AdGroup.objects.count() == 1
    assert ad_group(AD_GROUP).watched_products.count() == 2
