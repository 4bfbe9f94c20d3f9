"""Thin HTTP views: webhooks (verify, store, enqueue, answer), health, unsubscribe."""

import hmac
import ipaddress
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.core import signing
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from . import health, inbox, metrics, reminder_mail
from .exceptions import WebhookRejected
from .models import SuppressedAddress
from .privacy import mask_email
from .sources import Incoming, shopify, stripe

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
    except DatabaseError:
        logger.exception("could not store a %s delivery", incoming.source)
        return JsonResponse({"error": "storage unavailable, retry later"}, status=503)
    if delivery is None:
        return JsonResponse({"status": "duplicate"})
    return JsonResponse({"status": delivery.status, "id": delivery.pk})


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
    results = health.check()
    broken = health.failing(results)
    body = {"status": "fail" if broken else "ok", "failing": broken, **results}
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
        SuppressedAddress.objects.get_or_create(email=email)
        logger.info("unsubscribed %s", mask_email(email))
        return render(request, "automation/unsubscribe.html", context | {"done": True})
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    return render(request, "automation/unsubscribe.html", context)


def _from_loopback(request: HttpRequest) -> bool:
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


@require_GET
def prometheus_metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus scrape; needs METRICS_TOKEN as a bearer token, or a loopback caller if unset."""
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            return HttpResponse("metrics need the METRICS_TOKEN bearer token\n", status=401)
    elif not _from_loopback(request):
        return HttpResponse("metrics are served to localhost only; set METRICS_TOKEN\n", status=403)
    body, content_type = metrics.render()
    return HttpResponse(body, content_type=content_type)
