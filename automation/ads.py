"""Ad group status changes through the backend chosen by ADS_BACKEND, each one logged.

`dryrun` records what would be sent, so the product runs without credentials; `google` calls
the Google Ads API through `adapters.google_ads`, retrying transient errors inside the job, but
never past the job's deadline: what is left then goes to the job's RQ retry.

Two gates stand before every call (`apply_status`):
- only on change: a status equal to the one the backend last confirmed for the ad group
  (`AdGroupState`) is not sent; an unknown state (no row) always sends. The state row is
  locked (`FOR UPDATE`) from the check to its update, so two jobs for one ad group take turns.
- the safety brake: a stock-driven pause is held (`HeldChange`, one alert per episode) once the
  window's pauses reach the limit of `BrakeSettings`; enables are never held.
"""

import functools
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext
from rq import Queue, get_current_job

from . import alerts, metrics, rows
from .exceptions import PermanentAdsError, TransientAdsError
from .models import (
    AdGroupAction,
    AdGroupState,
    BrakeEpisode,
    BrakeSettings,
    Delivery,
    HeldChange,
    WatchedItem,
)

logger = logging.getLogger(__name__)

Result = AdGroupAction.Result
Status = AdGroupAction.Status
Source = AdGroupAction.Source

UNCHANGED = "unchanged"
"""`apply_status`'s answer when the backend already has the status: nothing sent, nothing logged."""
BRAKED_SOURCES = (Source.WEBHOOK, Source.RECONCILE)
"""Pauses that follow the stock pass the brake; promotions and the merchant's own do not."""
SENT_RESULTS = (Result.APPLIED, Result.DRY_RUN)


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
    from .adapters import google_ads  # the SDK is imported only where it is used

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


def apply_status(
    *,
    customer_id: str,
    ad_group_id: str,
    status: str,
    reason: str,
    source: str,
    delivery: Delivery | None = None,
    brake: bool = True,
) -> str:
    """Send a status change unless the backend has it already or the brake holds it; log it.

    Returns what happened: `applied` / `dry_run` (sent), `unchanged` (not sent, not logged) or
    `held` (logged, not sent). A failure is logged too, then re-raised. `brake=False` is for
    the merchant's own decision on held changes.
    """
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
    backend = settings.ADS_BACKEND
    failure: TransientAdsError | PermanentAdsError | None = None
    # No savepoint: inside the inbox's transaction the lock lasts until its commit; alone (a
    # promotion's edge) this is the transaction. Nothing may raise out of this block, or the
    # caller's transaction would be marked for rollback: the failure is raised after it.
    with transaction.atomic(savepoint=False):
        # The merchant's own manual pause or enable is always sent and logged: it is rare, it
        # names who and why, and it confirms the status Google Ads really has.
        if (
            confirmed_status(backend, customer_id, ad_group_id, lock=True) == status
            and source != Source.MANUAL
        ):
            return UNCHANGED
        if brake and status == Status.PAUSED and source in BRAKED_SOURCES:
            held_by = _brake_engaged(customer_id, ad_group_id, requested_at)
            if held_by is not None:
                _hold(fields, held_by)
                return Result.HELD
        try:
            result = send_status(customer_id, ad_group_id, status)
        except (TransientAdsError, PermanentAdsError) as err:
            AdGroupAction.objects.create(**fields, result=Result.FAILED, error=str(err)[:2000])
            failure = err
        else:
            applied_at = timezone.now()
            rows.insert(AdGroupAction, **fields, result=result, applied_at=applied_at)
            confirm(backend, customer_id, ad_group_id, status, applied_at)
    if failure is not None:
        raise failure
    if delivery is not None and delivery.triggered_at is not None:
        metrics.REACTION_SECONDS.observe((requested_at - delivery.triggered_at).total_seconds())
    return result


# --- only on change ------------------------------------------------------------------------


def confirmed_status(
    backend: str, customer_id: str, ad_group_id: str, *, lock: bool = False
) -> str | None:
    """The status the backend last confirmed for the ad group; None when unknown.

    Asked before every status an inventory job decides: written out like the job's other
    statements (`rows.execute`), where the ORM compiled the same SELECT anew each time.
    """
    for_update = lock and connection.features.has_select_for_update
    found = rows.execute(_confirmed_status_sql(for_update), [backend, customer_id, ad_group_id])
    return found[0][0] if found else None


# Hand-written SQL, kept for speed only (`AdGroupState.objects.filter(…).select_for_update()
# .values_list(…).first()` is as correct; it also ordered by the primary key, which a lookup by
# the unique (backend, customer_id, ad_group_id) does not need). cProfile over 400 inventory
# jobs, one per delivery, the round trip included: 0.83 s in the ORM form, 0.07 s written out
# (docs/PERFORMANCE.md, "Findings", 2026-12-01 backlog batches).
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


def read_statuses(customer_id: str, ad_group_ids: list[str]) -> dict[str, str]:
    """Each ad group's real status, as the backend says (missing ones are left out)."""
    if chosen_backend() == "dryrun":
        return recorded_statuses(customer_id, ad_group_ids)
    from .adapters import google_ads  # the SDK is imported only where it is used

    return google_ads.search_ad_group_statuses(
        customer_id, ad_group_ids, timeout=settings.ADS_CALL_TIMEOUT, client=google_client()
    )


# --- the safety brake ----------------------------------------------------------------------


def watched_ad_groups() -> int:
    """How many ad groups follow their stock: the base of the brake's share."""
    return (
        WatchedItem.objects.filter(enabled=True)
        .values("customer_id", "ad_group_id")
        .distinct()
        .count()
    )


def _brake_engaged(customer_id: str, ad_group_id: str, now: datetime) -> BrakeEpisode | None:
    """The open brake episode this pause is held by, opening one if this pause is one too many.

    Runs with the settings row locked until the transaction ends, so concurrent pauses are
    counted one after the other (each sees the pauses committed before it).
    """
    BrakeSettings.load()
    config = BrakeSettings.objects.select_for_update().get(pk=1)
    if not config.enabled:
        return None
    episode = BrakeEpisode.objects.filter(is_open=True).first()
    if episode is not None:
        return episode
    watched = watched_ad_groups()
    allowed = config.allowed_pauses(watched)
    since = now - timedelta(minutes=config.window_minutes)
    # Ad groups, not calls: one product that sells out, restocks and sells out again in the
    # window is one ad group; this one's own earlier pause does not count against it.
    others = (
        AdGroupAction.objects.filter(
            desired_status=Status.PAUSED,
            result__in=SENT_RESULTS,
            source__in=BRAKED_SOURCES,
            requested_at__gte=since,
        )
        .exclude(customer_id=customer_id, ad_group_id=ad_group_id)
        .values("customer_id", "ad_group_id")
        .distinct()
        .count()
    )
    if others < allowed:
        return None
    sent = others
    episode = BrakeEpisode.objects.create(
        started_at=now,
        # Written in the active language (the shop's, in the worker: LANGUAGE_CODE).
        reason=gettext(
            "%(sent)s ad groups paused within %(minutes)s minutes; the limit is %(allowed)s "
            "(%(share)s %% of %(watched)s watched ad groups, at most %(count)s)"
        )
        % {
            "sent": sent,
            "minutes": config.window_minutes,
            "allowed": allowed,
            "share": config.max_share_percent,
            "watched": watched,
            "count": config.max_count,
        },
    )
    episode_id = episode.pk
    transaction.on_commit(lambda: alerts.brake_engaged(episode_id))
    return episode


def _hold(fields: dict, episode: BrakeEpisode) -> None:
    """Log the pause as held and keep it (one open held change per ad group) for the merchant."""
    reason = fields["reason"]
    rows.insert(
        AdGroupAction,
        **{**fields, "reason": gettext("%(reason)s (held: safety brake)") % {"reason": reason}},
        result=Result.HELD,
    )
    updated = HeldChange.objects.filter(
        customer_id=fields["customer_id"],
        ad_group_id=fields["ad_group_id"],
        resolution=HeldChange.Resolution.OPEN,
    ).update(reason=reason, source=fields["source"], held_at=fields["requested_at"])
    if not updated:
        HeldChange.objects.create(
            episode=episode,
            customer_id=fields["customer_id"],
            ad_group_id=fields["ad_group_id"],
            desired_status=fields["desired_status"],
            reason=reason,
            source=fields["source"],
            held_at=fields["requested_at"],
        )


def open_held(customer_id: str, ad_group_id: str) -> bool:
    """Whether a pause of this ad group waits for the merchant's decision."""
    return HeldChange.objects.filter(
        customer_id=customer_id, ad_group_id=ad_group_id, resolution=HeldChange.Resolution.OPEN
    ).exists()
