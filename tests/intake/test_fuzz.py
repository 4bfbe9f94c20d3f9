"""Property-based fuzzing of the intake: never a 5xx, never a row without a valid signature."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from automation.models import Delivery
from tests.support.signing import SECRET, shopify_headers

pytestmark = pytest.mark.django_db(transaction=True)

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

header_values = st.one_of(
    st.none(),
    st.text(max_size=300),
    st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=80),
    st.sampled_from(["elbkerzen.myshopify.com", "inventory_levels/update", "", " "]),
)
HEADER_NAMES = [
    "HTTP_X_SHOPIFY_TOPIC",
    "HTTP_X_SHOPIFY_HMAC_SHA256",
    "HTTP_X_SHOPIFY_SHOP_DOMAIN",
    "HTTP_X_SHOPIFY_WEBHOOK_ID",
    "HTTP_X_SHOPIFY_EVENT_ID",
    "HTTP_X_SHOPIFY_TRIGGERED_AT",
    "HTTP_X_SHOPIFY_API_VERSION",
    "HTTP_STRIPE_SIGNATURE",
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=50),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)


def _post(client, path, body, headers):
    headers = {key: value for key, value in headers.items() if value is not None}
    headers = {
        key: value.encode("utf-8", "surrogatepass").decode("latin-1")
        for key, value in headers.items()
    }
    return client.post(path, data=body, content_type="application/octet-stream", **headers)


@FUZZ
@given(
    body=st.binary(max_size=2000),
    headers=st.fixed_dictionaries({name: header_values for name in HEADER_NAMES}),
    path=st.sampled_from(["/webhooks/shopify/", "/webhooks/stripe/"]),
)
def test_unsigned_requests_never_5xx_and_store_nothing(client, queue, body, headers, path):
    response = _post(client, path, body, headers)
    assert response.status_code < 500
    assert response.status_code in {400, 401, 403}
    assert not Delivery.objects.exists()
    assert queue.count == 0


@FUZZ
@given(
    payload=json_values,
    topic=st.text(
        alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40
    ),
)
def test_signed_hostile_json_is_stored_received_or_invalid_never_5xx(client, queue, payload, topic):
    body = json.dumps(payload).encode()
    response = _post(client, "/webhooks/shopify/", body, shopify_headers(body, topic))
    assert response.status_code == 200
    stored = Delivery.objects.order_by("-pk").first()
    assert bytes(stored.body) == body
    expected = Delivery.Status.RECEIVED if isinstance(payload, dict) else Delivery.Status.INVALID
    assert stored.status == expected


@pytest.mark.parametrize(
    "body",
    [
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,  # deep nesting
        b'{"n": ' + b"9" * 10_000 + b"}",  # integer beyond Python's default digit limit
        b'{"s": "' + b"x" * (5 * 1024 * 1024 - 20) + b'"}',  # a string near the 5 MiB limit
        '{"ü": "ünïcödé ✓ 🕯"}'.encode(),
        b'{"a": "\\ud800"}',  # lone surrogate escape
    ],
    ids=["deep-nesting", "huge-integer", "5mib-string", "unicode", "lone-surrogate"],
)
def test_signed_pathological_bodies_answer_200(client, queue, body):
    response = _post(
        client, "/webhooks/shopify/", body, shopify_headers(body, "test/topic", secret=SECRET)
    )
    assert response.status_code == 200
    assert Delivery.objects.count() == 1
