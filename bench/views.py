"""Reference views for the intake benchmark: the floor and the design's minimum.

`bare` is what the server setup costs with nothing done; `verify_enqueue` is the least the design
needs (check the signature, hand a job to Redis through the product's shared client) without the
durable row. The product's intake is measured against both in the same run.
"""

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rq import Retry

from automation.exceptions import WebhookRejected
from automation.queues import default_queue
from automation.sources import shopify


def noop() -> None:
    """The job the reference view enqueues; the intake bench never runs it."""


@csrf_exempt
def bare(request: HttpRequest) -> HttpResponse:
    """200 and nothing else: the cost of gunicorn plus Django's middleware and routing."""
    return HttpResponse(status=200)


@csrf_exempt
def verify_enqueue(request: HttpRequest) -> JsonResponse:
    """Verify like the product, enqueue with the product's job options, store nothing."""
    try:
        incoming = shopify.verify(request)
    except WebhookRejected as err:
        return JsonResponse({"error": str(err)}, status=err.status)
    intervals = list(settings.DELIVERY_RETRY_INTERVALS)
    job = default_queue().enqueue(
        noop,
        retry=Retry(max=len(intervals), interval=intervals),
        job_timeout=settings.DELIVERY_JOB_TIMEOUT,
        result_ttl=0,
        description=f"bench no-op for {incoming.webhook_id}",
    )
    return JsonResponse({"status": "queued", "id": job.id})
