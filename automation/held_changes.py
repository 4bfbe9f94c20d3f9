"""The merchant's decision on pauses the safety brake held: apply them or discard them.

Applying sends what the stock says now (it may have recovered since), computed from the stored
levels under the item's lock, past the brake (the merchant decided); discarding leaves the ads as
they are. Either records who decided and when. When no held change is left open, the brake's
episode ends, so the next mass sell-out alerts again.
"""

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from . import ads, inventory
from .exceptions import PermanentAdsError, TransientAdsError
from .models import AdGroupAction, BrakeEpisode, BrakeSettings, HeldChange, WatchedItem

Resolution = HeldChange.Resolution


@dataclass
class Decided:
    """What a decision did: how many changes it settled, the statuses sent, the failures."""

    decided: int = 0
    sent: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def open_changes() -> QuerySet[HeldChange]:
    """The held changes waiting for a decision."""
    return HeldChange.objects.filter(resolution=Resolution.OPEN)


def apply(changes: QuerySet[HeldChange], user: AbstractBaseUser | None) -> Decided:
    """Send each open change's ad group the status its stock says now; failures stay open."""
    decided = Decided()
    for change in list(changes.filter(resolution=Resolution.OPEN)):
        try:
            outcome = _apply_one(change, user)
        except (TransientAdsError, PermanentAdsError) as err:
            decided.errors.append(f"ad group {change.ad_group_id}: {err}")
            continue
        if outcome is not None:
            decided.decided += 1
            decided.sent[change.ad_group_id] = outcome
    end_finished_episodes()
    return decided


def _apply_one(change: HeldChange, user: AbstractBaseUser | None) -> str | None:
    with transaction.atomic():
        # The item's watched rows first, as a webhook takes them, then the held change.
        rows = list(
            WatchedItem.objects.select_for_update()
            .filter(customer_id=change.customer_id, ad_group_id=change.ad_group_id, enabled=True)
            .order_by("pk")
        )
        locked = (
            HeldChange.objects.select_for_update()
            .filter(pk=change.pk, resolution=Resolution.OPEN)
            .first()
        )
        if locked is None:
            return None  # someone else decided meanwhile
        who = _name(user)
        if not rows:
            outcome, status = "no longer watched: nothing sent", ""
        else:
            row = rows[0]
            total = inventory.total_available(row.inventory_item_id)
            status = inventory.desired_status(total, row.pause_at)
            comparison = "≤" if status == AdGroupAction.Status.PAUSED else ">"
            result = ads.apply_status(
                customer_id=change.customer_id,
                ad_group_id=change.ad_group_id,
                status=status,
                reason=gettext(
                    "held change applied by %(who)s: %(label)s: %(total)s available "
                    "%(comparison)s %(pause_at)s"
                )
                % {
                    "who": who,
                    "label": row.label,
                    "total": total,
                    "comparison": comparison,
                    "pause_at": row.pause_at,
                },
                source=locked.source,
                brake=False,
            )
            outcome = f"{status} {result}"
        locked.resolution = Resolution.APPLIED
        locked.resolved_at = timezone.now()
        locked.resolved_by = user if user is not None and user.is_authenticated else None
        locked.applied_status = status
        locked.outcome = outcome
        locked.save(
            update_fields=["resolution", "resolved_at", "resolved_by", "applied_status", "outcome"]
        )
    return outcome


def discard(changes: QuerySet[HeldChange], user: AbstractBaseUser | None) -> Decided:
    """Keep the ads as they are: close the open changes, recording who decided."""
    count = changes.filter(resolution=Resolution.OPEN).update(
        resolution=Resolution.DISCARDED,
        resolved_at=timezone.now(),
        resolved_by=user if user is not None and user.is_authenticated else None,
        outcome=gettext("discarded by %(who)s: nothing sent") % {"who": _name(user)},
    )
    end_finished_episodes()
    return Decided(decided=count)


def end_finished_episodes() -> int:
    """Close the brake's episode once nothing in it waits; the next engagement alerts again.

    Under the settings row's lock, which every hold takes too: no pause is held into an
    episode while it closes.
    """
    with transaction.atomic():
        BrakeSettings.load()
        BrakeSettings.objects.select_for_update().get(pk=1)
        if open_changes().exists():
            return 0
        return BrakeEpisode.objects.filter(is_open=True).update(
            is_open=False, ended_at=timezone.now()
        )


def _name(user: AbstractBaseUser | None) -> str:
    if user is None or not user.is_authenticated:
        return "the system"
    return user.get_username()
