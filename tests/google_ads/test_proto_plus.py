"""The Ads call works whether the client runs with proto-plus messages or raw protobuf.

`use_proto_plus: False` is what many google-ads YAML files say; the SDK then hands out raw
protobuf messages, which have no `_pb`
(https://developers.google.com/google-ads/api/docs/client-libs/python/protobuf-messages).
`field_mask(None, ad_group._pb)` then failed with an AttributeError, retried by RQ six times.
"""

from typing import Any

import pytest
from django.core import mail

from automation.google_ads import adapter as google_ads
from automation.google_ads import statuses as ads
from automation.models import AdGroupAction, Delivery
from automation.platform.exceptions import PermanentAdsError
from tests.support.ads_standin import DEVELOPER_TOKEN, make_test_client
from tests.support.signing import post_shopify
from tests.support.watching import watch

# What Google's examples/basic_operations/update_ad_group.py sends: field_mask(None, ad_group)
# names every field set on the update, the resource name included.
MASK = ["resource_name", "status"]
SOLD_OUT = {
    "inventory_item_id": 808950810,
    "location_id": 24826418,
    "available": 0,
    "updated_at": "2026-11-26T16:10:00+01:00",
}


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.mark.django_db(transaction=True)
def test_sell_out_with_raw_protobuf_sends_the_exact_pause_operation(
    client, run_worker, google_ads, settings, monkeypatch
):
    settings.GOOGLE_ADS_USE_PROTO_PLUS = False
    raw = make_test_client(google_ads, use_proto_plus=settings.GOOGLE_ADS_USE_PROTO_PLUS)
    assert raw.use_proto_plus is False
    monkeypatch.setattr(ads, "google_client", lambda: raw)
    watch(808950810, "555", customer_id="1234567890")

    post_shopify(client, SOLD_OUT, topic="inventory_levels/update")
    run_worker()

    (call,) = google_ads.requests  # one call: nothing failed, nothing was retried
    assert call.request.customer_id == "1234567890"
    (operation,) = call.request.operations
    assert operation.update.resource_name == "customers/1234567890/adGroups/555"
    assert operation.update.status == 3  # AdGroupStatusEnum.PAUSED
    assert list(operation.update_mask.paths) == MASK
    assert call.metadata["developer-token"] == DEVELOPER_TOKEN
    assert Delivery.objects.get().status == Delivery.Status.DONE
    action = AdGroupAction.objects.get()
    assert (action.result, action.desired_status) == ("applied", "PAUSED")
    assert not mail.outbox


@pytest.mark.parametrize("use_proto_plus", [True, False])
def test_both_message_kinds_build_the_same_request(ads_standin, use_proto_plus):
    ads_standin.requests.clear()
    ads_standin.script([])
    ads_standin._per_ad_group.clear()
    result = google_ads.set_ad_group_status(
        "123-456-7890",
        "556",
        "ENABLED",
        client=make_test_client(ads_standin, use_proto_plus=use_proto_plus),
    )
    assert result == "customers/1234567890/adGroups/556"
    (operation,) = ads_standin.requests[0].request.operations
    assert operation.update.status == 2  # AdGroupStatusEnum.ENABLED
    assert list(operation.update_mask.paths) == MASK


def test_a_programming_error_is_permanent_and_never_retried():
    """A bug (here: no client at all) is not a hiccup: no retry, in the job or by RQ."""
    sleeps = Sleeps()
    with pytest.raises(PermanentAdsError, match="^PROGRAMMING_ERROR: AttributeError"):
        google_ads.set_ad_group_status_with_retry(
            "1234567890", "555", "PAUSED", client=object(), sleep=sleeps
        )
    assert sleeps == []


@pytest.mark.django_db  # the client also takes what the set-up page stored
@pytest.mark.parametrize("value", [True, False])
def test_the_setting_reaches_the_sdk_when_configured_from_the_environment(
    settings, monkeypatch, value
):
    """The SDK requires use_proto_plus (google/ads/googleads/config.py, _REQUIRED_KEYS)."""
    from google.ads.googleads.client import GoogleAdsClient

    seen: list[dict[str, Any]] = []

    def load_from_dict(config: dict[str, Any], version: str | None = None) -> str:
        seen.append(dict(config, version=version))
        return "client"

    monkeypatch.delenv("GOOGLE_ADS_CONFIGURATION_FILE_PATH", raising=False)
    monkeypatch.setenv("GOOGLE_ADS_DEVELOPER_TOKEN", "devtok")
    monkeypatch.setenv("GOOGLE_ADS_CUSTOMER_ID", "1234567890")  # ours, not the SDK's
    monkeypatch.setenv("GOOGLE_ADS_USE_PROTO_PLUS", "maybe")  # read by settings, not here
    monkeypatch.setattr(GoogleAdsClient, "load_from_dict", load_from_dict)
    settings.GOOGLE_ADS_USE_PROTO_PLUS = value
    ads.google_client.cache_clear()
    try:
        assert ads.google_client() == "client"
    finally:
        ads.google_client.cache_clear()

    (config,) = seen
    assert config["use_proto_plus"] is value
    assert config["developer_token"] == "devtok"
    assert config["version"] == google_ads.API_VERSION
    assert "customer_id" not in config
