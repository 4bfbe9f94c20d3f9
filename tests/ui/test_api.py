"""The REST API: staff only, the admin's rules, promotions scheduled in RQ, replays queued.

Who may do what beyond staff status (model permissions, page size, token throttling):
tests/ui/test_api_permissions.py and tests/ui/test_throttling.py.
"""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import (
    AdGroup,
    AdGroupAction,
    CheckoutState,
    Delivery,
    MarginRule,
    Promotion,
    ReminderDecision,
    StockLevel,
    WatchedProduct,
)
from tests.support.levels import apply_level
from tests.support.watching import variant, watch
from tests.ui.test_api_permissions import RESOURCES

pytestmark = pytest.mark.django_db

BERLIN = "Europe/Berlin"
# The root, every resource, the schema and its browsable page.
ENDPOINTS = ["/api/", *RESOURCES, "/api/schema/", "/api/schema/browse/"]


def client_for(*, is_staff: bool) -> APIClient:
    """A token client whose user holds every permission of the automation app, like the
    merchant's operators: staff status decides (no permissions:
    tests/ui/test_api_permissions.py)."""
    user = User.objects.create_user(f"user-{is_staff}", is_staff=is_staff)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="automation"))
    client = APIClient()
    client.default_format = "json"  # as API clients send it (a form post omits false booleans)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def staff() -> APIClient:
    return client_for(is_staff=True)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def scheduled_at(queue, job_id: str) -> datetime | None:
    score = queue.connection.zscore(queue.scheduled_job_registry.key, job_id)
    return None if score is None else datetime.fromtimestamp(score, tz=UTC)


# --- who may call ------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ENDPOINTS)
def test_anonymous_callers_get_401_asking_for_a_token(url):
    response = APIClient().get(url)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


# What each endpoint's answer holds for staff: the list endpoints a page of rows, the root the
# resources' links, the schema its version, the Swagger page the schema it reads.
HOLDS = {
    "/api/": "watched-products",
    "/api/schema/": "openapi",
    "/api/schema/browse/": "schema_url",
}


@pytest.mark.parametrize("url", ENDPOINTS)
def test_a_valid_token_of_a_non_staff_user_gets_403(url):
    WatchedProduct.objects.create(label="Winterzauber", product_id=7001)
    response = client_for(is_staff=False).get(url)
    assert response.status_code == 403
    assert response.data["detail"].code == "permission_denied"
    assert b"Winterzauber" not in response.content  # no rows
    assert b"/api/watched-products/" not in response.content  # no links, no schema


@pytest.mark.parametrize("url", ENDPOINTS)
def test_staff_with_a_token_and_the_permissions_get_200(url, staff):
    response = staff.get(url)
    assert response.status_code == 200
    assert HOLDS.get(url, "results") in response.data


def test_a_wrong_token_gets_401(url="/api/watched-products/"):
    WatchedProduct.objects.create(label="Winterzauber", product_id=7001)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    response = client.get(url)
    assert response.status_code == 401
    assert response.data["detail"].code == "authentication_failed"
    assert b"Winterzauber" not in response.content


# --- watched products --------------------------------------------------------------------------

CUSTOMER = "1234567890"
PRODUCT = 632910392


def ad_groups(*ids: str, customer_id: str = CUSTOMER) -> list[dict]:
    return [{"customer_id": customer_id, "ad_group_id": ad_group_id} for ad_group_id in ids]


def test_watched_product_round_trip(staff):
    given = {"product_id": PRODUCT, "label": "Winterzauber", "ad_groups": ad_groups("777")}
    created = staff.post("/api/watched-products/", given)
    assert created.status_code == 201, created.data
    url = f"/api/watched-products/{created.data['id']}/"

    # The ad group's own fields (name, clicks and cost, manual state) live on the ad group,
    # set in the admin; the watched product names it by account and id.
    assert staff.get(url).data == {
        **given,
        "id": created.data["id"],
        "variants": [],
        "pause_at": 0,
        "resume_at": None,
        "enabled": True,
        "sellable": None,
        "stock": None,
        "reason": "",
        "decided_at": None,
    }
    assert staff.patch(url, {"pause_at": 3}).data["pause_at"] == 3
    product = WatchedProduct.objects.get()
    assert product.label == "Winterzauber"  # PATCH kept the rest
    assert [group.key for group in product.ad_groups.all()] == [(CUSTOMER, "777")]
    assert staff.delete(url).status_code == 204
    assert not WatchedProduct.objects.exists()


def test_watched_product_with_a_bad_customer_id_is_refused_with_the_models_message(staff):
    response = staff.post(
        "/api/watched-products/",
        {"product_id": 1, "label": "x", "ad_groups": ad_groups("777", customer_id="123-456")},
    )
    assert response.status_code == 400
    assert response.data["ad_groups"][0]["customer_id"] == [
        "Google Ads customer ids have 10 digits."
    ]
    assert not WatchedProduct.objects.exists() and not AdGroup.objects.exists()


def test_watched_product_ad_group_id_must_be_a_number(staff):
    response = staff.post(
        "/api/watched-products/", {"product_id": 1, "label": "x", "ad_groups": ad_groups("abc")}
    )
    assert response.status_code == 400
    assert response.data["ad_groups"][0]["ad_group_id"] == ["An ad group id is a number."]
    assert not WatchedProduct.objects.exists() and not AdGroup.objects.exists()


def test_watched_product_without_customer_id_gets_the_shops_account(staff, settings):
    settings.GOOGLE_ADS_CUSTOMER_ID = "9876543210"
    given = {"product_id": 1, "label": "x", "ad_groups": [{"ad_group_id": "777"}]}
    created = staff.post("/api/watched-products/", given)
    assert created.status_code == 201, created.data
    assert created.data["ad_groups"] == [{"customer_id": "9876543210", "ad_group_id": "777"}]
    assert AdGroup.objects.get().key == ("9876543210", "777")


def test_watched_product_without_customer_id_and_no_default_account_is_refused(staff, settings):
    settings.GOOGLE_ADS_CUSTOMER_ID = ""
    given = {"product_id": 1, "label": "x", "ad_groups": [{"ad_group_id": "777"}]}
    response = staff.post("/api/watched-products/", given)
    assert response.status_code == 400
    assert response.data["ad_groups"][0]["customer_id"] == ["This field is required."]
    assert not AdGroup.objects.exists()


def test_the_same_ad_group_twice_in_one_watched_product_is_a_400_not_a_crash(staff):
    given = {"product_id": 1, "label": "x", "ad_groups": ad_groups("777", "777")}
    response = staff.post("/api/watched-products/", given)
    assert response.status_code == 400
    assert response.data["ad_groups"] == ["Each ad group may appear only once."]
    assert not WatchedProduct.objects.exists()


def test_two_watched_products_may_share_an_ad_group(staff):
    """It runs while either product sells (automation.stock.rule): one ad group row."""
    first = {"product_id": 1, "label": "Winterzauber", "ad_groups": ad_groups("777")}
    second = {"product_id": 2, "label": "Nordlicht", "ad_groups": ad_groups("777")}
    assert staff.post("/api/watched-products/", first).status_code == 201
    assert staff.post("/api/watched-products/", second).status_code == 201
    assert AdGroup.objects.get().watched_products.count() == 2


def test_a_watched_product_needs_a_product_and_an_ad_group(staff):
    response = staff.post("/api/watched-products/", {"label": "x", "ad_groups": []})
    assert response.status_code == 400
    assert response.data["product_id"] == ["This field is required."]
    assert response.data["ad_groups"] == {"non_field_errors": ["This list may not be empty."]}
    assert not WatchedProduct.objects.exists()


def test_a_watched_product_with_two_ad_groups_and_a_variant_subset(staff):
    variant(1001, product_id=PRODUCT, variant_id=11, title="klein")
    variant(1002, product_id=PRODUCT, variant_id=12, title="mittel")
    variant(1003, product_id=PRODUCT, variant_id=13, title="groß")
    given = {
        "product_id": PRODUCT,
        "label": "Winterzauber",
        "variants": [11, 13],
        "ad_groups": ad_groups("777", "778"),
        "pause_at": 2,
        "resume_at": 5,
    }

    created = staff.post("/api/watched-products/", given)

    assert created.status_code == 201, created.data
    assert (created.data["variants"], created.data["ad_groups"]) == ([11, 13], given["ad_groups"])
    product = WatchedProduct.objects.get()
    assert sorted(product.variants.values_list("inventory_item_id", flat=True)) == [1001, 1003]
    assert (product.pause_at, product.resume_at, product.resume_level) == (2, 5, 5)
    url = f"/api/watched-products/{product.pk}/"

    updated = staff.patch(url, {"variants": [12], "ad_groups": ad_groups("778", "779")})

    assert updated.status_code == 200, updated.data
    assert (updated.data["variants"], updated.data["ad_groups"]) == ([12], ad_groups("778", "779"))
    assert list(product.variants.values_list("inventory_item_id", flat=True)) == [1002]
    assert staff.patch(url, {"variants": []}).data["variants"] == []
    assert not product.variants.exists()  # none chosen: every variant of the product counts
    assert AdGroup.objects.filter(ad_group_id="777").exists()  # its actions' history stays


def test_moving_a_watched_product_to_another_product_needs_that_products_variants(staff):
    variant(1001, product_id=PRODUCT, variant_id=11)
    variant(2001, product_id=PRODUCT + 1, variant_id=21)
    given = {"product_id": PRODUCT, "label": "x", "variants": [11], "ad_groups": ad_groups("777")}
    url = f"/api/watched-products/{staff.post('/api/watched-products/', given).data['id']}/"

    kept = staff.patch(url, {"product_id": PRODUCT + 1})

    assert kept.status_code == 400
    assert kept.data["variants"] == [
        f"The chosen variants are not of product {PRODUCT + 1}: give its variants, or [] for "
        "all of them."
    ]
    product = WatchedProduct.objects.get()
    assert product.product_id == PRODUCT  # the refused move changed nothing
    assert list(product.variants.values_list("inventory_item_id", flat=True)) == [1001]
    moved = staff.patch(url, {"product_id": PRODUCT + 1, "variants": [21]})
    assert (moved.status_code, moved.data["variants"]) == (200, [21])
    assert staff.patch(url, {"product_id": PRODUCT + 1}).status_code == 200  # the same product


def test_an_unknown_variant_is_refused_with_the_message(staff):
    variant(1001, product_id=PRODUCT, variant_id=11)
    variant(2001, product_id=PRODUCT + 1, variant_id=21)  # another product's
    given = {
        "product_id": PRODUCT,
        "label": "Winterzauber",
        "variants": [11, 21, 99],
        "ad_groups": ad_groups("777"),
    }

    response = staff.post("/api/watched-products/", given)

    assert response.status_code == 400
    assert response.data["variants"] == [
        f"Unknown variants of product {PRODUCT}: [21, 99]. Variants are known from the "
        "product's webhooks, the admin's picker or the nightly reconciliation."
    ]
    assert not WatchedProduct.objects.exists()


def test_resume_at_below_pause_at_is_refused(staff):
    given = {"product_id": 1, "label": "x", "ad_groups": ad_groups("777"), "pause_at": 5}
    response = staff.post("/api/watched-products/", {**given, "resume_at": 4})
    assert response.status_code == 400
    assert response.data["resume_at"] == ["resume_at cannot be below pause_at."]

    created = staff.post("/api/watched-products/", {**given, "resume_at": 5})
    assert created.status_code == 201, created.data
    url = f"/api/watched-products/{created.data['id']}/"
    lowered = staff.patch(url, {"pause_at": 6})  # against the stored resume_at
    assert lowered.status_code == 400
    assert lowered.data["resume_at"] == ["resume_at cannot be below pause_at."]
    assert WatchedProduct.objects.get().pause_at == 5


@pytest.mark.django_db(transaction=True)
def test_a_save_decides_the_product_and_an_update_resettles_the_ad_group_it_removed(
    staff, settings
):
    """The ad group taken away is decided by what still controls it: another product."""
    settings.ADS_BACKEND = "dryrun"
    nordlicht = watch(2001, "778", label="Nordlicht", customer_id=CUSTOMER)
    apply_level(LevelUpdate(2001, 1, 0, timezone.now()), source="webhook")  # sold out
    level(1001, 5)
    given = {
        "product_id": PRODUCT,
        "label": "Winterzauber",
        "ad_groups": ad_groups("777", "778"),
    }
    variant(1001, product_id=PRODUCT, variant_id=11)

    created = staff.post("/api/watched-products/", {**given, "variants": [11]})

    assert created.status_code == 201, created.data
    assert actions()[0] == ("778", "PAUSED", "webhook", "Nordlicht: 0 available ≤ 0")
    assert sorted(actions()[1:]) == [
        ("777", "ENABLED", "admin", "Winterzauber: 5 available > 0"),
        ("778", "ENABLED", "admin", "Winterzauber: 5 available > 0"),  # either product sells
    ]
    shown = staff.get(f"/api/watched-products/{created.data['id']}/").data
    assert (shown["sellable"], shown["stock"]) == (True, 5)
    assert shown["reason"] == "Winterzauber: 5 available > 0"
    assert shown["decided_at"] is not None

    updated = staff.patch(
        f"/api/watched-products/{created.data['id']}/", {"ad_groups": ad_groups("777")}
    )

    assert updated.status_code == 200, updated.data
    # 777 still follows Winterzauber (unchanged: nothing sent); 778 now only Nordlicht.
    assert actions()[3:] == [("778", "PAUSED", "admin", "Nordlicht: 0 available ≤ 0")]
    assert list(nordlicht.ad_groups.values_list("ad_group_id", flat=True)) == ["778"]


@pytest.mark.django_db(transaction=True)
def test_deleting_a_watched_product_resettles_the_ad_groups_it_controlled(staff, settings):
    """What still controls the ad group decides it once the product is gone."""
    settings.ADS_BACKEND = "dryrun"
    watch(2001, "778", label="Nordlicht", customer_id=CUSTOMER)
    apply_level(LevelUpdate(2001, 1, 0, timezone.now()), source="webhook")  # sold out
    level(1001, 5)
    variant(1001, product_id=PRODUCT, variant_id=11)
    given = {"product_id": PRODUCT, "label": "Winterzauber", "ad_groups": ad_groups("778")}
    created = staff.post("/api/watched-products/", {**given, "variants": [11]})
    assert actions()[-1] == ("778", "ENABLED", "admin", "Winterzauber: 5 available > 0")

    assert staff.delete(f"/api/watched-products/{created.data['id']}/").status_code == 204

    assert actions()[-1] == ("778", "PAUSED", "admin", "Nordlicht: 0 available ≤ 0")


@pytest.mark.django_db(transaction=True)
def test_ad_group_actions_of_a_save_are_found_by_ad_group_id(staff, settings):
    settings.ADS_BACKEND = "dryrun"
    level(1001, 0)
    variant(1001, product_id=PRODUCT, variant_id=11)
    given = {"product_id": PRODUCT, "label": "Winterzauber", "ad_groups": ad_groups("777", "778")}
    assert staff.post("/api/watched-products/", given).status_code == 201

    found = staff.get("/api/ad-group-actions/?ad_group_id=778").data["results"]

    assert [(row["ad_group_id"], row["desired_status"], row["source"]) for row in found] == [
        ("778", "PAUSED", "admin")
    ]
    assert found[0]["reason"] == "Winterzauber: 0 available ≤ 0"
    assert found[0]["customer_id"] == CUSTOMER


def level(item: int, available: int) -> None:
    StockLevel.objects.create(
        inventory_item_id=item, location_id=1, available=available, updated_at=timezone.now()
    )


def actions() -> list[tuple[str, str, str, str]]:
    return list(
        AdGroupAction.objects.order_by("pk").values_list(
            "ad_group_id", "desired_status", "source", "reason"
        )
    )


# --- margin rules ------------------------------------------------------------------------------


def test_margin_rule_round_trip(staff):
    created = staff.post("/api/margin-rules/", {"rate": "0.55", "vendor": "Elbkerzen"})
    assert created.status_code == 201, created.data
    url = f"/api/margin-rules/{created.data['id']}/"
    assert staff.get(url).data["vendor"] == "Elbkerzen"
    replaced = staff.put(url, {"rate": "0.60", "vendor": "", "sku": "WZ-1"})
    assert (replaced.data["vendor"], replaced.data["sku"]) == ("", "WZ-1")
    assert staff.delete(url).status_code == 204
    assert not MarginRule.objects.exists()


MATCHER_MESSAGE = "Fill in exactly one of variant, product, SKU or vendor."


def test_margin_rule_with_two_matchers_gets_the_models_message(staff):
    response = staff.post("/api/margin-rules/", {"rate": "0.5", "sku": "A", "vendor": "B"})
    assert response.status_code == 400
    assert response.data["non_field_errors"] == [MATCHER_MESSAGE]
    assert not MarginRule.objects.exists()


def test_margin_rule_without_a_matcher_is_refused(staff):
    response = staff.post("/api/margin-rules/", {"rate": "0.5"})
    assert response.status_code == 400
    assert response.data["non_field_errors"] == [MATCHER_MESSAGE]
    assert not MarginRule.objects.exists()


def test_patching_a_second_matcher_onto_a_rule_is_refused(staff):
    rule = MarginRule.objects.create(rate="0.5", vendor="Elbkerzen")
    response = staff.patch(f"/api/margin-rules/{rule.pk}/", {"product_id": 42})
    assert response.status_code == 400
    assert response.data["non_field_errors"] == [MATCHER_MESSAGE]
    rule.refresh_from_db()
    assert (rule.vendor, rule.product_id) == ("Elbkerzen", None)


def test_margin_rate_above_one_is_refused(staff):
    response = staff.post("/api/margin-rules/", {"rate": "1.5", "vendor": "B"})
    assert response.status_code == 400
    assert response.data["rate"] == ["Ensure this value is less than or equal to 1."]
    assert not MarginRule.objects.exists()


# --- promotions --------------------------------------------------------------------------------


def promotion(**fields) -> dict:
    return {"name": "Pfingsten", "time_zone": BERLIN, **fields}


ENDS_BEFORE_IT_STARTS = {
    "start_date": "2026-06-02",
    "start_time": "00:00",
    "end_date": "2026-06-01",
}


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"end_date": "2026-03-29", "end_time": "02:30"}, "end_time", "does not exist"),
        ({"start_date": "2026-10-25", "start_time": "02:30"}, "start_time", "happens twice"),
        (
            {**ENDS_BEFORE_IT_STARTS, "end_time": "00:00"},
            "end_time",
            "The end must come after the start.",
        ),
        ({"end_date": "2026-06-01"}, "end_time", "Give both a date and a time for the end."),
        ({"time_zone": "Europe/Hamborg"}, "time_zone", "unknown time zone 'Europe/Hamborg'"),
    ],
)
def test_promotion_is_refused_with_the_admin_forms_reason(staff, fields, field, message):
    response = staff.post("/api/promotions/", promotion(**fields))
    assert response.status_code == 400
    assert message in " ".join(response.data[field])
    assert not Promotion.objects.exists()


def test_patching_a_promotion_into_the_gap_is_refused(staff):
    created = staff.post("/api/promotions/", promotion(end_date="2026-03-30", end_time="00:00"))
    url = f"/api/promotions/{created.data['id']}/"
    response = staff.patch(url, {"end_date": "2026-03-29", "end_time": "02:30"})
    assert response.status_code == 400
    assert "does not exist" in response.data["end_time"][0]
    assert staff.get(url).data["end_at"] == created.data["end_at"]  # unchanged


def test_promotion_ad_groups_are_validated_like_the_inline(staff):
    rows = [{"customer_id": "12345", "ad_group_id": "777"}]
    response = staff.post("/api/promotions/", promotion(ad_groups=rows))
    assert response.status_code == 400
    assert response.data["ad_groups"][0]["customer_id"] == [
        "Google Ads customer ids have 10 digits."
    ]
    assert not Promotion.objects.exists()


def test_the_same_ad_group_twice_in_one_promotion_is_refused(staff):
    rows = [{"customer_id": "1234567890", "ad_group_id": "777"}] * 2
    response = staff.post("/api/promotions/", promotion(ad_groups=rows))
    assert response.status_code == 400
    assert response.data["ad_groups"] == ["Each ad group may appear only once."]
    assert not Promotion.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_creating_a_promotion_schedules_its_end_at_local_midnight_and_deleting_cancels_it(
    staff, queue
):
    rows = [{"customer_id": "1234567890", "ad_group_id": "777"}]
    response = staff.post(
        "/api/promotions/", promotion(end_date="2026-06-01", end_time="00:00", ad_groups=rows)
    )
    assert response.status_code == 201, response.data
    assert response.data["end_at"] == "2026-06-01T00:00:00+02:00"  # shown in TIME_ZONE
    assert response.data["status"] == "scheduled"
    assert response.data["ad_groups"] == rows
    job_id = f"promotion-{response.data['id']}-end"
    assert scheduled_at(queue, job_id) == utc("2026-05-31T22:00:00+00:00")

    assert staff.delete(f"/api/promotions/{response.data['id']}/").status_code == 204
    assert scheduled_at(queue, job_id) is None
    assert not Promotion.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_moving_a_promotions_end_reschedules_it_and_replaces_its_ad_groups(staff, queue):
    created = staff.post(
        "/api/promotions/",
        promotion(
            end_date="2026-06-01",
            end_time="00:00",
            ad_groups=[{"customer_id": "1234567890", "ad_group_id": "777"}],
        ),
    )
    url = f"/api/promotions/{created.data['id']}/"
    rows = [{"customer_id": "1234567890", "ad_group_id": "888"}]
    moved = staff.patch(url, {"end_date": "2027-01-01", "ad_groups": rows})
    assert moved.status_code == 200, moved.data
    assert moved.data["ad_groups"] == rows
    job_id = f"promotion-{created.data['id']}-end"
    assert scheduled_at(queue, job_id) == utc("2026-12-31T23:00:00+00:00")


# --- deliveries --------------------------------------------------------------------------------


def delivery(topic: str = "inventory_levels/update", status: str = "done", **fields) -> Delivery:
    return Delivery.objects.create(
        source="shopify",
        shop_domain="elbkerzen.myshopify.com",
        topic=topic,
        webhook_id=f"wh-{Delivery.objects.count()}",
        body=b'{"email": "kundin@example.com"}',
        status=status,
        **fields,
    )


def ids(response) -> list[int]:
    assert response.status_code == 200, response.data
    return [row["id"] for row in response.data["results"]]


def test_deliveries_are_listed_without_their_bodies(staff):
    delivery()
    row = staff.get("/api/deliveries/").data["results"][0]
    assert "body" not in row
    assert "kundin" not in str(row)
    assert row["topic"] == "inventory_levels/update"


def test_deliveries_filter_by_status_topic_and_source(staff):
    dead = delivery(status="dead")
    checkout = delivery(topic="checkouts/create")
    assert ids(staff.get("/api/deliveries/?status=dead")) == [dead.pk]
    assert ids(staff.get("/api/deliveries/?topic=checkouts/create")) == [checkout.pk]
    assert ids(staff.get("/api/deliveries/?source=stripe")) == []


def test_deliveries_filter_by_received_dates_and_times(staff):
    old, new = delivery(), delivery()
    Delivery.objects.filter(pk=old.pk).update(received_at=utc("2026-05-01T10:00:00+00:00"))
    Delivery.objects.filter(pk=new.pk).update(received_at=utc("2026-05-03T10:00:00+00:00"))
    assert ids(staff.get("/api/deliveries/?received_after=2026-05-02")) == [new.pk]
    assert ids(staff.get("/api/deliveries/?received_before=2026-05-02")) == [old.pk]
    after = "2026-05-01T09:00:00Z"
    before = "2026-05-01T11:00:00Z"
    url = f"/api/deliveries/?received_after={after}&received_before={before}"
    assert ids(staff.get(url)) == [old.pk]


@pytest.mark.parametrize(
    ("query", "param"),
    [("received_after=yesterday", "received_after"), ("status=lost", "status")],
)
def test_bad_delivery_filters_are_a_400_naming_the_problem(staff, query, param):
    response = staff.get(f"/api/deliveries/?{query}")
    assert response.status_code == 400
    assert param in response.data


def test_bad_date_filter_says_what_to_give(staff):
    response = staff.get("/api/deliveries/?received_before=2026-13-01")
    assert response.data["received_before"] == [
        "Give an ISO date (2026-05-01) or date-time (2026-05-01T10:00:00+02:00)."
    ]


@pytest.mark.django_db(transaction=True)
def test_replaying_a_dead_delivery_queues_it_again(staff, queue):
    dead = delivery(status="dead", last_error="gave up")
    response = staff.post(f"/api/deliveries/{dead.pk}/replay/")
    assert response.status_code == 202
    assert f"delivery-{dead.pk}" in queue.job_ids
    dead.refresh_from_db()
    assert (dead.status, dead.last_error) == ("received", "")


@pytest.mark.django_db(transaction=True)
def test_replaying_a_done_delivery_is_a_409_saying_why(staff, queue):
    done = delivery(status="done")
    response = staff.post(f"/api/deliveries/{done.pk}/replay/")
    assert response.status_code == 409
    assert response.data["detail"] == (
        f"Delivery {done.pk} is done: only failed, dead or refused deliveries can be replayed."
    )
    assert queue.job_ids == []


@pytest.mark.django_db(transaction=True)
def test_replaying_an_unknown_delivery_is_a_404(staff, queue):
    assert staff.post("/api/deliveries/999999/replay/").status_code == 404
    assert queue.job_ids == []


def test_deliveries_cannot_be_written(staff):
    kept = delivery()
    assert staff.post("/api/deliveries/", {"topic": "x"}).status_code == 405
    assert staff.delete(f"/api/deliveries/{kept.pk}/").status_code == 405
    assert list(Delivery.objects.values_list("pk", "topic")) == [(kept.pk, kept.topic)]


# --- ad group actions and reminder decisions ---------------------------------------------------


def test_ad_group_actions_filter_by_ad_group_source_and_result(staff):
    def action(ad_group_id: str, source: str, result: str) -> AdGroupAction:
        return AdGroupAction.objects.create(
            customer_id="1234567890",
            ad_group_id=ad_group_id,
            desired_status="PAUSED",
            reason="sold out",
            source=source,
            result=result,
            requested_at=timezone.now(),
        )

    webhook = action("777", "webhook", "applied")
    promo = action("888", "promotion", "failed")
    assert ids(staff.get("/api/ad-group-actions/?ad_group_id=777")) == [webhook.pk]
    assert ids(staff.get("/api/ad-group-actions/?source=promotion")) == [promo.pk]
    assert ids(staff.get("/api/ad-group-actions/?result=applied")) == [webhook.pk]
    assert staff.get("/api/ad-group-actions/?result=maybe").status_code == 400
    assert staff.post("/api/ad-group-actions/", {}).status_code == 405


def test_reminder_decisions_never_show_the_full_address(staff):
    checkout = CheckoutState.objects.create(
        source="shopify", token="tok", email="Kundin@Example.com", updated_at=timezone.now()
    )
    ReminderDecision.objects.create(
        checkout=checkout,
        checkout_version=checkout.updated_at - timedelta(minutes=1),
        email="Kundin@Example.com",
        arm="plain",
        reason="plain pays",
        error="SMTPRecipientsRefused: {'kundin@example.com': (550, b'no such user')}",
    )
    response = staff.get("/api/reminder-decisions/")
    row = response.data["results"][0]
    assert row["email"] == "K***@Example.com"
    assert "kundin@" not in str(response.data).lower()
    assert row["reason"] == "plain pays"


# --- schema ------------------------------------------------------------------------------------


def test_schema_is_an_openapi_document_listing_the_resources(staff):
    response = staff.get("/api/schema/?format=json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.")
    assert "/api/deliveries/{id}/replay/" in document["paths"]
    assert "/api/promotions/" in document["paths"]


def test_schema_validates_without_warnings(tmp_path: Path):
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    assert target.read_text().startswith("openapi: 3.")


def test_the_api_root_is_browsable_for_staff(staff):
    response = staff.get("/api/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert "watched-products" in response.content.decode()
