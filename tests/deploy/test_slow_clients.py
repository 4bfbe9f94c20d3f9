"""Slow clients cannot starve the webhook intake of the documented stack.

The short version of `bench/slow_clients.py`: the Dockerfile's gunicorn (4 sync workers) on the
test database, behind nginx running the committed deploy/nginx/default.conf.template exactly as
docker-compose.yml's proxy runs it. SLOW connections send their headers and then one body byte
every 2 s while signed deliveries arrive at 10/s; every one must be answered 200 within 1 s.
The same attack straight against gunicorn (no proxy in front) must fail, which shows
the measurement can see the difference.

Skipped where nginx is not installed, except under CI=true (.ci/run installs it), where a
missing nginx fails the test instead.
"""

import asyncio
import http.client
from pathlib import Path

import pytest

from bench.servers import Processes, Server
from bench.slow_clients import LIMIT_S, attack, delivery
from tests.support.signing import SECRET, SHOP
from tests.support.stack import start_pool, start_proxy

SLOW = 20  # five times the workers
RATE = 10.0
SECONDS = 4.0
SETTLE = 1.5  # the slow clients have connected and sent their headers

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.servers,
    pytest.mark.usefixtures("nginx_installed"),
]


@pytest.fixture
def gunicorn(processes: Processes, tmp_path: Path) -> Server:
    """The Dockerfile's gunicorn command in production mode, on the test database and Redis DB."""
    return start_pool(processes, tmp_path)


def test_behind_the_committed_nginx_config_every_webhook_is_answered_within_a_second(
    processes, gunicorn, tmp_path
):
    proxy = start_proxy(processes, gunicorn.port, tmp_path)

    result = asyncio.run(
        attack(proxy.port, "nginx → gunicorn", SLOW, RATE, SECONDS, SECRET, SHOP, SETTLE)
    )

    assert result.sent == int(RATE * SECONDS)
    assert result.slow_held_at_end == SLOW, "the proxy cut slow clients: they held nothing"
    assert result.statuses == {"200": result.sent}, result.statuses
    assert result.passed, f"answered within {LIMIT_S} s: {result.within_limit}/{result.sent}"

    # A delivery sent chunked reaches gunicorn with its length: nginx buffers the body and
    # sends Content-Length upstream, so behind the proxy it arrives with a length.
    head, body = delivery(proxy.port, 0, "chunked", SECRET, SHOP).split(b"\r\n\r\n", 1)
    headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:])
    del headers["Content-Length"]
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request("POST", "/webhooks/shopify/", body=iter([body]), headers=headers)  # chunked
    assert conn.getresponse().status == 200
    conn.close()


def test_straight_to_gunicorn_the_same_slow_clients_starve_the_webhooks(gunicorn):
    """gunicorn published without the proxy: the measurement must see the failure."""
    result = asyncio.run(
        attack(gunicorn.port, "gunicorn directly", SLOW, RATE, SECONDS, SECRET, SHOP, SETTLE, 2.0)
    )

    assert not result.passed
    assert result.within_limit < result.sent // 2
