"""Thin HTTP views: webhooks (verify, store, enqueue, answer), health, unsubscribe."""

import hmac
import ipaddress
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.core import signing
from django.db import DatabaseError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from automation.intake import handling, inbox
from automation.intake.sources import Incoming, shopify, stripe
from automation.platform import metrics
from automation.platform.exceptions import WebhookRejected
from automation.platform.pseudonyms import mask_email
from automation.reminders import mail as reminder_mail
from automation.reminders import suppression
from automation.ui import health

logger = logging.getLogger(__name__)


def _intake(request: HttpRequest, verify: Callable[[HttpRequest], Incoming]) -> JsonResponse:
    started = time.perf_counter()
    try:
        return _verify_and_record(request, verify)
    finally:
        metrics.INTAKE_SECONDS.labels(request.path.strip("/").rsplit("/", 1)[-1]).observe(
            time.perf_counter() - started
        )


def _verify_and_record(
    request: HttpRequest, verify: Callable[[HttpRequest], Incoming]
) -> JsonResponse:
    try:
        incoming = verify(request)
    except WebhookRejected as err:
        return JsonResponse({"error": str(err)}, status=err.status)
    try:
        delivery = inbox.record(incoming)
    except OperationalError as err:
        # A lock or statement limit of the intake (db_timeouts), or the database unreachable:
        # the sender retries. No traceback: this is the designed answer, not a bug.
        logger.warning("could not store a %s delivery, answered 503: %s", incoming.source, err)
        return _storage_unavailable()
    except DatabaseError:
        logger.exception("could not store a %s delivery", incoming.source)
        return _storage_unavailable()
    if delivery is None:
        return JsonResponse({"status": "duplicate"})
    return JsonResponse({"status": delivery.status, "id": delivery.pk})


# Seconds a sender is asked to wait after a 503. Shopify and Stripe keep their own retry
# schedules; the header is for any other client and for people reading the answer.
STORAGE_RETRY_AFTER = 10


def _storage_unavailable() -> JsonResponse:
    response = JsonResponse({"error": "storage unavailable, retry later"}, status=503)
    response["Retry-After"] = str(STORAGE_RETRY_AFTER)
    return response


@csrf_exempt
@require_POST
def shopify_webhook(request: HttpRequest) -> JsonResponse:
    return _intake(request, shopify.verify)


@csrf_exempt
@require_POST
def stripe_webhook(request: HttpRequest) -> JsonResponse:
    return _intake(request, stripe.verify)


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 or 503 for everyone; which parts fail, and how, only for those who may monitor.

    The parts name what is configured and how many workers run: staff, the METRICS_TOKEN
    bearer or a direct loopback caller (monitoring_refusal's rule) see them.
    """
    results = health.check()
    broken = health.failing(results)
    body = {"status": "fail" if broken else "ok"}
    if monitoring_refusal(request) is None or request.user.is_staff:
        body |= {"failing": broken, **results}
    return JsonResponse(body, status=503 if broken else 200)


@csrf_exempt  # RFC 8058 one-click POSTs come without a CSRF token; the signed token protects it
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    """GET shows a confirmation page; POST (the button, or one-click) unsubscribes."""
    context = {"shop_name": settings.SHOP_NAME}
    try:
        email = reminder_mail.email_from_token(token)
    except signing.BadSignature:
        return render(
            request, "automation/unsubscribe.html", context | {"invalid": True}, status=400
        )
    context["email"] = email
    if request.method == "POST":
        # the address the token names, as the list stores it (an old link may name a spelling)
        suppression.suppress(email)
        logger.info("unsubscribed %s", mask_email(email))
        return render(request, "automation/unsubscribe.html", context | {"done": True})
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    return render(request, "automation/unsubscribe.html", context)


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
