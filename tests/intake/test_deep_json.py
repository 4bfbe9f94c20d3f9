"""JSON nested deeper than Python's decoder goes: the API answers 400, the webhook intake
stores the signed body as `invalid` with the reason; neither answers 500."""

import pytest

from automation.models import Delivery, MarginRule, WatchedProduct
from tests.support.signing import post_shopify
from tests.ui.test_api import client_for

pytestmark = pytest.mark.django_db

DEPTH = 1000


def nested(depth: int) -> bytes:
    return b'{"label": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize("url", ["/api/watched-products/", "/api/margin-rules/"])
def test_api_json_nested_a_thousand_deep_is_a_400(url):
    client = client_for(is_staff=True)
    response = client.post(url, data=nested(DEPTH), content_type="application/json")
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["detail"]
    assert not WatchedProduct.objects.exists() and not MarginRule.objects.exists()


def test_api_json_of_ordinary_depth_still_reaches_the_serializer():
    client = client_for(is_staff=True)
    response = client.post(
        "/api/watched-products/", data=nested(3), content_type="application/json"
    )
    assert response.status_code == 400
    # the serializer's own answer, field by field: three levels of list are not a label
    assert response.json() == {
        "product_id": ["This field is required."],
        "label": ["Not a valid string."],
        "ad_groups": ["This field is required."],
    }


def test_a_signed_webhook_nested_a_thousand_deep_is_stored_invalid_not_a_500(client, queue):
    """200, as for every signed body we stored: Shopify retries any other answer."""
    response = post_shopify(client, nested(DEPTH), topic="inventory_levels/update")
    assert response.status_code == 200
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID
    assert delivery.last_error.startswith("body is not valid JSON")
