"""The suppression list: addresses that get no reminder again, whoever put them there.

One owner for adding and looking up, so the unsubscribe link, the mail service's bounces and
complaints and the reminders' check all compare the same key (automation/platform/addresses.py).
"""

from django.db import IntegrityError, transaction

from automation.models import SuppressedAddress
from automation.platform.addresses import identifying_address

Reason = SuppressedAddress.Reason


def suppress(email: str, reason: str = Reason.UNSUBSCRIBE_LINK, detail: str = "") -> bool:
    """Put the address on the list; False when it was already there (its first reason stays).

    The unique key on the address decides, so two copies of one event make one row.
    """
    key = identifying_address(email) or email.strip().lower()
    try:
        with transaction.atomic():
            SuppressedAddress.objects.create(email=key, reason=reason, detail=detail[:255])
    except IntegrityError:
        if not SuppressedAddress.objects.filter(email=key).exists():
            raise
        return False
    return True


def reason_for(key: str) -> str | None:
    """Why the address (as `address_key` gives it) is suppressed, or None when it is not."""
    return SuppressedAddress.objects.filter(email=key).values_list("reason", flat=True).first()
