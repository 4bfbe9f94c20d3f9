"""/healthz and /metrics: what the service needs to do its job, each part "ok ..." or a
short reason it is not, and who may see the detail."""

import hmac
import ipaddress

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from redis.exceptions import RedisError
from rq import Worker
from rq.scheduler import RQScheduler

from automation.intake import handling
from automation.models import ReconcileRun
from automation.platform import mail_server, metrics
from automation.platform.queues import default_queue, redis_client
from automation.reconcile.nightly import OVERDUE_AFTER


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
    problem = mail_server.mail_server_problem()
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


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 or 503 for everyone; which parts fail, and how, only for those who may monitor.

    The parts name what is configured and how many workers run: staff, the METRICS_TOKEN
    bearer or a direct loopback caller (monitoring_refusal's rule) see them.
    """
    results = check()
    broken = failing(results)
    body = {"status": "fail" if broken else "ok"}
    if monitoring_refusal(request) is None or request.user.is_staff:
        body |= {"failing": broken, **results}
    return JsonResponse(body, status=503 if broken else 200)


# Headers a reverse proxy adds (RFC 7239's Forwarded and the de-facto X-Forwarded-*/X-Real-IP):
# when one is present, REMOTE_ADDR is the proxy's address, not the caller's.
FORWARDED_HEADERS = (
    "HTTP_FORWARDED",
    "HTTP_X_FORWARDED_FOR",
    "HTTP_X_FORWARDED_HOST",
    "HTTP_X_FORWARDED_PROTO",
    "HTTP_X_FORWARDED_PORT",
    "HTTP_X_REAL_IP",
)


def _direct_loopback_caller(request: HttpRequest) -> bool:
    """A caller on this host that did not come through a proxy on this host."""
    if any(request.META.get(name) for name in FORWARDED_HEADERS):
        return False
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


def _bearer_token(request: HttpRequest) -> str:
    """The token of `Authorization: Bearer <token>` (RFC 6750 section 2.1), "" otherwise.

    The scheme name is case-insensitive (RFC 9110 section 11.1).
    """
    scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def monitoring_refusal(request: HttpRequest) -> HttpResponse | None:
    """None when the caller may see monitoring detail (/metrics, /healthz parts); else a refusal.

    With METRICS_TOKEN set, only its bearer token passes, from anywhere. Without it, only a
    caller on this host that did not come through a proxy passes: behind a proxy on the same
    host every caller would otherwise look like localhost.
    """
    token = settings.METRICS_TOKEN
    if token:
        if hmac.compare_digest(_bearer_token(request).encode(), token.encode()):
            return None
        response = HttpResponse("send the METRICS_TOKEN as a bearer token\n", status=401)
        # A 401 names its scheme: RFC 6750 section 3, RFC 9110 section 15.5.2.
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if _direct_loopback_caller(request):
        return None
    return HttpResponse(
        "served only to localhost without a proxy; set METRICS_TOKEN to scrape from elsewhere\n",
        status=403,
    )


@require_GET
def prometheus_metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus scrape, for the METRICS_TOKEN bearer or (unset) a direct loopback caller."""
    refusal = monitoring_refusal(request)
    if refusal is not None:
        return refusal
    body, content_type = metrics.render(known_topics=handling.handled_topics())
    return HttpResponse(body, content_type=content_type)
