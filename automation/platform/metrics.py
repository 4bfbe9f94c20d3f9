"""Prometheus metrics: latencies observed where they happen, states read at scrape time.

Run with PROMETHEUS_MULTIPROC_DIR set (as `make run`, the Dockerfile and docker-compose do)
so gunicorn's and the RQ workers' observations add up in one scrape.
"""

import os
from collections import Counter
from collections.abc import Container

from django.db.models import Count
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from redis.exceptions import RedisError

from automation.platform import metrics_process

# Before the first metric exists: each process's files are named by host and pid, so web,
# worker and cron containers can share one PROMETHEUS_MULTIPROC_DIR (metrics_process's why).
metrics_process.name_files_by_host_and_pid()

INTAKE_SECONDS = Histogram(
    "elbkerzen_intake_seconds",
    "Time to verify, store and enqueue one webhook delivery.",
    ["source"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
JOB_SECONDS = Histogram(
    "elbkerzen_job_seconds",
    "Duration of RQ jobs by entry point.",
    ["job"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0),
)
REACTION_SECONDS = Histogram(
    "elbkerzen_reaction_seconds",
    "From the sender's trigger time (X-Shopify-Triggered-At) to our Ads call.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0),
)


OTHER_TOPIC = "other"


def topic_label(source: str, topic: str, known_topics: Container[tuple[str, str]]) -> str:
    """The topic itself when we handle it, else `other`.

    The topic comes from a header nobody signs (X-Shopify-Topic): each new value would be a new
    time series, so a sender replaying one body under random topics could grow the scrape
    without bound. Prometheus advises against labels with unbounded values
    (https://prometheus.io/docs/practices/naming/#labels).
    """
    return topic if (source, topic) in known_topics else OTHER_TOPIC


class StateCollector:
    """Counts from the database and queue depths from Redis, read when Prometheus scrapes."""

    def __init__(self, known_topics: Container[tuple[str, str]]) -> None:
        self.known_topics = known_topics

    def collect(self):
        from automation.models import Delivery, ReminderDecision
        from automation.platform.queues import default_queue

        deliveries = GaugeMetricFamily(
            "elbkerzen_deliveries",
            "Stored deliveries by source, topic (handled topics, else other) and status.",
            labels=["source", "topic", "status"],
        )
        rows = Delivery.objects.values_list("source", "topic", "status").annotate(n=Count("pk"))
        counts: Counter[tuple[str, str, str]] = Counter()
        for source, topic, status, count in rows:
            counts[source, topic_label(source, topic, self.known_topics), status] += count
        dead = 0
        for (source, topic, status), count in sorted(counts.items()):
            deliveries.add_metric([source, topic, status], count)
            dead += count if status == Delivery.Status.DEAD else 0
        yield deliveries
        yield GaugeMetricFamily(
            "elbkerzen_dead_letters", "Deliveries given up, waiting for a replay.", value=dead
        )

        reminders = GaugeMetricFamily(
            "elbkerzen_reminder_decisions",
            "Reminder decisions by arm and whether a mail was sent.",
            labels=["arm", "sent"],
        )
        decisions = ReminderDecision.objects.values("arm").annotate(
            total=Count("pk"), sent=Count("sent_at")
        )
        for row in decisions:
            reminders.add_metric([row["arm"], "yes"], row["sent"])
            reminders.add_metric([row["arm"], "no"], row["total"] - row["sent"])
        yield reminders

        depth = GaugeMetricFamily(
            "elbkerzen_queue_jobs", "RQ jobs by registry.", labels=["queue", "state"]
        )
        queue = default_queue()
        try:
            depth.add_metric([queue.name, "queued"], queue.count)
            depth.add_metric([queue.name, "scheduled"], queue.scheduled_job_registry.count)
            depth.add_metric([queue.name, "started"], queue.started_job_registry.count)
            depth.add_metric([queue.name, "failed"], queue.failed_job_registry.count)
        except RedisError:
            pass  # /healthz reports Redis; the scrape still returns the rest
        yield depth


def render(known_topics: Container[tuple[str, str]]) -> tuple[bytes, str]:
    """The exposition text: this process's (or all processes') histograms plus the states.

    `known_topics` holds the (source, topic) pairs that keep their own label value.
    """
    states = CollectorRegistry()
    states.register(StateCollector(known_topics))
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        observed = CollectorRegistry()
        multiprocess.MultiProcessCollector(observed)
    else:
        observed = REGISTRY
    return generate_latest(observed) + generate_latest(states), CONTENT_TYPE_LATEST
