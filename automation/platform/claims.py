"""Claims: an action done at most once, decided by the database's unique key.

Written with the ORM, no hand-written SQL: the unique INSERT and the conditional UPDATE are what
correctness needs, and claims are taken once per reminder, off the webhook hot paths.
"""

from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from automation.models import Claim


def claim_once(key: str, ttl: timedelta) -> bool:
    """Take the claim `key` for `ttl`; False when someone holds it and it has not expired.

    The INSERT is made unique by the database; an expired claim counts as free and is taken
    over by a conditional UPDATE whose row count says who won.
    """
    now = timezone.now()
    try:
        with transaction.atomic():
            Claim.objects.create(key=key, created_at=now, expires_at=now + ttl)
        return True
    except IntegrityError:
        taken = Claim.objects.filter(key=key, expires_at__lte=now).update(
            created_at=now, expires_at=now + ttl
        )
        return taken > 0


def is_claimed(key: str) -> bool:
    """Whether a live claim exists (read-only; use claim_once to act)."""
    return Claim.objects.filter(key=key, expires_at__gt=timezone.now()).exists()


def release(key: str) -> None:
    """Give a claim back, e.g. when the action it guarded failed and should be retried."""
    Claim.objects.filter(key=key).delete()


def delete_expired() -> int:
    """Remove claims past their expiry (the nightly job calls this)."""
    deleted, _ = Claim.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted
