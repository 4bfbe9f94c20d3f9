"""The safety brake: a stock-driven pause is held (`HeldChange`, one alert per episode) once the
window's pauses reach the limit of `BrakeSettings`; enables are never held.

A bad CSV import or a Shopify incident can report zero stock for everything at once; the brake
keeps the ads running until the merchant decides (`held_changes`). The demo history's ad groups
(`AdGroup.demo`) are not the shop's: they never count towards it, open it, or are held by it.
"""

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef

from automation.models import AdGroup, AdGroupAction, BrakeEpisode, BrakeSettings, HeldChange
from automation.platform import alerts, notes, rows

Result = AdGroupAction.Result
Source = AdGroupAction.Source

BRAKED_SOURCES = (Source.WEBHOOK, Source.RECONCILE)
"""Pauses that follow the stock pass the brake; promotions and the merchant's own do not."""
SENT_RESULTS = (Result.APPLIED, Result.DRY_RUN)


def watched_ad_groups() -> int:
    """How many ad groups follow their stock: the base of the brake's share (the demo's
    ad groups are not the shop's)."""
    return AdGroup.objects.filter(watched_products__enabled=True, demo=False).distinct().count()


def engaged(customer_id: str, ad_group_id: str, now: datetime) -> BrakeEpisode | None:
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
            desired_status=AdGroupAction.Status.PAUSED,
            result__in=SENT_RESULTS,
            source__in=BRAKED_SOURCES,
            requested_at__gte=since,
        )
        .exclude(customer_id=customer_id, ad_group_id=ad_group_id)
        .exclude(Exists(_demo_ad_group()))
        .values("customer_id", "ad_group_id")
        .distinct()
        .count()
    )
    if others < allowed:
        return None
    reason = notes.note(
        "brake_engaged",
        sent=others,
        minutes=config.window_minutes,
        allowed=allowed,
        share=config.max_share_percent,
        watched=watched,
        count=config.max_count,
    )
    episode = BrakeEpisode.objects.create(started_at=now, **notes.reason_fields(reason))
    episode_id = episode.pk
    transaction.on_commit(lambda: alerts.brake_engaged(episode_id))
    return episode


def _demo_ad_group():
    return AdGroup.objects.filter(
        demo=True, customer_id=OuterRef("customer_id"), ad_group_id=OuterRef("ad_group_id")
    )


def hold(fields: dict, episode: BrakeEpisode) -> None:
    """Log the pause as held and keep it (one open held change per ad group) for the merchant."""
    reason = (
        notes.restored(fields["reason_note"]) if fields.get("reason_note") else fields["reason"]
    )
    rows.insert(
        AdGroupAction,
        **{**fields, **notes.reason_fields(notes.note("held_by_brake", reason=reason))},
        result=Result.HELD,
    )
    updated = HeldChange.objects.filter(
        customer_id=fields["customer_id"],
        ad_group_id=fields["ad_group_id"],
        resolution=HeldChange.Resolution.OPEN,
    ).update(**notes.reason_fields(reason), source=fields["source"], held_at=fields["requested_at"])
    if not updated:
        HeldChange.objects.create(
            episode=episode,
            customer_id=fields["customer_id"],
            ad_group_id=fields["ad_group_id"],
            desired_status=fields["desired_status"],
            **notes.reason_fields(reason),
            source=fields["source"],
            held_at=fields["requested_at"],
        )


def open_held(customer_id: str, ad_group_id: str) -> bool:
    """Whether a pause of this ad group waits for the merchant's decision."""
    return HeldChange.objects.filter(
        customer_id=customer_id, ad_group_id=ad_group_id, resolution=HeldChange.Resolution.OPEN
    ).exists()
