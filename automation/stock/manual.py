"""The merchant's manual pause and enable: they win over everything until released."""

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from automation.models import AdGroup, AdGroupAction
from automation.stock import apply

MANUAL = AdGroupAction.Source.MANUAL


def set_manual(
    group: AdGroup, status: str, reason: str, user: AbstractBaseUser | None
) -> apply.Settled:
    """Pause or enable the ad group by hand, at once; the state holds until `release_manual`."""
    with transaction.atomic():
        apply.lock_ad_groups([group.key])  # lock first, like every other caller
        now = timezone.now()
        AdGroup.objects.filter(pk=group.pk).update(
            manual_status=status, manual_reason=reason, manual_by=user, manual_at=now
        )
        group.manual_status, group.manual_reason, group.manual_by, group.manual_at = (
            status,
            reason,
            user,
            now,
        )
        (settled,) = apply.settle([group.key], source=MANUAL)
    return settled


def release_manual(group: AdGroup, user: AbstractBaseUser | None) -> apply.Settled:
    """End the manual state: the rule decides again, at once."""
    name = user.get_username() if user is not None else "?"
    with transaction.atomic():
        apply.lock_ad_groups([group.key])
        AdGroup.objects.filter(pk=group.pk).update(
            manual_status="", manual_reason="", manual_by=None, manual_at=None
        )
        group.manual_status, group.manual_reason, group.manual_by, group.manual_at = (
            "",
            "",
            None,
            None,
        )
        prefix = ("manual_released", {"who": name})
        (settled,) = apply.settle([group.key], source=MANUAL, prefix=prefix)
    return settled
