"""The Shopify intake contract: verify, store once, enqueue after commit, answer."""

import json
import threading

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from automation.intake import inbox
from automation.models import Delivery
from tests.support.signing import SHOP, post_shopify, shopify_headers

pytestmark = pytest.mark.django_db(transaction=True)

KNOWN_BODY = b'{"inventory_item_id":808950810,"available":0}'
KNOWN_HMAC = "WsbEAO23WBTv/jRCvwSm+JKbk0mqDEnVoHet6eHzjW8="
OTHER_BODY = b'{"inventory_item_id":808950810,"available":9}'
OTHER_HMAC = "8VaGxE/VorQ4ejSaiw7t2BCxAFr1PMnPTAxhDkce51w="


def post_raw(client: Client, body: bytes, **headers):
    return client.post("/webhooks/shopify/", data=body, content_type="application/json", **headers)


def test_known_vector_is_accepted_stored_and_enqueued(client, queue):
    headers = shopify_headers(KNOWN_BODY, "inventory_levels/update")
    assert headers["HTTP_X_SHOPIFY_HMAC_SHA256"] == KNOWN_HMAC

    response = post_raw(client, KNOWN_BODY, **headers)

    assert response.status_code == 200
    delivery = Delivery.objects.get()
    assert bytes(delivery.body) == KNOWN_BODY
    assert delivery.status == Delivery.Status.RECEIVED
    assert delivery.shop_domain == SHOP
    assert delivery.topic == "inventory_levels/update"
    assert delivery.api_version == "2026-07"
    assert delivery.triggered_at.isoformat() == "2026-11-26T15:10:00+00:00"
    assert queue.job_ids == [f"delivery-{delivery.pk}"]


def test_known_signature_over_a_changed_body_is_rejected(client, queue):
    assert shopify_headers(OTHER_BODY, "x")["HTTP_X_SHOPIFY_HMAC_SHA256"] == OTHER_HMAC
    headers = shopify_headers(OTHER_BODY, "inventory_levels/update")
    headers["HTTP_X_SHOPIFY_HMAC_SHA256"] = KNOWN_HMAC

    response = post_raw(client, OTHER_BODY, **headers)

    assert response.status_code == 401
    assert response.json() == {"error": "invalid signature"}
    assert not Delivery.objects.exists()
    assert queue.count == 0


@pytest.mark.parametrize(
    "changed",
    [KNOWN_BODY + b" ", b" " + KNOWN_BODY, KNOWN_BODY.replace(b":0", b": 0"), KNOWN_BODY[:-1]],
)
def test_a_single_byte_of_difference_fails(client, queue, changed):
    headers = shopify_headers(KNOWN_BODY, "inventory_levels/update")
    assert post_raw(client, changed, **headers).status_code == 401
    assert not Delivery.objects.exists()
    assert queue.count == 0


@pytest.mark.parametrize(
    "hmac_header",
    [None, "", "not base64 at all!", "WsbEAO23WBTv/jRCvwSm+JKbk0mq", "äöü"],
    ids=["missing", "empty", "not-base64", "truncated", "non-ascii"],
)
def test_bad_signature_headers_are_401(client, queue, hmac_header):
    headers = shopify_headers(KNOWN_BODY, "inventory_levels/update")
    headers["HTTP_X_SHOPIFY_HMAC_SHA256"] = hmac_header
    headers = {key: value for key, value in headers.items() if value is not None}
    assert post_raw(client, KNOWN_BODY, **headers).status_code == 401
    assert not Delivery.objects.exists()
    assert queue.count == 0


def test_wrong_secret_is_401(client, queue):
    headers = shopify_headers(KNOWN_BODY, "inventory_levels/update", secret="someone_else")
    assert post_raw(client, KNOWN_BODY, **headers).status_code == 401
    assert not Delivery.objects.exists()


def test_rotated_secret_is_accepted(client, queue):
    headers = shopify_headers(KNOWN_BODY, "inventory_levels/update", secret="rotated_secret")
    assert post_raw(client, KNOWN_BODY, **headers).status_code == 200
    assert Delivery.objects.count() == 1


@pytest.mark.parametrize("method", ["get", "put", "delete", "patch"])
def test_other_methods_are_405_with_allow(client, method):
    response = getattr(client, method)("/webhooks/shopify/")
    assert response.status_code == 405
    assert response["Allow"] == "POST"


def test_oversize_body_is_413_and_not_stored(client, queue, settings):
    settings.WEBHOOK_MAX_BODY_BYTES = 1000
    body = json.dumps({"pad": "x" * 2000}).encode()
    response = post_raw(client, body, **shopify_headers(body, "test/topic"))
    assert response.status_code == 413
    assert not Delivery.objects.exists()
    assert queue.count == 0


def test_body_at_the_limit_is_accepted(client, queue, settings):
    body = json.dumps({"pad": "x" * 990}).encode()
    settings.WEBHOOK_MAX_BODY_BYTES = len(body)
    assert post_raw(client, body, **shopify_headers(body, "test/topic")).status_code == 200
    delivery = Delivery.objects.get()
    assert bytes(delivery.body) == body  # stored whole, not cut at the limit
    assert queue.job_ids == [f"delivery-{delivery.pk}"]


def test_unknown_shop_is_403(client, queue):
    headers = shopify_headers(
        KNOWN_BODY, "test/topic", HTTP_X_SHOPIFY_SHOP_DOMAIN="evil.myshopify.com"
    )
    assert post_raw(client, KNOWN_BODY, **headers).status_code == 403
    assert not Delivery.objects.exists()


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("HTTP_X_SHOPIFY_TOPIC", "X-Shopify-Topic"),
        ("HTTP_X_SHOPIFY_WEBHOOK_ID", "X-Shopify-Webhook-Id"),
    ],
)
def test_missing_topic_or_webhook_id_is_400_naming_it(client, queue, header, name):
    headers = shopify_headers(KNOWN_BODY, "test/topic", **{header: None})
    response = post_raw(client, KNOWN_BODY, **headers)
    assert response.status_code == 400
    assert name in response.json()["error"]
    assert not Delivery.objects.exists()


def test_overlong_topic_is_400_not_a_database_error(client, queue):
    headers = shopify_headers(KNOWN_BODY, "t" * 300)
    assert post_raw(client, KNOWN_BODY, **headers).status_code == 400
    assert not Delivery.objects.exists()


def test_duplicate_is_200_counted_without_new_row_or_job(client, queue):
    headers = shopify_headers(KNOWN_BODY, "test/topic")
    assert post_raw(client, KNOWN_BODY, **headers).status_code == 200
    response = post_raw(client, KNOWN_BODY, **headers)

    assert response.status_code == 200
    assert response.json() == {"status": "duplicate"}
    delivery = Delivery.objects.get()
    assert delivery.duplicate_count == 1
    assert queue.count == 1


def test_same_webhook_id_on_another_topic_is_a_separate_delivery(client, queue):
    headers = shopify_headers(KNOWN_BODY, "test/topic", HTTP_X_SHOPIFY_WEBHOOK_ID="same-id")
    post_raw(client, KNOWN_BODY, **headers)
    other = shopify_headers(KNOWN_BODY, "other/topic", HTTP_X_SHOPIFY_WEBHOOK_ID="same-id")
    post_raw(client, KNOWN_BODY, **other)
    assert Delivery.objects.count() == 2


@pytest.mark.postgres(reason="concurrent transactions racing for one unique row")
def test_concurrent_identical_requests_make_one_row_and_one_job(queue, requires_postgres):
    headers = shopify_headers(KNOWN_BODY, "test/topic")
    barrier = threading.Barrier(4)
    statuses: list[int] = []

    def send() -> None:
        try:
            barrier.wait()
            statuses.append(post_raw(Client(), KNOWN_BODY, **headers).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert statuses == [200, 200, 200, 200]
    delivery = Delivery.objects.get()
    assert delivery.duplicate_count == 3
    assert queue.count == 1


@pytest.mark.parametrize(
    "body", [b"not json", b"[1, 2, 3]", b'"a string"', b"\xff\xfe\x00", b"", b"[" * 100_000]
)
def test_signed_body_that_is_not_a_json_object_is_stored_invalid(client, queue, body):
    response = post_raw(client, body, **shopify_headers(body, "test/topic"))
    assert response.status_code == 200
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID
    assert delivery.last_error
    assert bytes(delivery.body) == body
    assert queue.count == 0


def test_redis_down_still_answers_200_and_keeps_the_row(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/15"
    response = post_shopify(client, {"a": 1})
    assert response.status_code == 200
    assert Delivery.objects.get().status == Delivery.Status.RECEIVED


def test_database_down_is_503_and_nothing_enqueued(client, queue, monkeypatch):
    from django.db import OperationalError

    def broken(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(inbox.rows, "insert", broken)
    response = post_shopify(client, {"a": 1})
    assert response.status_code == 503
    assert queue.count == 0


def test_recorded_row_carries_every_model_default_and_answers_with_its_id(client, queue):
    before = timezone.now()
    response = post_raw(
        client, KNOWN_BODY, **shopify_headers(KNOWN_BODY, "inventory_levels/update")
    )
    delivery = Delivery.objects.get()
    assert response.json() == {"status": "received", "id": delivery.pk}
    assert delivery.attempts == 0
    assert delivery.duplicate_count == 0
    assert delivery.customer_ref == ""
    assert delivery.last_error == ""
    assert delivery.processed_at is None
    assert before <= delivery.received_at <= timezone.now()
