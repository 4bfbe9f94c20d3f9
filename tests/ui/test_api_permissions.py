"""Staff status alone opens nothing: the API asks for the model permission the admin asks for.

Given a staff user with a token, when they call the API, then each action needs its Django
permission (view to read, add, change, delete; replaying a delivery needs change), superusers
pass, and no page holds more than MAX_PAGE_SIZE rows.
"""

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from automation.models import Delivery, MarginRule, WatchedProduct
from automation.ui.api.pagination import MAX_PAGE_SIZE
from automation.ui.api.permissions import ModelPermissions
from automation.ui.api.urls import router
from tests.support.watching import watch

pytestmark = pytest.mark.django_db

RESOURCES = [
    "/api/watched-products/",
    "/api/margin-rules/",
    "/api/promotions/",
    "/api/deliveries/",
    "/api/ad-group-actions/",
    "/api/reminder-decisions/",
]
NEW_PRODUCT = {
    "product_id": 4711,
    "label": "Winterzauber",
    "ad_groups": [{"customer_id": "1234567890", "ad_group_id": "777"}],
}
URL = "/api/watched-products/"


def staff_with(*codenames: str, superuser: bool = False) -> APIClient:
    """A token client for a staff user holding exactly these automation permissions."""
    user = User.objects.create_user(
        f"staff-{User.objects.count()}", is_staff=True, is_superuser=superuser
    )
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="automation", codename__in=codenames)
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def watched_product() -> WatchedProduct:
    return watch(1, "555", label="Lavendel", customer_id="1234567890", product_id=1)


def dead_delivery() -> Delivery:
    return Delivery.objects.create(
        source="shopify",
        shop_domain="elbkerzen.myshopify.com",
        topic="inventory_levels/update",
        webhook_id="wh-dead",
        body=b"{}",
        status="dead",
        last_error="gave up",
    )


# --- staff without permissions -----------------------------------------------------------------


@pytest.mark.parametrize("url", RESOURCES)
def test_staff_without_permissions_cannot_list(url):
    watched_product()
    dead_delivery()
    response = staff_with().get(url)
    assert response.status_code == 403
    assert response.data["detail"].code == "permission_denied"
    assert "results" not in response.data


def test_staff_without_permissions_cannot_read_one_row():
    product = watched_product()
    response = staff_with().get(f"{URL}{product.pk}/")
    assert response.status_code == 403
    assert b"Lavendel" not in response.content


def test_staff_without_permissions_cannot_create_change_or_delete():
    product = watched_product()
    client = staff_with()
    url = f"{URL}{product.pk}/"

    assert client.post(URL, NEW_PRODUCT).status_code == 403
    assert client.patch(url, {"pause_at": 9}).status_code == 403
    assert client.put(url, {**NEW_PRODUCT, "pause_at": 9}).status_code == 403
    assert client.delete(url).status_code == 403
    assert client.post("/api/margin-rules/", {"rate": "0.5", "vendor": "B"}).status_code == 403

    assert list(WatchedProduct.objects.values_list("pk", "pause_at")) == [(product.pk, 0)]
    assert not MarginRule.objects.exists()


def test_staff_without_permissions_cannot_replay_a_delivery():
    dead = dead_delivery()
    assert staff_with().post(f"/api/deliveries/{dead.pk}/replay/").status_code == 403
    dead.refresh_from_db()
    assert (dead.status, dead.last_error) == ("dead", "gave up")


# --- view only -----------------------------------------------------------------------------------


def test_view_permission_reads_but_cannot_write():
    product = watched_product()
    client = staff_with("view_watchedproduct")
    url = f"{URL}{product.pk}/"

    assert client.get(URL).status_code == 200
    assert client.get(url).data["label"] == "Lavendel"
    assert client.post(URL, NEW_PRODUCT).status_code == 403
    assert client.patch(url, {"pause_at": 9}).status_code == 403
    assert client.delete(url).status_code == 403
    assert client.get("/api/margin-rules/").status_code == 403  # another model: no permission

    assert list(WatchedProduct.objects.values_list("pk", "pause_at")) == [(product.pk, 0)]


def test_viewing_deliveries_does_not_allow_replaying_them():
    dead = dead_delivery()
    client = staff_with("view_delivery")
    assert client.get("/api/deliveries/").status_code == 200
    assert client.post(f"/api/deliveries/{dead.pk}/replay/").status_code == 403
    dead.refresh_from_db()
    assert dead.status == "dead"


# --- exactly the permission needed ----------------------------------------------------------------


def test_add_permission_creates():
    response = staff_with("add_watchedproduct").post(URL, NEW_PRODUCT)
    assert response.status_code == 201, response.data
    product = WatchedProduct.objects.get()
    assert (product.pk, product.product_id, product.label) == (
        response.data["id"],
        4711,
        "Winterzauber",
    )
    assert [group.key for group in product.ad_groups.all()] == [("1234567890", "777")]


def test_change_permission_updates():
    product = watched_product()
    response = staff_with("change_watchedproduct").patch(f"{URL}{product.pk}/", {"pause_at": 3})
    assert response.status_code == 200, response.data
    product.refresh_from_db()
    assert product.pause_at == 3


def test_delete_permission_deletes():
    product = watched_product()
    assert staff_with("delete_watchedproduct").delete(f"{URL}{product.pk}/").status_code == 204
    assert not WatchedProduct.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_change_permission_on_deliveries_replays(queue):
    dead = dead_delivery()
    response = staff_with("change_delivery").post(f"/api/deliveries/{dead.pk}/replay/")
    assert response.status_code == 202, response.data
    assert f"delivery-{dead.pk}" in queue.job_ids


def test_a_superuser_needs_no_explicit_permission():
    dead = dead_delivery()
    client = staff_with(superuser=True)
    listed = client.get("/api/deliveries/")
    assert listed.status_code == 200
    assert [row["id"] for row in listed.data["results"]] == [dead.pk]
    assert client.post(URL, NEW_PRODUCT).status_code == 201
    assert WatchedProduct.objects.get().label == "Winterzauber"


def test_the_api_root_and_schema_stay_open_to_staff_they_hold_no_rows():
    client = staff_with()
    root = client.get("/api/")
    assert root.status_code == 200
    assert root.data["watched-products"] == "http://testserver/api/watched-products/"
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert "/api/watched-products/" in schema.data["paths"]


def test_every_resource_asks_for_model_permissions():
    """A view that overrides permission_classes must keep the model permissions."""
    for _prefix, viewset, _basename in router.registry:
        assert any(issubclass(cls, ModelPermissions) for cls in viewset.permission_classes)
        for extra in viewset.get_extra_actions():
            classes = extra.kwargs.get("permission_classes", viewset.permission_classes)
            assert any(issubclass(cls, ModelPermissions) for cls in classes), extra.__name__


# --- page size ---------------------------------------------------------------------------------


def test_a_page_never_holds_more_than_the_maximum():
    WatchedProduct.objects.bulk_create(
        WatchedProduct(product_id=n, label=f"Kerze {n}") for n in range(1, MAX_PAGE_SIZE + 2)
    )
    response = staff_with("view_watchedproduct").get(f"{URL}?limit=100000")
    assert response.status_code == 200
    assert response.data["count"] == MAX_PAGE_SIZE + 1
    assert len(response.data["results"]) == MAX_PAGE_SIZE
    assert response.data["next"] is not None
