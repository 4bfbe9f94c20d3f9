"""The merchant's decision on pauses the safety brake held: apply them or discard them.

Applying sends what the rule says now (the stock may have recovered since, a manual state may
hold), through the one locked path, past the brake (the merchant decided); discarding leaves
the ads as they are. Either records who decided and when. When no held change is left open,
the brake's episode ends, so the next mass sell-out alerts again.
"""

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from automation.models import BrakeEpisode, BrakeSettings, HeldChange
from automation.stock.apply import Settled, lock_ad_groups, settle

Resolution = HeldChange.Resolution


@dataclass
class Decided:
    """What a decision did: how many changes it settled, the statuses sent, the failures."""

    decided: int = 0
    sent: dict[str, str] = field(default_factory=dict)
    failures: list[tuple[str, Exception]] = field(default_factory=list)
    """(ad group id, the Ads error) per change that stayed open; the caller words the error."""


def open_changes() -> QuerySet[HeldChange]:
    """The held changes waiting for a decision."""
    return HeldChange.objects.filter(resolution=Resolution.OPEN)


def apply(changes: QuerySet[HeldChange], user: AbstractBaseUser | None) -> Decided:
    """Send each open change's ad group the status its stock says now; failures stay open."""
    decided = Decided()
    for change in list(changes.filter(resolution=Resolution.OPEN)):
        settled = _apply_one(change, user)
        if settled is None:
            continue
        if settled.error is not None:
            decided.failures.append((change.ad_group_id, settled.error))
            continue
        decided.decided += 1
        decided.sent[change.ad_group_id] = f"{settled.status} {settled.result}"
    end_finished_episodes()
    return decided


def _apply_one(change: HeldChange, user: AbstractBaseUser | None) -> Settled | None:
    """One held change under its ad group's lock (taken first, as every caller takes it);
    None when someone else decided it meanwhile. A failed call leaves it open."""
    key = (change.customer_id, change.ad_group_id)
    with transaction.atomic():
        lock_ad_groups([key])
        locked = (
            HeldChange.objects.select_for_update()
            .filter(pk=change.pk, resolution=Resolution.OPEN)
            .first()
        )
        if locked is None:
            return None
        prefix = ("held_change_applied", {"who": _name(user)})
        (settled,) = settle([key], source=locked.source, brake_pauses=False, prefix=prefix)
        if settled.error is not None:
            return settled
        locked.resolution = Resolution.APPLIED
        locked.resolved_at = timezone.now()
        locked.resolved_by = user if user is not None and user.is_authenticated else None
        locked.applied_status = settled.status or ""
        locked.outcome = (
            f"{settled.status} {settled.result}"
            if settled.status
            else gettext("nothing to send: %(reason)s") % {"reason": settled.reason}
        )
        locked.save(
            update_fields=["resolution", "resolved_at", "resolved_by", "applied_status", "outcome"]
        )
    return settled


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
