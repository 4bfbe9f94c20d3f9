"""A real Redis server stopped and restarted under the intake: nothing accepted is lost."""

import shutil
import socket
import subprocess
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from redis import Redis
from rq import SimpleWorker

from automation import jobs
from automation.models import Delivery
from automation.queues import default_queue
from tests.signing import post_shopify

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server"),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A throwaway redis-server on its own port that the test can stop and start."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
        )
        client = Redis(port=self.port)
        for _ in range(100):
            try:
                client.ping()
                return
            except Exception:
                time.sleep(0.05)
        raise RuntimeError("private redis-server did not start")

    def stop(self) -> None:
        if self.process:
            self.process.kill()
            self.process.wait()
            self.process = None


@pytest.fixture
def private_redis(settings):
    server = PrivateRedis()
    server.start()
    settings.REDIS_URL = f"redis://127.0.0.1:{server.port}/0"
    yield server
    server.stop()


def test_deliveries_survive_a_redis_stop_and_restart(client, private_redis, handler):
    assert post_shopify(client, {"n": 1}).status_code == 200  # enqueued, then lost with Redis
    private_redis.stop()
    assert post_shopify(client, {"n": 2}).status_code == 200  # Redis down: row kept
    assert Delivery.objects.filter(status=Delivery.Status.RECEIVED).count() == 2

    private_redis.start()  # comes back empty: no persistence
    Delivery.objects.update(received_at=timezone.now() - timedelta(seconds=61))
    assert jobs.sweep_deliveries() == 2
    queue = default_queue()
    SimpleWorker([queue], connection=queue.connection).work(burst=True)

    assert set(Delivery.objects.values_list("status", flat=True)) == {Delivery.Status.DONE}
    assert sorted(handler.calls) == sorted(Delivery.objects.values_list("pk", flat=True))


def test_healthz_reports_redis_down_as_503(client, private_redis):
    assert client.get("/healthz").json()["redis"] == "ok"
    private_redis.stop()
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["redis"].startswith("error")
    assert response.json()["database"] == "ok"
    assert "redis" in response.json()["failing"]
