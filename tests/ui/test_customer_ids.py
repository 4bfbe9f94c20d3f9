"""A Google Ads customer id may be entered as Google Ads shows it (123-456-7890) wherever one is
entered (admin, API, the SDK's login customer id); the digits are what is stored and sent."""

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from google.ads.googleads import config as sdk_config
from google.ads.googleads.client import GoogleAdsClient
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from automation.google_ads import adapter as google_ads
from automation.models import AdGroup, Promotion, PromotionAdGroup

DASHED = "123-456-7890"
DIGITS = "1234567890"


@pytest.fixture
def staff(db) -> APIClient:
    user = User.objects.create_user("operator", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="automation"))
    client = APIClient()
    client.default_format = "json"
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def input_maxlength(html: str, name: str) -> int | None:
    tag = re.search(rf'<input[^>]*name="{re.escape(name)}"[^>]*>', html)
    assert tag, f"no input {name}"
    found = re.search(r'maxlength="(\d+)"', tag.group(0))
    return int(found.group(1)) if found else None


def promotion_form(customer_id: str) -> dict[str, str]:
    return {
        "name": "Pfingsten",
        "time_zone": "Europe/Berlin",
        "ad_groups-TOTAL_FORMS": "1",
        "ad_groups-INITIAL_FORMS": "0",
        "ad_groups-0-customer_id": customer_id,
        "ad_groups-0-ad_group_id": "777",
    }


def test_the_promotion_inline_lets_a_browser_keep_a_pasted_dashed_id(admin_client):
    page = admin_client.get("/admin/automation/promotion/add/").content.decode()
    assert input_maxlength(page, "ad_groups-0-customer_id") >= len(DASHED)


def test_the_promotion_inline_stores_a_dashed_id_as_digits(admin_client, queue):
    response = admin_client.post("/admin/automation/promotion/add/", promotion_form(DASHED))
    assert response.status_code == 302, response.content.decode()[:3000]
    assert list(PromotionAdGroup.objects.values_list("customer_id", "ad_group_id")) == [
        (DIGITS, "777")
    ]


def test_the_promotion_inline_still_refuses_a_cut_id_naming_it(admin_client, queue):
    response = admin_client.post("/admin/automation/promotion/add/", promotion_form("123-456-78"))
    assert response.status_code == 200
    assert "(not “123-456-78”)" in response.content.decode()
    assert not Promotion.objects.exists()


def test_the_ad_group_page_lets_a_browser_keep_a_pasted_dashed_id(admin_client):
    page = admin_client.get("/admin/automation/adgroup/add/").content.decode()
    assert input_maxlength(page, "customer_id") >= len(DASHED)


def test_the_api_stores_a_watched_products_dashed_id_as_digits(staff):
    given = {
        "product_id": 632910392,
        "label": "Winterzauber",
        "ad_groups": [{"customer_id": DASHED, "ad_group_id": "777"}],
    }
    response = staff.post("/api/watched-products/", given)
    assert response.status_code == 201, response.data
    assert response.data["ad_groups"] == [{"customer_id": DIGITS, "ad_group_id": "777"}]
    assert AdGroup.objects.get().key == (DIGITS, "777")


def test_the_api_stores_a_promotions_dashed_id_as_digits(staff, queue):
    given = {
        "name": "Pfingsten",
        "time_zone": "Europe/Berlin",
        "ad_groups": [{"customer_id": DASHED, "ad_group_id": "777"}],
    }
    response = staff.post("/api/promotions/", given)
    assert response.status_code == 201, response.data
    assert response.data["ad_groups"] == [{"customer_id": DIGITS, "ad_group_id": "777"}]
    assert PromotionAdGroup.objects.get().customer_id == DIGITS


@pytest.mark.parametrize("cut", ["123-456-78", "123-456-78901", "123-456-789a"])
def test_the_api_still_refuses_an_id_without_ten_digits(staff, cut):
    given = {
        "product_id": 1,
        "label": "x",
        "ad_groups": [{"customer_id": cut, "ad_group_id": "777"}],
    }
    response = staff.post("/api/watched-products/", given)
    assert response.status_code == 400
    assert response.data["ad_groups"][0]["customer_id"] == [
        "Google Ads customer ids have 10 digits."
    ]
    assert not AdGroup.objects.exists()


def test_a_dashed_login_customer_id_in_the_environment_reaches_the_sdk_as_digits(monkeypatch):
    """The SDK itself refuses anything but ten digits (its config.validate_dict)."""
    monkeypatch.delenv("GOOGLE_ADS_CONFIGURATION_FILE_PATH", raising=False)
    monkeypatch.setenv("GOOGLE_ADS_DEVELOPER_TOKEN", "dev-token")
    monkeypatch.setenv("GOOGLE_ADS_CLIENT_ID", "client-id")
    monkeypatch.setenv("GOOGLE_ADS_CLIENT_SECRET", "client-secret")
    monkeypatch.setenv("GOOGLE_ADS_REFRESH_TOKEN", "refresh-token")
    monkeypatch.setenv("GOOGLE_ADS_LOGIN_CUSTOMER_ID", DASHED)
    seen: list[dict[str, Any]] = []

    def offline(config: dict[str, Any], version: str | None = None) -> str:
        sdk_config.validate_dict(config)  # the SDK's own check, before it refreshes OAuth
        seen.append(config)
        return "client"

    monkeypatch.setattr(GoogleAdsClient, "load_from_dict", offline)
    assert google_ads.build_client() == "client"
    assert seen[0]["login_customer_id"] == DIGITS
