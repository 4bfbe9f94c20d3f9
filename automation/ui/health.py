"""What the service needs to do its job, each part "ok ..." or a short reason it is not."""

from django.conf import settings
from django.db import connection
from django.utils import timezone
from redis.exceptions import RedisError
from rq import Worker
from rq.scheduler import RQScheduler

from automation.models import ReconcileRun
from automation.platform.queues import default_queue, redis_client
from automation.reconcile.nightly import OVERDUE_AFTER
from automation.reminders import mail as reminder_mail


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as err:  # any driver error means "not answering"
        return f"error: {type(err).__name__}"
    return "ok"


def _redis() -> str:
    try:
        redis_client().ping()
    except RedisError as err:
        return f"error: {type(err).__name__}"
    return "ok"


def _workers() -> str:
    try:
        count = len(Worker.all(queue=default_queue()))
    except RedisError as err:
        return f"error: {type(err).__name__}"
    return f"ok ({count} alive)" if count else "error: no RQ worker alive"


def _scheduler() -> str:
    try:
        holder = redis_client().get(RQScheduler.get_locking_key(default_queue().name))
    except RedisError as err:
        return f"error: {type(err).__name__}"
    return "ok" if holder else "error: no worker runs the scheduler (--with-scheduler)"


def _reconciliation() -> str:
    try:
        last = ReconcileRun.objects.exclude(finished_at=None).order_by("-finished_at").first()
    except Exception as err:
        return f"error: {type(err).__name__}"
    if last is None:
        return "error: never ran"
    age = timezone.now() - last.finished_at
    hours = age.total_seconds() / 3600
    if age > OVERDUE_AFTER:
        return f"error: last run {hours:.0f} h ago"
    return f"ok ({hours:.1f} h ago, {last.get_status_display()})"


def _mail() -> str:
    problem = reminder_mail.mail_server_problem()
    if problem:
        return f"error: {problem}"
    return f"ok ({settings.EMAIL_BACKEND.rsplit('.', 2)[-2]})"


CHECKS = {
    "database": _database,
    "redis": _redis,
    "workers": _workers,
    "scheduler": _scheduler,
    "reconciliation": _reconciliation,
    "mail": _mail,
}


def check() -> dict[str, str]:
    """Each part's state; a part is healthy when its text starts with "ok"."""
    return {name: probe() for name, probe in CHECKS.items()}


def failing(results: dict[str, str]) -> list[str]:
    return [name for name, state in results.items() if not state.startswith("ok")]
