"""Bodies without a Content-Length (chunked) get 411 with the reason, not a misleading 401."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection
from django.test.client import FakePayload

from automation.models import Delivery
from tests.support.signing import STRIPE_SECRET, shopify_headers, stripe_header

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
BODY = json.dumps({"id": 820982911946154508, "email": "kim@example.org"}).encode()


def _post_without_length(client, path: str, body: bytes, **headers: str):
    """What a WSGI server hands Django for a chunked body: the stream, no CONTENT_LENGTH."""
    return client.generic(
        "POST",
        path,
        b"",  # no data: the test client sets no CONTENT_LENGTH
        content_type="application/json",
        **headers,
        **{"wsgi.input": FakePayload(body)},
    )


def _assert_nothing_stored_or_enqueued(queue) -> None:
    assert Delivery.objects.count() == 0
    assert queue.count == 0


def test_a_chunked_shopify_delivery_is_answered_411(client, queue):
    # Given a correctly signed Shopify delivery sent with Transfer-Encoding: chunked
    headers = shopify_headers(BODY, "orders/create")
    response = _post_without_length(
        client, "/webhooks/shopify/", BODY, HTTP_TRANSFER_ENCODING="chunked", **headers
    )
    # Then the answer says what is wrong (not "invalid signature"), and nothing happened
    assert response.status_code == 411
    assert "Content-Length" in response.json()["error"]
    _assert_nothing_stored_or_enqueued(queue)


def test_a_chunked_stripe_delivery_is_answered_411(client, queue):
    body = json.dumps({"id": "evt_1", "type": "checkout.session.expired"}).encode()
    response = _post_without_length(
        client,
        "/webhooks/stripe/",
        body,
        HTTP_TRANSFER_ENCODING="chunked",
        HTTP_STRIPE_SIGNATURE=stripe_header(body, [STRIPE_SECRET]),
    )
    assert response.status_code == 411
    assert "Content-Length" in response.json()["error"]
    _assert_nothing_stored_or_enqueued(queue)


def test_transfer_encoding_with_a_content_length_is_refused_too(client, queue):
    # RFC 9112 section 6.1: Transfer-Encoding overrides Content-Length; we read neither
    response = client.post(
        "/webhooks/shopify/",
        data=BODY,
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
        **shopify_headers(BODY, "orders/create"),
    )
    assert response.status_code == 411
    assert "Content-Length" in response.json()["error"]
    _assert_nothing_stored_or_enqueued(queue)


def test_without_transfer_encoding_a_missing_length_means_an_empty_body(client, queue):
    # RFC 9112 section 6.3: no Content-Length, no Transfer-Encoding: the body is empty,
    # and an empty body signed as such is stored `invalid` (tests/intake/test_shopify_intake.py)
    response = _post_without_length(
        client, "/webhooks/shopify/", BODY, **shopify_headers(BODY, "orders/create")
    )
    assert response.status_code == 401
    assert response.json() == {"error": "invalid signature"}  # the signature was over BODY
    _assert_nothing_stored_or_enqueued(queue)


def test_a_body_with_its_length_still_passes(client, queue):
    response = client.post(
        "/webhooks/shopify/",
        data=BODY,
        content_type="application/json",
        **shopify_headers(BODY, "orders/create"),
    )
    assert response.status_code == 200
    assert Delivery.objects.count() == 1


# --- through a real gunicorn ----------------------------------------------------------------


def _database_url() -> str:
    """The test database as a URL, so gunicorn's worker writes where the test reads."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def gunicorn_server(queue):
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": _database_url()}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    if connection.vendor == "postgresql" and connection.settings_dict.get("PASSWORD"):
        env["PGPASSWORD"] = connection.settings_dict["PASSWORD"]
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "elbkerzen.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(process.stderr.read().decode()) from None
                time.sleep(0.1)
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        process.stderr.close()


def _post(port: int, body, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/webhooks/shopify/", body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _http_headers(meta: dict[str, str]) -> dict[str, str]:
    return {key[5:].replace("_", "-"): value for key, value in meta.items()}


def test_gunicorn_passes_a_chunked_body_without_a_length_and_we_answer_411(gunicorn_server):
    # Given a signed delivery sent in two chunks straight to gunicorn (no proxy)
    headers = {"Content-Type": "application/json"}
    headers |= _http_headers(shopify_headers(BODY, "orders/create"))
    halves = [BODY[:10], BODY[10:]]  # an iterable body: http.client sends it chunked
    status, answer = _post(gunicorn_server, iter(halves), headers)
    # Then the signature is not checked against an empty body: 411, nothing stored
    assert status == 411, answer
    assert b"Content-Length" in answer
    assert Delivery.objects.count() == 0

    # And the same bytes with a length (as the buffering proxy forwards them) are accepted
    headers |= _http_headers(shopify_headers(BODY, "orders/create"))
    status, answer = _post(gunicorn_server, BODY, headers)
    assert status == 200, answer
    assert Delivery.objects.count() == 1
