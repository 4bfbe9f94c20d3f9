"""RQ entry points: each takes ids, calls one function, and is safe to run twice.

Workers are long-lived processes, so each job starts and ends like a Django request does:
connections past CONN_MAX_AGE or broken (a restarted PostgreSQL: that job attempt fails and is
retried) are dropped and reopened, instead of failing every later job of the worker.
"""

import functools
from collections.abc import Callable
from datetime import datetime
from typing import ParamSpec, TypeVar

from django.db import close_old_connections, connection
from rq import get_current_job
from rq.job import Job

from automation.intake import inbox, sweeper
from automation.platform import alerts, metrics
from automation.promotions import edges as promotions
from automation.reconcile import nightly as reconcile
from automation.reminders import catch_up as reminder_catch_up
from automation.reminders import checkouts

P = ParamSpec("P")
R = TypeVar("R")


def _refresh_connections() -> None:
    if not connection.in_atomic_block:  # a caller's transaction (eager runs, tests) stays put
        close_old_connections()


def _job(func: Callable[P, R]) -> Callable[P, R]:
    timer = metrics.JOB_SECONDS.labels(func.__name__)

    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        _refresh_connections()
        try:
            with timer.time():
                return func(*args, **kwargs)
        finally:
            _refresh_connections()

    return run


@_job
def process_delivery(delivery_id: int) -> str:
    """Process one stored delivery; the last RQ attempt turns a failure into `dead`."""
    job = get_current_job()
    final_attempt = job is None or not job.retries_left
    return inbox.process(delivery_id, final_attempt=final_attempt)


@_job
def sweep_deliveries() -> int:
    """Enqueue deliveries that missed their job (Redis outage, killed worker)."""
    return sweeper.sweep()


@_job
def evaluate_checkout(checkout_id: int, version: str) -> str:
    """Decide about one checkout version and send at most one reminder; the last RQ attempt
    skips a reminder whose vendor could not say whether the buyer paid meanwhile."""
    job = get_current_job()
    final_attempt = job is None or not job.retries_left
    return checkouts.evaluate(
        checkout_id, datetime.fromisoformat(version), final_attempt=final_attempt
    )


def evaluation_gave_up(job: Job, connection, exc_type, exc_value, traceback) -> None:
    """RQ's on_failure for reminder evaluations (it runs after every failed attempt, and for a
    job abandoned by a killed worker): alert once no retry is left."""
    if job.retries_left:
        return
    _refresh_connections()
    alerts.reminder_failed(job.args[0], _error_text(exc_type, exc_value))


def promotion_edge_gave_up(job: Job, connection, exc_type, exc_value, traceback) -> None:
    """RQ's on_failure for promotion edges: alert once no retry is left (the minute check
    keeps trying; the alert says so)."""
    if job.retries_left:
        return
    _refresh_connections()
    alerts.promotion_failed(job.args[0], job.args[1], _error_text(exc_type, exc_value))


def _error_text(exc_type, exc_value) -> str:
    name = getattr(exc_type, "__name__", "error")
    return f"{name}: {exc_value}"[:1000]


@_job
def catch_up_reminders() -> int:
    """Schedule reminder evaluations Redis lost (checkouts past due without a decision)."""
    return reminder_catch_up.catch_up()


@_job
def run_promotion_edge(promotion_id: int, edge: str, instant: str) -> str:
    """Start or end a promotion at its instant, unless it was moved since."""
    return promotions.run_edge(promotion_id, edge, datetime.fromisoformat(instant))


@_job
def send_held_alerts() -> int:
    """Mail the alerts held back by the hourly limit once their hour has passed."""
    return alerts.send_held()


@_job
def catch_up_promotions() -> list[str]:
    """Run promotion starts and ends whose time has passed without them (scheduler down)."""
    return promotions.catch_up()


@_job
def nightly_reconcile() -> str:
    """The 03:00 run; a second cron process or a restart finds the date's run and stops."""
    run = reconcile.run_nightly()
    return "already ran today" if run is None else reconcile.summary(run)


@_job
def reconcile_if_overdue() -> str:
    """Catch up a missed nightly run (runs when rqcron starts, then hourly)."""
    run = reconcile.run_if_overdue()
    return "not overdue" if run is None else reconcile.summary(run)
