"""Thin HTTP views: webhooks (verify, store, enqueue, answer), health, unsubscribe."""

import logging
from collections.abc import Callable

from django.conf import settings
from django.core import signing
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from . import health, inbox, reminder_mail
from .exceptions import WebhookRejected
from .models import SuppressedAddress
from .privacy import mask_email
from .sources import Incoming, shopify, stripe

logger = logging.getLogger(__name__)


def _intake(request: HttpRequest, verify: Callable[[HttpRequest], Incoming]) -> JsonResponse:
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
    healthy = all(state == "ok" for state in results.values())
    return JsonResponse(
        {"status": "ok" if healthy else "fail", **results}, status=200 if healthy else 503
    )


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
