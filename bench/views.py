"""Reference views for the intake benchmark: the floor and the design's minimum.

`bare` is what the server setup costs with nothing done; `verify_enqueue` is the least the design
needs (check the signature, hand the job to Redis exactly as the product does) without the
durable row. The product's intake is measured against both in the same run.
"""

import itertools
import os

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from automation.intake.sources import shopify
from automation.platform import scheduling
from automation.platform.exceptions import WebhookRejected

# Job numbers no delivery row will have, unique per gunicorn worker (the jobs never run).
_job_numbers = itertools.count()


@csrf_exempt
def bare(request: HttpRequest) -> HttpResponse:
    """200 and nothing else: the cost of gunicorn plus Django's middleware and routing."""
    return HttpResponse(status=200)


@csrf_exempt
def verify_enqueue(request: HttpRequest) -> JsonResponse:
    """Verify like the product and enqueue through the product's own enqueue; store nothing."""
    try:
        shopify.verify(request)
    except WebhookRejected as err:
        return JsonResponse({"error": str(err)}, status=err.status)
    job_number = -(os.getpid() * 10_000_000 + next(_job_numbers))
    scheduling.enqueue_delivery(job_number)
    return JsonResponse({"status": "queued", "id": job_number})
