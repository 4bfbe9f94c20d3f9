"""The Stripe intake: signed "{t}.{body}", tolerance, rotation, dedup on the event id."""

import json
import time

import pytest

from automation.models import Delivery
from tests.support.signing import STRIPE_SECRET, post_stripe, stripe_header

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]

EVENT = {"id": "evt_1QdemoExpired0001", "type": "checkout.session.expired", "data": {}}


def test_valid_event_is_stored_and_enqueued(client, queue):
    response = post_stripe(client, EVENT)
    assert response.status_code == 200
    delivery = Delivery.objects.get()
    assert (delivery.source, delivery.topic, delivery.event_id) == (
        "stripe",
        "checkout.session.expired",
        "evt_1QdemoExpired0001",
    )
    assert queue.job_ids == [f"delivery-{delivery.pk}"]


def test_tampered_body_is_400_with_reason(client, queue):
    body = json.dumps(EVENT).encode()
    header = stripe_header(body, [STRIPE_SECRET])
    response = client.post(
        "/webhooks/stripe/",
        data=body.replace(b"expired", b"complete"),
        content_type="application/json",
        HTTP_STRIPE_SIGNATURE=header,
    )
    assert response.status_code == 400
    assert "no signature matches" in response.json()["error"]
    assert not Delivery.objects.exists()
    assert queue.count == 0


def test_timestamp_older_than_the_tolerance_is_400(client, queue, settings):
    old = int(time.time()) - settings.STRIPE_WEBHOOK_TOLERANCE - 5
    response = post_stripe(client, EVENT, timestamp=old)
    assert response.status_code == 400
    assert "tolerance" in response.json()["error"]
    assert not Delivery.objects.exists()


def test_two_v1_values_during_rotation_one_matching_is_accepted(client, queue):
    response = post_stripe(client, EVENT, secrets=("whsec_retired", "whsec_test_two"))
    assert response.status_code == 200
    assert Delivery.objects.count() == 1


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (None, "missing Stripe-Signature"),
        ("v1=abc", "no timestamp"),
        ("t=abc,v1=abc", "no valid timestamp"),
        ("t=1700000000,v0=abc", "no v1 signature"),
    ],
)
def test_malformed_signature_header_is_400(client, header, reason):
    extra = {} if header is None else {"HTTP_STRIPE_SIGNATURE": header}
    response = client.post(
        "/webhooks/stripe/", data=b"{}", content_type="application/json", **extra
    )
    assert response.status_code == 400
    assert reason in response.json()["error"]
    assert not Delivery.objects.exists()


def test_redelivered_event_is_deduplicated(client, queue):
    post_stripe(client, EVENT)
    response = post_stripe(client, EVENT)  # Stripe signs each retry anew with a new t
    assert response.status_code == 200
    assert Delivery.objects.get().duplicate_count == 1
    assert queue.count == 1


def test_signed_event_without_id_is_stored_invalid(client, queue):
    response = post_stripe(client, {"type": "checkout.session.expired"})
    assert response.status_code == 200
    assert Delivery.objects.get().status == Delivery.Status.INVALID
    assert queue.count == 0
