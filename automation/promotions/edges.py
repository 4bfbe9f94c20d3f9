"""Promotions on local wall-clock time: ends at local midnight, summer or winter.

A local time converts to one instant with `zoneinfo`; a time that does not exist (the spring
gap) or exists twice (the autumn overlap) is refused rather than guessed. Each start and end is
scheduled at its instant with RQ's scheduler (`save_and_schedule`, through
`scheduling.schedule_promotion`); the job re-reads the promotion and does nothing if the time
changed since. A cron check every minute catches up edges the scheduler missed.
"""

import logging
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from redis.exceptions import RedisError

from automation.models import AdGroupAction, Promotion
from automation.platform import alerts, display_names, scheduling
from automation.platform.exceptions import TransientAdsError
from automation.platform.masking import mask_secrets
from automation.stock import apply

logger = logging.getLogger(__name__)


class LocalTimeError(ValueError):
    """A wall-clock time that names no instant, or two."""


def zone(name: str) -> ZoneInfo:
    """The IANA zone, or a LocalTimeError naming the bad name."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise LocalTimeError(_("unknown time zone %(name)r") % {"name": name}) from None


def local_to_instant(day: date, clock: time, zone_name: str) -> datetime:
    """The one UTC instant of a local wall-clock time; refuses gaps and overlaps."""
    tz = zone(zone_name)
    wall = datetime.combine(day, clock)
    first = wall.replace(tzinfo=tz, fold=0)
    second = wall.replace(tzinfo=tz, fold=1)
    if first.utcoffset() == second.utcoffset():
        return first.astimezone(UTC)

    def round_trips(candidate: datetime) -> bool:
        return candidate.astimezone(UTC).astimezone(tz).replace(tzinfo=None) == wall

    if not (round_trips(first) and round_trips(second)):
        raise LocalTimeError(
            _(
                "%(wall)s does not exist in %(zone)s: the clocks jump forward over it (summer "
                "time begins). Choose a time before or after the gap."
            )
            % {"wall": f"{wall:%Y-%m-%d %H:%M}", "zone": zone_name}
        )
    raise LocalTimeError(
        _(
            "%(wall)s happens twice in %(zone)s: the clocks go back (summer time ends), at "
            "%(first)s and %(second)s UTC. Choose a time outside that hour."
        )
        % {
            "wall": f"{wall:%Y-%m-%d %H:%M}",
            "zone": zone_name,
            "first": f"{first.astimezone(UTC):%H:%M}",
            "second": f"{second.astimezone(UTC):%H:%M}",
        }
    )


def describe_instant(label: str, day: date, clock: time, zone_name: str, now: datetime) -> str:
    """'ends 2026-06-01 00:00 Europe/Berlin = 2026-05-31 22:00 UTC, in 3 days'."""
    instant = local_to_instant(day, clock, zone_name)
    delta = instant - now
    days = abs(delta).days
    hours = abs(delta).seconds // 3600
    if days:
        span = ngettext("%(n)d day", "%(n)d days", days) % {"n": days}
    elif hours:
        span = _("%(n)d h") % {"n": hours}
    else:
        span = _("minutes")
    relative = (_("in %(span)s") if delta >= timedelta(0) else _("%(span)s ago")) % {"span": span}
    return _("%(label)s %(local)s %(zone)s = %(utc)s UTC, %(relative)s") % {
        "label": label,
        "local": f"{datetime.combine(day, clock):%Y-%m-%d %H:%M}",
        "zone": zone_name,
        "utc": f"{instant:%Y-%m-%d %H:%M}",
        "relative": relative,
    }


def instants(promotion: Promotion) -> tuple[datetime | None, datetime | None]:
    """The start and end instants from the promotion's local fields."""
    start = end = None
    if promotion.start_date and promotion.start_time is not None:
        start = local_to_instant(promotion.start_date, promotion.start_time, promotion.time_zone)
    if promotion.end_date and promotion.end_time is not None:
        end = local_to_instant(promotion.end_date, promotion.end_time, promotion.time_zone)
    return start, end


# --- times ---------------------------------------------------------------------------------


def save_times(promotion: Promotion) -> None:
    """Recompute the instants; an edge whose instant moved will run again at the new time."""
    start, end = instants(promotion)
    if start != promotion.start_at:
        promotion.started_at = promotion.start_late_seconds = None
    if end != promotion.end_at:
        promotion.ended_at = promotion.end_late_seconds = None
    promotion.start_at, promotion.end_at = start, end
    if promotion.ended_at:
        promotion.status = Promotion.Status.ENDED
    elif promotion.started_at:
        promotion.status = Promotion.Status.RUNNING
    else:
        promotion.status = Promotion.Status.SCHEDULED


def save_and_schedule(promotion: Promotion) -> None:
    """Save with fresh instants and schedule the edges once the save has committed.

    Without Redis nothing is lost: the minute check (`catch_up`) runs every due edge that has
    not run, so the failure is logged, not raised.
    """
    save_times(promotion)
    promotion.save()

    def schedule_now() -> None:
        try:
            scheduling.schedule_promotion(promotion)
        except RedisError as err:
            logger.warning("promotion %s not scheduled, Redis unavailable: %s", promotion.pk, err)

    transaction.on_commit(schedule_now)


def delete_and_cancel(promotion: Promotion) -> None:
    """Delete the promotion and its scheduled jobs."""
    promotion_id = promotion.pk
    promotion.delete()
    try:
        scheduling.cancel_promotion(promotion_id)
    except RedisError as err:  # its jobs find no promotion and do nothing
        logger.warning("promotion %s jobs not cancelled, Redis unavailable: %s", promotion_id, err)


# --- running -------------------------------------------------------------------------------


def run_edge(promotion_id: int, edge: str, instant: datetime) -> str:
    """Run one start or end if it is still the one scheduled and has not run; idempotent."""
    promotion = Promotion.objects.filter(pk=promotion_id).first()
    if promotion is None:
        return "deleted"
    current = promotion.start_at if edge == "start" else promotion.end_at
    if current != instant:
        logger.info("promotion %s %s moved from %s: nothing to do", promotion_id, edge, instant)
        return "moved"
    ran_field = "started_at" if edge == "start" else "ended_at"
    if getattr(promotion, ran_field) is not None:
        return "already ran"

    # Each ad group gets what the rule says from now on (the promotion's window, the stock of
    # the watched products that control it, a manual state), through the stock's one path.
    keys = [(group.customer_id, group.ad_group_id) for group in promotion.ad_groups.all()]
    errors: list[str] = []
    transient: list[str] = []
    now = max(timezone.now(), instant)
    names = display_names.ad_group_names(ad_group_id for _, ad_group_id in keys)
    for done in apply.settle(keys, source=AdGroupAction.Source.PROMOTION, now=now):
        customer_id, ad_group_id = done.key
        who = display_names.plain(names.get(ad_group_id), f"{customer_id}/{ad_group_id}")
        if isinstance(done.error, TransientAdsError):
            transient.append(f"{who}: {done.error}")
        elif done.error is not None:
            errors.append(f"{who}: {done.error}")
    if transient:
        # Not marked as run: RQ's retries and the minute check try again (statuses are idempotent).
        raise TransientAdsError("; ".join(transient))

    now = timezone.now()
    late = (now - instant).total_seconds()
    with transaction.atomic():
        won = Promotion.objects.filter(
            pk=promotion_id, **{ran_field: None, f"{edge}_at": instant}
        ).update(
            **{ran_field: now, f"{edge}_late_seconds": max(late, 0.0)},
            status=Promotion.Status.RUNNING if edge == "start" else Promotion.Status.ENDED,
            last_error=mask_secrets("; ".join(errors))[:2000],
        )
    if won and errors:
        alerts.send(
            f"[Elbkerzen] Promotion {promotion.name!r}: {edge} could not switch every ad group",
            "\n".join(errors),
        )
    return f"ran {edge} {late:.0f}s after its time" if won else "already ran"


def catch_up(now: datetime | None = None) -> list[str]:
    """Run every due edge that has not run (the scheduler was down at midnight, say)."""
    now = now or timezone.now()
    done = []
    overdue_ends = Promotion.objects.filter(end_at__lte=now, ended_at__isnull=True)
    for promotion in overdue_ends:
        if promotion.started_at is None and promotion.start_at is not None:
            # the whole promotion was missed: do not switch ads on just to switch them off
            Promotion.objects.filter(pk=promotion.pk, started_at__isnull=True).update(
                started_at=now, start_late_seconds=(now - promotion.start_at).total_seconds()
            )
        done.append(_run_logged(promotion.pk, "end", promotion.end_at))
    overdue_starts = Promotion.objects.filter(
        start_at__lte=now, started_at__isnull=True, ended_at__isnull=True
    )
    for promotion in overdue_starts:
        done.append(_run_logged(promotion.pk, "start", promotion.start_at))
    return done


def _run_logged(promotion_id: int, edge: str, instant: datetime) -> str:
    """One overdue edge; a transient Ads failure waits for the next minute's check."""
    try:
        return run_edge(promotion_id, edge, instant)
    except TransientAdsError as err:
        logger.warning("promotion %s %s not switched yet: %s", promotion_id, edge, err)
        return f"retry {edge}: {err}"
