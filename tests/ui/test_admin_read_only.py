"""The admin's read-only pages: what the merchant can open, and bodies that no editor would type."""

import pytest
from django.contrib import admin
from django.urls import reverse

from automation.models import AdGroupAction, Delivery, StockLevel
from automation.ui.admin.base import ReadOnlyAdmin

pytestmark = pytest.mark.django_db


def test_a_body_with_a_lone_surrogate_is_shown_escaped(admin_client):
    # Given a stored body whose JSON escape decodes to a lone surrogate (valid JSON, valid UTF-8
    # bytes, but no UTF-8 spelling once decoded)
    delivery = Delivery.objects.create(
        source=Delivery.Source.SHOPIFY,
        topic="checkouts/update",
        body=b'{"first_name": "Ann\\ud800a", "total_price": "12.00"}',
    )
    # When the merchant opens it
    response = admin_client.get(reverse("admin:automation_delivery_change", args=[delivery.pk]))
    # Then the page renders, with the character spelled as the body spells it
    assert response.status_code == 200
    html = response.content.decode()
    assert "Ann\\ud800a" in html
    assert "&quot;total_price&quot;: &quot;12.00&quot;" in html


@pytest.mark.parametrize("model", [Delivery, AdGroupAction, StockLevel])
def test_records_of_what_happened_are_read_only(admin_client, model):
    model_admin = admin.site._registry[model]
    assert isinstance(model_admin, ReadOnlyAdmin)
    add_url = reverse(f"admin:automation_{model._meta.model_name}_add")
    assert admin_client.get(add_url).status_code == 403
