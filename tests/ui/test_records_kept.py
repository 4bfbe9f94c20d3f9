"""Records of what happened cannot be deleted, neither in the admin nor through the API.

Deliveries, checkouts, stock levels, reminder decisions, ad group changes and reconcile runs
are the shop's history: the dashboard counts them and the merchant reads them to see why
something happened. Settings (watched products, ad groups, margin rules, promotions) stay
deletable; the catalogue (products, variants) is Shopify's, kept for the stock, and read only.
"""

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import RequestFactory
from django.urls import reverse
from rest_framework.test import APIClient

from automation.models import (
    AdGroup,
    AdGroupAction,
    CheckoutState,
    Delivery,
    Location,
    Product,
    ReconcileRun,
    ReminderDecision,
    StockLevel,
    Variant,
    WatchedProduct,
)
from automation.ui.api.urls import router

pytestmark = pytest.mark.django_db

RECORDS = [Delivery, CheckoutState, StockLevel, ReminderDecision, AdGroupAction, ReconcileRun]


@pytest.fixture
def superuser() -> User:
    return User.objects.create_superuser("chefin", "chefin@elbkerzen.example", "x")


@pytest.mark.parametrize("model", RECORDS, ids=lambda model: model.__name__)
def test_the_admin_offers_no_way_to_delete_a_record(model, superuser, client):
    # Given the shop's owner (a superuser, who may do anything the admin allows)
    request = RequestFactory().get("/admin/")
    request.user = superuser
    model_admin = admin.site._registry[model]
    # Then the admin neither allows deleting a record nor offers the bulk delete action
    assert not model_admin.has_delete_permission(request)
    assert "delete_selected" not in model_admin.get_actions(request)
    # And the delete page refuses (a row that does not exist is refused the same way)
    client.force_login(superuser)
    url = reverse(f"admin:automation_{model._meta.model_name}_delete", args=[1])
    assert client.get(url).status_code == 403


def test_settings_stay_deletable(superuser):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    assert admin.site._registry[WatchedProduct].has_delete_permission(request)
    assert admin.site._registry[AdGroup].has_delete_permission(request)


def test_a_location_is_neither_added_nor_deleted_only_its_counting_changed(superuser):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    model_admin = admin.site._registry[Location]
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert "delete_selected" not in model_admin.get_actions(request)
    assert model_admin.has_change_permission(request)
    assert model_admin.list_editable == ("counting",)


@pytest.mark.parametrize("model", [Product, Variant], ids=lambda model: model.__name__)
def test_the_catalogue_is_read_only(model, superuser):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    model_admin = admin.site._registry[model]
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


def record_routes() -> list[str]:
    """The API prefixes whose rows are records."""
    return [
        prefix
        for prefix, viewset, _ in router.registry
        if viewset.queryset is not None and viewset.queryset.model in RECORDS
    ]


def test_the_api_serves_records(superuser):
    assert {"deliveries", "ad-group-actions", "reminder-decisions"} <= set(record_routes())


@pytest.mark.parametrize("prefix", record_routes())
def test_the_api_has_no_delete_route_for_records(prefix, superuser):
    # Given the owner's session and the API's list of a record resource
    api = APIClient()
    api.force_authenticate(superuser)
    assert api.get(f"/api/{prefix}/").status_code == 200
    # Then DELETE is not a method the resource has, on the list or on a row
    assert api.delete(f"/api/{prefix}/").status_code == 405
    response = api.delete(f"/api/{prefix}/1/")
    assert response.status_code == 405
    assert "DELETE" not in response.get("Allow", "")
