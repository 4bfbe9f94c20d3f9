"""Health, the cron registration and the `send_test_webhook` command."""

import json
import socket

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError

from automation.models import Delivery

pytestmark = pytest.mark.django_db(transaction=True)


def test_healthz_is_200_when_every_part_answers(client, alive_service):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["failing"] == []
    assert (body["database"], body["redis"], body["scheduler"]) == ("ok", "ok", "ok")
    assert body["workers"] == "ok (1 alive)"
    assert body["reconciliation"].startswith("ok (0.0 h ago")


def test_healthz_is_503_naming_the_database_when_it_fails(client, alive_service, monkeypatch):
    from automation.ui import health

    class Broken:
        def cursor(self):
            raise OperationalError("no database")

    monkeypatch.setattr(health, "connection", Broken())
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "error: OperationalError"
    assert response.json()["failing"] == ["database"]


def test_healthz_names_missing_workers_scheduler_and_reconciliation(client, queue):
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["workers", "scheduler", "reconciliation"]
    assert body["workers"] == "error: no RQ worker alive"
    assert body["reconciliation"] == "error: never ran"


def test_healthz_fails_when_the_last_reconciliation_is_too_old(client, alive_service):
    from datetime import timedelta

    from django.utils import timezone

    from automation.models import ReconcileRun

    ReconcileRun.objects.update(finished_at=timezone.now() - timedelta(hours=30))
    body = client.get("/healthz").json()
    assert body["failing"] == ["reconciliation"]
    assert body["reconciliation"] == "error: last run 30 h ago"


def test_cron_config_registers_the_sweeper_every_minute(redis):
    from django_rq.cron import DjangoCronScheduler

    scheduler = DjangoCronScheduler()
    scheduler.load_config_from_file("automation.cron")
    jobs = {job.func_name: job for job in scheduler.get_jobs()}
    assert jobs["automation.jobs.sweep_deliveries"].interval == 60


def test_rq_dashboard_is_for_staff_only(client, admin_client):
    visitor = client.get("/admin/rq/")
    assert visitor.status_code == 302
    assert visitor["Location"].startswith("/admin/login/")
    dashboard = admin_client.get("/admin/rq/")
    assert dashboard.status_code == 200
    assert b"/admin/rq/queues/0/" in dashboard.content


def test_send_test_webhook_signs_and_posts_a_bundled_sample(live_server, redis, capsys):
    call_command(
        "send_test_webhook", "inventory_levels/update", url=f"{live_server.url}/webhooks/shopify/"
    )
    assert capsys.readouterr().out.startswith("200 OK")
    delivery = Delivery.objects.get()
    assert delivery.topic == "inventory_levels/update"
    assert json.loads(bytes(delivery.body))["inventory_item_id"] == 808950810


@pytest.mark.parametrize(
    "topic", ["inventory_levels/update", "checkouts/create", "checkouts/update", "orders/create"]
)
def test_every_topic_has_a_bundled_sample(topic):
    from automation.management.commands.send_test_webhook import sample_path

    assert isinstance(json.loads(sample_path(topic).read_text()), dict)


def test_send_test_webhook_with_a_wrong_secret_reports_the_401(live_server, redis):
    with pytest.raises(CommandError, match="401"):
        call_command(
            "send_test_webhook",
            "orders/create",
            url=f"{live_server.url}/webhooks/shopify/",
            secret="wrong",
        )
    assert not Delivery.objects.exists()


def test_send_test_webhook_explains_an_unreachable_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(CommandError, match="could not reach"):
        call_command("send_test_webhook", "orders/create", url=f"http://127.0.0.1:{port}/")


def test_send_test_webhook_without_sample_names_the_missing_file():
    with pytest.raises(CommandError, match="does not exist"):
        call_command("send_test_webhook", "no/such_topic")
