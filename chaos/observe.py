"""What the system did, read from its PostgreSQL database and its Redis (harness side only).

The harness process runs Django on the chaos database to set the shop up and to look; it never
processes anything itself. Redis is read with plain commands (LLEN, ZCARD, ZCOUNT) because
RQ's registry helpers clean up as they count, which would do the workers' job for them.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from redis import Redis

logger = logging.getLogger(__name__)


def setup_django(env: dict[str, str]) -> None:
    """Configure this process for the chaos database and Redis, then set Django up."""
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "elbkerzen.settings"
    import django

    django.setup()


@contextmanager
def db() -> Iterator[None]:
    """Use the ORM from any thread; the thread's connection is closed afterwards."""
    from django.db import connection

    try:
        yield
    finally:
        connection.close()


def evaluated(token: str) -> bool:
    """Whether the Shopify checkout's current version has a recorded decision."""
    from automation.models import CheckoutState, ReminderDecision

    with db():
        state = CheckoutState.objects.filter(source="shopify", token=token).first()
        if state is None:
            return False
        return ReminderDecision.objects.filter(
            checkout=state, checkout_version=state.updated_at
        ).exists()


@dataclass(frozen=True)
class Pending:
    """Work the system still has to do."""

    queued: int
    started: int
    scheduled: int
    unfinished: int
    promotion_open: int

    @property
    def idle(self) -> bool:
        return not (
            self.queued or self.started or self.scheduled or self.unfinished or self.promotion_open
        )

    def __str__(self) -> str:
        return (
            f"queued {self.queued}, started {self.started}, scheduled {self.scheduled}, "
            f"unfinished deliveries {self.unfinished}, promotion open {self.promotion_open}"
        )


def pending(redis: Redis) -> Pending:
    """Queue, running and scheduled jobs, unfinished deliveries, an unended promotion."""
    from automation.models import Delivery, Promotion

    queued = redis.llen("rq:queue:default")
    started = redis.zcard("rq:wip:default")
    scheduled = redis.zcard("rq:scheduled:default")
    with db():
        unfinished = Delivery.objects.filter(
            status__in=[
                Delivery.Status.RECEIVED,
                Delivery.Status.PROCESSING,
                Delivery.Status.FAILED,
            ]
        ).count()
        promotion_open = Promotion.objects.filter(ended_at__isnull=True).count()
    return Pending(queued, started, scheduled, unfinished, promotion_open)


def wait_until_idle(
    redis: Redis, timeout: float, *, settled_for: float = 2.0
) -> tuple[bool, float, Pending]:
    """Poll until nothing is pending for `settled_for` seconds; (idle, seconds waited, last)."""
    started = time.monotonic()
    idle_since: float | None = None
    state = pending(redis)
    while time.monotonic() - started < timeout:
        try:
            state = pending(redis)
        except Exception:  # Redis may be restarting; keep waiting
            idle_since = None
            time.sleep(0.5)
            continue
        if int(time.monotonic() - started) % 5 == 0:
            logger.info("waiting for the system: %s", state)
        if state.idle:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= settled_for:
                return True, time.monotonic() - started, state
        else:
            idle_since = None
        time.sleep(0.5)
    return False, time.monotonic() - started, state


def ad_group_statuses() -> dict[str, str | None]:
    """Each ad group's status: the desired status of its last applied (or dry-run) action
    (failed and held ones changed nothing)."""
    from automation.models import AdGroupAction

    statuses: dict[str, str | None] = {}
    with db():
        rows = (
            AdGroupAction.objects.filter(
                result__in=[AdGroupAction.Result.APPLIED, AdGroupAction.Result.DRY_RUN]
            )
            .order_by("ad_group_id", "requested_at", "pk")
            .values_list("ad_group_id", "desired_status")
        )
        for ad_group_id, status in rows:
            statuses[ad_group_id] = status
    return statuses


@dataclass(frozen=True)
class Snapshot:
    """The system's records at the end of the run."""

    deliveries: list[dict]
    statuses: dict[str, str | None]
    actions: dict[str, dict[str, int]]
    decisions: list[dict]
    promotion: dict
    reconcile_runs: list[dict]
    dead_jobs: int
    missing: dict[str, str]  # ad group id -> AdGroup.missing, for the ones marked missing


def snapshot(redis: Redis) -> Snapshot:
    """Read everything the comparison needs."""
    from django.db.models import Count

    from automation.models import (
        AdGroup,
        AdGroupAction,
        Delivery,
        Promotion,
        ReconcileRun,
        ReminderDecision,
    )

    with db():
        deliveries = list(
            Delivery.objects.values(
                "id",
                "source",
                "topic",
                "webhook_id",
                "event_id",
                "status",
                "attempts",
                "duplicate_count",
                "last_error",
                "received_at",
                "processed_at",
            )
        )
        actions: dict[str, dict[str, int]] = {}
        for row in AdGroupAction.objects.values("ad_group_id", "result").annotate(n=Count("id")):
            actions.setdefault(row["ad_group_id"], {})[row["result"]] = row["n"]
        decisions = list(
            ReminderDecision.objects.values(
                "checkout__source",
                "checkout__token",
                "checkout_version",
                "email",
                "arm",
                "reason",
                "decided_at",
                "sent_at",
            )
        )
        promotion = (
            Promotion.objects.values(
                "status", "end_at", "ended_at", "end_late_seconds", "last_error"
            ).first()
            or {}
        )
        runs = list(
            ReconcileRun.objects.order_by("started_at").values(
                "trigger", "status", "corrections", "errors", "levels_changed"
            )
        )
        missing = dict(AdGroup.objects.exclude(missing="").values_list("ad_group_id", "missing"))
    return Snapshot(
        deliveries=deliveries,
        statuses=ad_group_statuses(),
        actions=actions,
        decisions=decisions,
        promotion=promotion,
        reconcile_runs=runs,
        dead_jobs=redis.zcard("rq:failed:default"),
        missing=missing,
    )


def current_jobs(redis: Redis) -> dict[int, str]:
    """pid → the job id each busy RQ worker is executing."""
    from rq import Worker

    jobs = {}
    for worker in Worker.all(connection=redis):
        job_id = worker.get_current_job_id()
        if worker.pid and job_id:
            jobs[worker.pid] = job_id
    return jobs


def delivery_item(delivery_id: int) -> int | None:
    """The inventory item an inventory delivery is about."""
    import json

    from automation.models import Delivery

    with db():
        row = Delivery.objects.filter(pk=delivery_id).values("topic", "body").first()
    if not row or row["topic"] != "inventory_levels/update" or row["body"] is None:
        return None
    return json.loads(bytes(row["body"])).get("inventory_item_id")


def processed_at(delivery_id: int) -> datetime | None:
    from automation.models import Delivery

    with db():
        return (
            Delivery.objects.filter(pk=delivery_id).values_list("processed_at", flat=True).first()
        )
