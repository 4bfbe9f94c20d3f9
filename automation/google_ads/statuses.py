"""Ad group status changes through the backend chosen by ADS_BACKEND, each one logged.

`dryrun` records what would be sent, so the product runs without credentials; `google` calls
the Google Ads API through `automation.google_ads.adapter`, retrying transient errors inside the
job, but never past the job's deadline (`queues.job_deadline`): what is left then goes to the
job's RQ retry.

Only the stock's one locked path (`automation.stock.apply`) decides what to send; this module
sends it, logs it (`AdGroupAction`), and remembers what the backend confirmed (`AdGroupState`),
so an unchanged status is not sent again.
"""

import concurrent.futures
import contextlib
import functools
import logging
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.utils import timezone

from automation.models import AdGroupAction, AdGroupState
from automation.platform import connections, metrics, queues, rows
from automation.platform.exceptions import PermanentAdsError, TransientAdsError

logger = logging.getLogger(__name__)

Result = AdGroupAction.Result
Source = AdGroupAction.Source

SENT_RESULTS = (Result.APPLIED, Result.DRY_RUN)


# The SDK's config keys of the credentials the set-up page may store (connections.FIELDS).
_STORED_SDK_KEYS = {
    "google_ads_developer_token": "developer_token",
    "google_ads_client_id": "client_id",
    "google_ads_client_secret": "client_secret",
    "google_ads_refresh_token": "refresh_token",
    "google_ads_login_customer_id": "login_customer_id",
}


def stored_credentials() -> dict[str, str]:
    """The Ads credentials entered on the set-up page, as the SDK's config keys (env ones win
    in the SDK's own environment reading, so they are left out here)."""
    values = connections.current()
    found = {}
    for name, key in _STORED_SDK_KEYS.items():
        value = getattr(values, name)
        if value.source is connections.Source.DATABASE:
            found[key] = value.value
    return found


@functools.lru_cache(maxsize=2)
def _client_for(stored: tuple[tuple[str, str], ...]) -> Any:
    from automation.google_ads import adapter as google_ads

    return google_ads.build_client(
        use_proto_plus=settings.GOOGLE_ADS_USE_PROTO_PLUS, stored=dict(stored)
    )


def google_client() -> Any:
    """One GoogleAdsClient per process and set of stored credentials (building it refreshes
    OAuth; failures are not cached): a new sign-in on the page reaches every worker."""
    return _client_for(tuple(sorted(stored_credentials().items())))


google_client.cache_clear = _client_for.cache_clear  # type: ignore[attr-defined]


# Builds the client for pages: one at a time, so a hanging sign-in holds one thread, not one
# per page; a build that outlasts its page goes on and is kept for the next page.
_PAGE_BUILDER = concurrent.futures.ThreadPoolExecutor(
    max_workers=1, thread_name_prefix="ads-client"
)


def google_client_for_page() -> Any:
    """google_client() for a page the merchant waits on: Google's sign-in (the OAuth refresh the
    SDK sends when the client is built, with google-auth's default of 120 s) gets
    VENDOR_INTERACTIVE_TIMEOUT seconds, like the page's own calls."""
    future = _PAGE_BUILDER.submit(google_client)
    try:
        return future.result(timeout=settings.VENDOR_INTERACTIVE_TIMEOUT)
    except concurrent.futures.TimeoutError as err:
        raise TransientAdsError(
            f"DEADLINE_EXCEEDED: Google's sign-in did not answer within "
            f"{settings.VENDOR_INTERACTIVE_TIMEOUT:g} s"
        ) from err


_ON_A_PAGE: ContextVar[bool] = ContextVar("ads_on_a_page", default=False)


@contextlib.contextmanager
def on_a_page() -> Iterator[None]:
    """Status changes sent inside are for a page the merchant waits on (a save in the admin, a
    manual pause): each ad group's call, retries included, ends within VENDOR_INTERACTIVE_TIMEOUT
    seconds instead of a job's budget, so no web worker waits minutes on Google. What does not
    get through is a failed call like any other: the next stock update or the nightly run sets
    the ad group again."""
    token = _ON_A_PAGE.set(True)
    try:
        yield
    finally:
        _ON_A_PAGE.reset(token)


def call_deadline() -> float | None:
    """The time.monotonic() by which an Ads call must end: the job's, or a page's; None else."""
    deadline = queues.job_deadline()
    if deadline is None and _ON_A_PAGE.get():
        return time.monotonic() + settings.VENDOR_INTERACTIVE_TIMEOUT
    return deadline


def chosen_backend() -> str:
    """ADS_BACKEND, checked: `dryrun` (nothing leaves the service) or `google`."""
    chosen = settings.ADS_BACKEND
    if chosen not in ("dryrun", "google"):
        raise ImproperlyConfigured(f"ADS_BACKEND must be 'dryrun' or 'google', not {chosen!r}")
    return chosen


def send_status(customer_id: str, ad_group_id: str, status: str) -> str:
    """Set one ad group's status; returns the result to log (`applied` or `dry_run`)."""
    if chosen_backend() == "dryrun":
        logger.info("dry run: ad group %s/%s → %s", customer_id, ad_group_id, status)
        return Result.DRY_RUN
    from automation.google_ads import (
        adapter as google_ads,  # the SDK is imported only where it is used
    )

    google_ads.set_ad_group_status_with_retry(
        customer_id,
        ad_group_id,
        status,
        retries=settings.ADS_RETRIES,
        base=settings.ADS_BACKOFF_BASE,
        cap=settings.ADS_BACKOFF_CAP,
        timeout=settings.ADS_CALL_TIMEOUT,
        deadline=call_deadline(),
        client=google_client_for_page() if _ON_A_PAGE.get() else google_client(),
    )
    return Result.APPLIED


def send_logged(fields: dict[str, Any]) -> tuple[str, TransientAdsError | PermanentAdsError | None]:
    """Send one status change and log it; returns the result and the failure, if any.

    `fields` are the AdGroupAction's (customer_id, ad_group_id, desired_status, reason, source,
    delivery, requested_at). A success is logged `applied` / `dry_run` and becomes the
    confirmed status; a failure is logged `failed` and returned, never raised, so the
    caller's transaction (which holds the ad group's lock) is not marked for rollback: the
    caller raises it once its transaction is safe.
    """
    customer_id, ad_group_id = fields["customer_id"], fields["ad_group_id"]
    fields = {**fields, "reason": fields["reason"][:500]}
    if not customer_id:
        err = PermanentAdsError(
            "no Google Ads customer id: set GOOGLE_ADS_CUSTOMER_ID or the ad group's"
        )
        AdGroupAction.objects.create(**fields, result=Result.FAILED, error=str(err))
        return Result.FAILED, err
    try:
        result = send_status(customer_id, ad_group_id, fields["desired_status"])
    except (TransientAdsError, PermanentAdsError) as err:
        AdGroupAction.objects.create(**fields, result=Result.FAILED, error=str(err)[:2000])
        return Result.FAILED, err
    applied_at = timezone.now()
    rows.insert(AdGroupAction, **fields, result=result, applied_at=applied_at)
    confirm(settings.ADS_BACKEND, customer_id, ad_group_id, fields["desired_status"], applied_at)
    delivery = fields.get("delivery")
    if delivery is not None and delivery.triggered_at is not None:
        metrics.REACTION_SECONDS.observe(
            (fields["requested_at"] - delivery.triggered_at).total_seconds()
        )
    return result, None


# --- only on change ------------------------------------------------------------------------


def confirmed_status(
    backend: str, customer_id: str, ad_group_id: str, *, lock: bool = False
) -> str | None:
    """The status the backend last confirmed for the ad group; None when unknown.

    Asked before every status the stock decides: written out like the job's other statements
    (`rows.execute`), where the ORM compiled the same SELECT anew each time.
    """
    for_update = lock and connection.features.has_select_for_update
    found = rows.execute(_confirmed_status_sql(for_update), [backend, customer_id, ad_group_id])
    return found[0][0] if found else None


def confirmed_state(
    backend: str, customer_id: str, ad_group_id: str, *, lock: bool = False
) -> tuple[str, datetime] | None:
    """The confirmed status and when it was confirmed; None when unknown."""
    found = AdGroupState.objects.filter(
        backend=backend, customer_id=customer_id, ad_group_id=ad_group_id
    )
    if lock:
        found = found.select_for_update()
    return found.values_list("confirmed_status", "confirmed_at").first()


# Hand-written SQL, kept for speed only (`AdGroupState.objects.filter(…).select_for_update()
# .values_list(…).first()` is as correct; it also ordered by the primary key, which a lookup by
# the unique (backend, customer_id, ad_group_id) does not need); the ORM form costs every
# inventory job more than its round trip (docs/PERFORMANCE.md, "Written-out confirmed-status
# check").
@functools.cache
def _confirmed_status_sql(for_update: bool) -> str:
    def column(name: str) -> str:
        return rows.column(AdGroupState, name)

    sql = (
        f"SELECT {column('confirmed_status')} FROM {rows.table(AdGroupState)} "  # noqa: S608
        f"WHERE {column('backend')} = %s AND {column('customer_id')} = %s "
        f"AND {column('ad_group_id')} = %s"
    )
    return f"{sql} FOR UPDATE" if for_update else sql


def confirm(
    backend: str, customer_id: str, ad_group_id: str, status: str, at: datetime | None = None
) -> None:
    """Record what the backend now has: after a successful call, or read back at night."""
    AdGroupState.objects.bulk_create(
        [
            AdGroupState(
                backend=backend,
                customer_id=customer_id,
                ad_group_id=ad_group_id,
                confirmed_status=status,
                confirmed_at=at or timezone.now(),
            )
        ],
        update_conflicts=True,
        unique_fields=["backend", "customer_id", "ad_group_id"],
        update_fields=["confirmed_status", "confirmed_at"],
    )


def recorded_statuses(customer_id: str, ad_group_ids: list[str]) -> dict[str, str]:
    """The dry-run backend's answer to "what status does each ad group have": its own record."""
    return dict(
        AdGroupState.objects.filter(
            backend="dryrun", customer_id=customer_id, ad_group_id__in=ad_group_ids
        ).values_list("ad_group_id", "confirmed_status")
    )


@dataclass(frozen=True)
class SeenAdGroup:
    """An ad group as the backend has it now; a name is "" where the backend does not say."""

    status: str
    name: str = ""
    campaign_name: str = ""


def read_ad_groups(customer_id: str, ad_group_ids: list[str]) -> dict[str, SeenAdGroup]:
    """Each ad group's real status and names, as the backend says (missing ones left out).

    The dry run knows only the statuses it recorded, no names.
    """
    if chosen_backend() == "dryrun":
        recorded = recorded_statuses(customer_id, ad_group_ids)
        return {gid: SeenAdGroup(status) for gid, status in recorded.items()}
    from automation.google_ads import (
        adapter as google_ads,  # the SDK is imported only where it is used
    )

    found = google_ads.read_ad_groups(
        customer_id, ad_group_ids, timeout=settings.ADS_CALL_TIMEOUT, client=google_client()
    )
    return {
        gid: SeenAdGroup(group.status, group.name, group.campaign_name)
        for gid, group in found.items()
    }
