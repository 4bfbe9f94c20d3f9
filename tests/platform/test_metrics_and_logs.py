"""Metrics for Prometheus, and logs that name the delivery and mask addresses."""

import json
import logging

import pytest

from automation.platform.log_context import DeliveryIdFilter, RedactEmailsFilter, redact_emails
from tests.support.signing import post_shopify
from tests.support.watching import watch

pytestmark = pytest.mark.django_db(transaction=True)


def test_metrics_show_deliveries_latency_jobs_reaction_queue_and_reminders(client, run_worker):
    watch(808950810, "555", label="W", customer_id="1234567890")
    body = {
        "inventory_item_id": 808950810,
        "location_id": 1,
        "available": 0,
        "updated_at": "2026-11-26T16:10:00+01:00",
    }
    post_shopify(client, body, topic="inventory_levels/update")
    post_shopify(client, {"x": 1}, topic="collections/update")
    run_worker()

    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert (
        'elbkerzen_deliveries{source="shopify",status="done",topic="inventory_levels/update"} 1.0'
        in text
    )
    assert (
        # collections/update has no handler: its topic label is bounded to `other`
        'elbkerzen_deliveries{source="shopify",status="ignored",topic="other"} 1.0' in text
    )
    assert "elbkerzen_dead_letters 0.0" in text
    assert 'elbkerzen_intake_seconds_count{source="shopify"}' in text
    assert 'elbkerzen_job_seconds_count{job="process_delivery"}' in text
    assert "elbkerzen_reaction_seconds_count" in text
    assert 'elbkerzen_queue_jobs{queue="default",state="queued"} 0.0' in text
    assert "elbkerzen_reminder_decisions" in text


def test_metrics_are_not_public_by_accident(client, settings, queue):
    def refused(status: int, **request) -> None:
        response = client.get("/metrics", **request)
        assert response.status_code == status
        assert b"elbkerzen_" not in response.content  # not one metric

    refused(403, REMOTE_ADDR="203.0.113.9")
    settings.METRICS_TOKEN = "scrape-secret"
    refused(401)
    refused(401, HTTP_AUTHORIZATION="Bearer wrong")
    ok = client.get(
        "/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer scrape-secret"
    )
    assert ok.status_code == 200
    assert b"elbkerzen_dead_letters" in ok.content


def test_every_log_line_of_a_delivery_names_it(client, run_worker, caplog):
    caplog.set_level(logging.DEBUG)
    caplog.handler.addFilter(DeliveryIdFilter())
    post_shopify(client, {"x": 1}, topic="collections/update")
    post_shopify(client, {"x": 1}, topic="collections/update")
    from automation import jobs
    from automation.models import Delivery

    first = Delivery.objects.order_by("pk").first()
    jobs.process_delivery(first.pk)
    jobs.process_delivery(first.pk)  # "not claimable" is logged inside its context too
    lines = [r for r in caplog.records if r.name.startswith("automation.intake.inbox")]
    assert lines
    assert {r.delivery_id for r in lines} == {first.pk}


def test_addresses_are_masked_whatever_logs_them(caplog):
    record = logging.LogRecord(
        "x", logging.INFO, __file__, 1, "mail to %s failed", ("kundin@example.com",), None
    )
    RedactEmailsFilter().filter(record)
    assert record.getMessage() == "mail to k***@example.com failed"
    assert redact_emails("a.b+c@shop.example.de and x@y.io") == "a***@shop.example.de and x***@y.io"


def test_json_log_lines_in_production_format():
    from django.conf import settings as django_settings
    from pythonjsonlogger.json import JsonFormatter

    spec = django_settings.LOGGING["formatters"]["json"]
    formatter = JsonFormatter(spec["format"], rename_fields=spec["rename_fields"])
    record = logging.LogRecord(
        "automation.intake.inbox", logging.INFO, __file__, 1, "done", None, None
    )
    DeliveryIdFilter().filter(record)
    line = json.loads(formatter.format(record))
    assert line["level"] == "INFO"
    assert line["logger"] == "automation.intake.inbox"
    assert line["delivery_id"] == "-"
    assert line["message"] == "done"
