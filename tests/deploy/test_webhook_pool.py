"""Webhooks keep their own gunicorn pool while the admin's pickers wait on a slow Shopify.

The documented stack: nginx with the committed deploy/nginx/default.conf.template in front of
two gunicorn pools, each the Dockerfile's command (4 sync workers). Shopify's stand-in answers
only after SHOPIFY_DELAY seconds, longer than the pickers' VENDOR_INTERACTIVE_TIMEOUT. Twice as
many picker searches as the admin pool has workers keep every admin worker waiting; signed
webhooks and the health probe sent meanwhile must be answered within LIMIT_S and stored. With
both upstreams pointed at one pool (no separate webhook pool) the same load must make most
webhooks late, which shows the measurement can see the difference.

Skipped where nginx is not installed, except under CI=true, where it fails instead.
"""

import http.client
import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from automation.intake.sources.shopify import sign
from automation.models import Delivery
from bench.servers import GUNICORN_WORKERS, Processes, Server
from bench.slow_clients import LIMIT_S
from tests.support.signing import SECRET, SHOP
from tests.support.stack import start_pool, start_proxy

PICKER_TIMEOUT = 1.0  # VENDOR_INTERACTIVE_TIMEOUT of the admin pool
SHOPIFY_DELAY = PICKER_TIMEOUT + 2.0  # the stand-in answers after the picker gave up
PICKERS = 2 * GUNICORN_WORKERS  # concurrent searches: every admin worker busy, as many queued
SETTLE = 0.5  # the first searches hold the admin workers
WEBHOOKS = 10
GAP = 0.25  # seconds between two webhooks
PICKER_URL = "/admin/setup/pick/products/?q=Nordlicht"
TOPIC = "inventory_levels/update"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.servers,
    pytest.mark.usefixtures("nginx_installed"),
]


@pytest.fixture
def slow_shopify() -> Iterator[tuple[str, list[float]]]:
    """Shopify's Admin API answering every query after SHOPIFY_DELAY seconds."""
    seen: list[float] = []
    server = HTTPServer(host="127.0.0.1", threaded=True)

    def answer_late(request: Request) -> Response:
        seen.append(time.monotonic())
        time.sleep(SHOPIFY_DELAY)
        return Response(json.dumps({"data": {"products": {"nodes": []}}}), 200)

    server.expect_request(
        f"/admin/api/{settings.SHOPIFY_API_VERSION}/graphql.json", method="POST"
    ).respond_with_handler(answer_late)
    server.start()
    try:
        yield server.url_for("").rstrip("/"), seen
    finally:
        server.clear()
        server.stop()


def pool(
    processes: Processes, tmp_path: Path, name: str, shopify_url: str, webhooks: bool = False
) -> Server:
    return start_pool(
        processes,
        tmp_path,
        name=name,
        WEBHOOK_POOL="true" if webhooks else "false",
        SHOPIFY_ADMIN_URL=shopify_url,
        SHOPIFY_ADMIN_TOKEN="shpat_slow_standin",  # noqa: S106 (the stand-in's)
        VENDOR_INTERACTIVE_TIMEOUT=str(PICKER_TIMEOUT),
        LANGUAGE_CODE="de",
    )


def merchant_cookie() -> str:
    """A signed-in staff session in the test database, as the browser's cookie."""
    user = User.objects.create_superuser("merchant", "merchant@example.org", "x")
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


@dataclass
class Load:
    pickers: list[tuple[int, float, dict]] = field(default_factory=list)  # status, s, body
    webhooks: list[tuple[int, float]] = field(default_factory=list)
    probes: list[tuple[int, float]] = field(default_factory=list)
    webhook_ids: list[str] = field(default_factory=list)


def timed(port: int, method: str, path: str, body: bytes | None = None, **headers: str):
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    return response.status, time.monotonic() - started, data


def webhook(port: int, n: int, tag: str) -> tuple[int, float, str]:
    """One signed stock-level webhook as Shopify sends it."""
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    item = 271878346597000000 + n
    body = json.dumps(
        {"inventory_item_id": item, "location_id": 24826418, "available": 3, "updated_at": now}
    ).encode()
    webhook_id = f"{tag}-{n}-{uuid.uuid4()}"
    status, seconds, _ = timed(
        port,
        "POST",
        "/webhooks/shopify/",
        body,
        **{
            "Content-Type": "application/json",
            "X-Shopify-Topic": TOPIC,
            "X-Shopify-Hmac-Sha256": sign(body, SECRET),
            "X-Shopify-Shop-Domain": SHOP,
            "X-Shopify-Webhook-Id": webhook_id,
            "X-Shopify-Event-Id": str(uuid.uuid4()),
            "X-Shopify-Triggered-At": now,
            "X-Shopify-API-Version": settings.SHOPIFY_API_VERSION,
        },
    )
    return status, seconds, webhook_id


def merchant_searches_while_webhooks_arrive(port: int, cookie: str, tag: str) -> Load:
    """PICKERS searches for "Nordlicht" in a loop; meanwhile WEBHOOKS webhooks and probes."""
    load = Load()
    stop = threading.Event()

    def search() -> None:
        while not stop.is_set():
            status, seconds, data = timed(port, "GET", PICKER_URL, Cookie=cookie)
            load.pickers.append((status, seconds, json.loads(data) if status == 200 else {}))

    threads = [threading.Thread(target=search, daemon=True) for _ in range(PICKERS)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(SETTLE)
        for n in range(WEBHOOKS):
            status, seconds, webhook_id = webhook(port, n, tag)
            load.webhooks.append((status, seconds))
            load.webhook_ids.append(webhook_id)
            status, seconds, _ = timed(port, "GET", "/healthz")
            load.probes.append((status, seconds))
            time.sleep(GAP)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    return load


def test_webhooks_are_answered_within_a_second_while_every_admin_worker_waits_on_shopify(
    processes, tmp_path, slow_shopify
):
    # Given the documented stack: the admin pool and the webhook pool behind the committed nginx
    shopify_url, shopify_saw = slow_shopify
    admin = pool(processes, tmp_path, "admin-pool", shopify_url)
    webhooks = pool(processes, tmp_path, "webhook-pool", shopify_url, webhooks=True)
    proxy = start_proxy(processes, admin.port, tmp_path, webhooks_port=webhooks.port)
    cookie = merchant_cookie()

    # When the merchant types "Nordlicht" into the picker, again and again, while Shopify is slow
    load = merchant_searches_while_webhooks_arrive(proxy.port, cookie, "pool")

    # Then every webhook and health probe is answered within a second, and every delivery stored
    latencies = [seconds for _, seconds in load.webhooks]
    assert [status for status, _ in load.webhooks] == [200] * WEBHOOKS
    assert max(latencies) < LIMIT_S, latencies
    assert max(seconds for _, seconds in load.probes) < LIMIT_S, load.probes
    stored = Delivery.objects.filter(webhook_id__in=load.webhook_ids)
    assert stored.count() == WEBHOOKS
    assert set(stored.values_list("status", flat=True)) == {Delivery.Status.RECEIVED}
    # while the pickers really held the admin workers: each search reached Shopify and gave
    # up after the page deadline with a German sentence, never a 500
    assert len(shopify_saw) >= GUNICORN_WORKERS
    assert len(load.pickers) >= PICKERS
    assert {status for status, _, _ in load.pickers} == {200}
    assert min(seconds for _, seconds, _ in load.pickers) >= PICKER_TIMEOUT
    hints = {body["hint"] for _, _, body in load.pickers}
    assert hints == {
        "Shopify hat nicht innerhalb von 1,0 Sekunden geantwortet: bitte in einer Minute "
        "erneut versuchen."
    }
    assert all(body["results"] == [] for _, _, body in load.pickers)


def test_with_one_pool_for_both_the_same_searches_make_the_webhooks_late(
    processes, tmp_path, slow_shopify
):
    """One pool for everything (nginx sends webhooks and admin alike to it): the test sees it."""
    shopify_url, _ = slow_shopify
    shared = pool(processes, tmp_path, "shared-pool", shopify_url)
    proxy = start_proxy(processes, shared.port, tmp_path)
    cookie = merchant_cookie()

    load = merchant_searches_while_webhooks_arrive(proxy.port, cookie, "shared")

    late = [seconds for _, seconds in load.webhooks if seconds >= LIMIT_S]
    assert len(late) > WEBHOOKS // 2, load.webhooks
