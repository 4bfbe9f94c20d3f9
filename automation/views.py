"""Thin HTTP views: verify, store, enqueue, answer."""

import logging
from collections.abc import Callable

from django.db import DatabaseError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from . import health, inbox
from .exceptions import WebhookRejected
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
