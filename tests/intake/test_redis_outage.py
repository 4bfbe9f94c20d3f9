"""A real Redis server stopped and restarted under the intake: nothing accepted is lost."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rq import SimpleWorker

from automation import jobs
from automation.models import Delivery
from automation.platform.queues import default_queue
from tests.support.private_redis import needs_redis_server
from tests.support.signing import post_shopify

pytestmark = [pytest.mark.django_db(transaction=True), needs_redis_server]


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
