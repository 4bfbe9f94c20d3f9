"""Ad group status changes through the backend chosen by ADS_BACKEND, each one logged.

`dryrun` records what would be sent, so the product runs without credentials; `google` calls
the Google Ads API through `adapters.google_ads`, retrying transient errors inside the job, but
never past the job's deadline: what is left then goes to the job's RQ retry.
"""

import functools
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from rq import Queue, get_current_job

from . import metrics, rows
from .exceptions import PermanentAdsError, TransientAdsError
from .models import AdGroupAction, Delivery

logger = logging.getLogger(__name__)

Result = AdGroupAction.Result


@functools.cache
def google_client() -> Any:
    """One GoogleAdsClient per process (building it refreshes OAuth; failures are not cached)."""
    from .adapters import google_ads

    return google_ads.build_client(use_proto_plus=settings.GOOGLE_ADS_USE_PROTO_PLUS)


def job_deadline() -> float | None:
    """The time.monotonic() by which this RQ job's Ads calls must end; None outside a job.

    The job's own RQ timeout (DELIVERY_JOB_TIMEOUT for a delivery) minus ADS_JOB_MARGIN for
    the work after the last call, counted from the job's start: one budget for all ad groups
    of the job, so RQ never kills a job in the middle of its own retries.
    """
    job = get_current_job()
    if job is None or job.started_at is None:
        return None
    timeout = job.timeout or Queue.DEFAULT_TIMEOUT
    if timeout < 0:  # RQ's "no timeout"
        return None
    ends_at = job.started_at + timedelta(seconds=timeout - settings.ADS_JOB_MARGIN)
    return time.monotonic() + (ends_at - datetime.now(UTC)).total_seconds()


def send_status(customer_id: str, ad_group_id: str, status: str) -> str:
    """Set one ad group's status; returns the result to log (`applied` or `dry_run`)."""
    backend = settings.ADS_BACKEND
    if backend == "dryrun":
        logger.info("dry run: ad group %s/%s → %s", customer_id, ad_group_id, status)
        return Result.DRY_RUN
    if backend == "google":
        from .adapters import google_ads

        google_ads.set_ad_group_status_with_retry(
            customer_id,
            ad_group_id,
            status,
            retries=settings.ADS_RETRIES,
            base=settings.ADS_BACKOFF_BASE,
            cap=settings.ADS_BACKOFF_CAP,
            timeout=settings.ADS_CALL_TIMEOUT,
            deadline=job_deadline(),
            client=google_client(),
        )
        return Result.APPLIED
    raise ImproperlyConfigured(f"ADS_BACKEND must be 'dryrun' or 'google', not {backend!r}")


def apply_status(
    *,
    customer_id: str,
    ad_group_id: str,
    status: str,
    reason: str,
    source: str,
    delivery: Delivery | None = None,
) -> None:
    """Send a status change and log it; a failure is logged too, then re-raised."""
    requested_at = timezone.now()
    fields = {
        "customer_id": customer_id,
        "ad_group_id": ad_group_id,
        "desired_status": status,
        "reason": reason[:500],
        "source": source,
        "delivery": delivery,
        "requested_at": requested_at,
    }
    if not customer_id:
        err = PermanentAdsError(
            "no Google Ads customer id: set GOOGLE_ADS_CUSTOMER_ID or the item's"
        )
        AdGroupAction.objects.create(**fields, result=Result.FAILED, error=str(err))
        raise err
    try:
        result = send_status(customer_id, ad_group_id, status)
    except (TransientAdsError, PermanentAdsError) as err:
        AdGroupAction.objects.create(**fields, result=Result.FAILED, error=str(err)[:2000])
        raise
    if delivery is not None and delivery.triggered_at is not None:
        metrics.REACTION_SECONDS.observe((requested_at - delivery.triggered_at).total_seconds())
    rows.insert(AdGroupAction, **fields, result=result, applied_at=timezone.now())
