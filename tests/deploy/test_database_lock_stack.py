"""A locked deliveries table costs Shopify a fast 503 on the documented stack, and nothing is lost.

The Dockerfile's gunicorn (4 sync workers) on the test database, behind nginx running the
committed deploy/nginx/default.conf.template. A second connection holds the deliveries table
in ACCESS EXCLUSIVE mode, as a migration or a long job would, while a burst of signed webhooks
arrives at once. The intake's short lock limit must answer every one 503 with a Retry-After well
within Shopify's 5 s, while the lock is still held, and store nothing; once the lock is gone the
same deliveries (same webhook ids, same bodies) are each accepted and stored once. Without the
limit every worker would wait for the lock and the burst would queue behind them.
Shopify resends a failed delivery with its original payload, up to 8 times over 4 hours
(https://shopify.dev/changelog/updates-to-webhook-retry-mechanism).

Skipped where nginx is not installed, except under CI=true, where it fails instead.
"""

import http.client
import json
import threading
import time
from dataclasses import dataclass

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from automation.intake.sources.shopify import sign
from automation.intake.views import STORAGE_RETRY_AFTER
from automation.models import Delivery
from bench.servers import GUNICORN_WORKERS
from tests.support.signing import SECRET, SHOP
from tests.support.stack import start_pool, start_proxy

WEBHOOKS = 20  # five times the workers: most wait in gunicorn's backlog behind the first four
TOPIC = "inventory_levels/update"
# Each worker answers one webhook per lock limit, so the last of the burst waits for
# WEBHOOKS / GUNICORN_WORKERS of them; the margin is for a loaded 2-CPU machine.
WAVES = -(-WEBHOOKS // GUNICORN_WORKERS)
ANSWER_LIMIT_S = WAVES * settings.INTAKE_DB_LOCK_TIMEOUT_MS / 1000 + 1.5
SHOPIFY_LIMIT_S = 5.0  # Shopify counts a delivery as failed when the answer takes longer
HOLD_AT_MOST_S = 3 * SHOPIFY_LIMIT_S  # without limits the lock ends here, not the test's wait

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.servers,
    pytest.mark.usefixtures("nginx_installed"),
    pytest.mark.postgres(reason="a second connection holding a table lock (LOCK TABLE)"),
]


@dataclass(frozen=True)
class Webhook:
    """One delivery exactly as Shopify sends it, and sends it again on a retry."""

    webhook_id: str
    body: bytes

    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "X-Shopify-Topic": TOPIC,
            "X-Shopify-Hmac-Sha256": sign(self.body, SECRET),
            "X-Shopify-Shop-Domain": SHOP,
            "X-Shopify-Webhook-Id": self.webhook_id,
            "X-Shopify-Event-Id": f"event-{self.webhook_id}",
            "X-Shopify-Triggered-At": "2026-11-26T15:10:00.000000Z",
            "X-Shopify-API-Version": settings.SHOPIFY_API_VERSION,
        }


def stock_changes() -> list[Webhook]:
    return [
        Webhook(
            f"locked-stack-{n}",
            json.dumps(
                {
                    "inventory_item_id": 271878346599000000 + n,
                    "location_id": 24826418,
                    "available": n % 3,
                    "updated_at": "2026-11-26T15:10:00.000000+00:00",
                }
            ).encode(),
        )
        for n in range(WEBHOOKS)
    ]


@dataclass
class Answer:
    status: int
    retry_after: str | None
    body: bytes
    seconds: float
    done_at: float  # time.monotonic() when the answer was read


def post(port: int, webhook: Webhook) -> Answer:
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/webhooks/shopify/", body=webhook.body, headers=webhook.headers())
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    done = time.monotonic()
    return Answer(response.status, response.getheader("Retry-After"), body, done - started, done)


def burst(port: int, webhooks: list[Webhook]) -> list[Answer]:
    """Every webhook on its own connection, all sent at the same moment, as Shopify may."""
    answers: list[Answer | None] = [None] * len(webhooks)
    start = threading.Barrier(len(webhooks))

    def send(n: int) -> None:
        start.wait()
        answers[n] = post(port, webhooks[n])

    threads = [threading.Thread(target=send, args=(n,)) for n in range(len(webhooks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert all(answer is not None for answer in answers), "a webhook got no answer"
    return answers


class TableLock:
    """A second connection's ACCESS EXCLUSIVE lock on a table, held in an open transaction.

    It ends on release(), or after `at_most` seconds so an intake without limits fails the
    test with its late answers instead of waiting forever.
    """

    def __init__(self, table: str, at_most: float) -> None:
        db = connection.settings_dict
        self.conn = psycopg.connect(
            host=db["HOST"] or "127.0.0.1",
            port=db["PORT"] or 5432,
            user=db["USER"],
            dbname=db["NAME"],
            connect_timeout=5,
        )
        self.table = table
        self.at_most = at_most
        self.locked = threading.Event()
        self.stop = threading.Event()
        self.released_at: float | None = None
        self.thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        try:
            self.conn.execute(f'LOCK TABLE "{self.table}" IN ACCESS EXCLUSIVE MODE')
            self.locked.set()
            self.stop.wait(self.at_most)
        finally:
            self.conn.rollback()
            self.released_at = time.monotonic()
            self.conn.close()

    def __enter__(self) -> "TableLock":
        self.thread.start()
        assert self.locked.wait(10), "the second connection did not get the table lock"
        return self

    def release(self) -> None:
        self.stop.set()
        self.thread.join(10)

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_a_burst_during_a_table_lock_gets_fast_503s_and_every_retry_is_stored_once(
    processes, tmp_path
):
    # Given the documented stack: the webhook pool on the test database behind the committed
    # nginx, its connections carrying the intake's limits
    gunicorn = start_pool(processes, tmp_path, WEBHOOK_POOL="true")
    proxy = start_proxy(processes, gunicorn.port, tmp_path)
    webhooks = stock_changes()

    # When a second connection holds the deliveries table and twenty stock changes arrive at once
    with TableLock(Delivery._meta.db_table, HOLD_AT_MOST_S) as lock:
        refused = burst(proxy.port, webhooks)
        lock.release()

    # Then every one is answered 503 by the intake with a Retry-After, well within Shopify's
    # 5 s and while the table was still locked
    seconds = sorted(round(answer.seconds, 2) for answer in refused)
    print(f"answer times while locked (s): {seconds}")  # shown with -s
    assert [answer.status for answer in refused] == [503] * WEBHOOKS, seconds
    assert {answer.retry_after for answer in refused} == {str(STORAGE_RETRY_AFTER)}
    assert {json.loads(answer.body)["error"] for answer in refused} == {
        "storage unavailable, retry later"
    }
    assert max(seconds) < ANSWER_LIMIT_S < SHOPIFY_LIMIT_S, seconds
    assert max(answer.done_at for answer in refused) < lock.released_at
    # because each waited for the lock and gave up after the intake's lock limit
    log = (tmp_path / "gunicorn.log").read_text()
    gave_up = [line for line in log.splitlines() if "answered 503" in line]
    assert len(gave_up) == WEBHOOKS, log[-2000:]
    assert all("lock timeout" in line for line in gave_up), gave_up
    assert min(seconds) >= settings.INTAKE_DB_LOCK_TIMEOUT_MS / 1000
    # and nothing was stored
    assert not Delivery.objects.exists()

    # When Shopify sends the same deliveries again after the lock has ended
    retried = burst(proxy.port, webhooks)

    # Then every one is accepted and stored exactly once: nothing lost
    assert [answer.status for answer in retried] == [200] * WEBHOOKS
    stored = {
        row.webhook_id: (bytes(row.body), row.status, row.duplicate_count)
        for row in Delivery.objects.all()
    }
    assert Delivery.objects.count() == WEBHOOKS
    assert stored == {
        webhook.webhook_id: (webhook.body, Delivery.Status.RECEIVED, 0) for webhook in webhooks
    }
