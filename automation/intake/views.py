"""Thin HTTP views for the webhooks: verify, store, enqueue, answer."""

import logging
import time
from collections.abc import Callable

from django.db import DatabaseError, OperationalError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from automation.intake import inbox
from automation.intake.sources import Incoming, shopify, stripe
from automation.platform import metrics
from automation.platform.exceptions import WebhookRejected

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
