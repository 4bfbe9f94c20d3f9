"""Log records that carry the delivery being processed, and never a full e-mail address or a
secret."""

import contextvars
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

from automation.platform.masking import mask_secrets

current_delivery: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "current_delivery", default=None
)
_EMAIL = re.compile(r"([A-Za-z0-9._%+-])[A-Za-z0-9._%+-]*@([A-Za-z0-9.-]+\.[A-Za-z]{2,})")


@contextmanager
def delivery_context(delivery_id: int) -> Iterator[None]:
    """Every log line inside names this delivery, so one grep finds its whole story."""
    token = current_delivery.set(delivery_id)
    try:
        yield
    finally:
        current_delivery.reset(token)


class DeliveryIdFilter(logging.Filter):
    """Adds `delivery_id` (or "-") to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        delivery_id = current_delivery.get()
        record.delivery_id = "-" if delivery_id is None else delivery_id
        return True


def redact_emails(text: str) -> str:
    """`kundin@example.com` → `k***@example.com`."""
    return _EMAIL.sub(r"\1***@\2", text)


class RedactEmailsFilter(logging.Filter):
    """A safety net: whatever a library or a careless line logs, addresses leave masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_emails(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


class MaskSecretsFilter(logging.Filter):
    """A safety net like RedactEmailsFilter: a library that logs a vendor's text (the Google Ads
    client logs every fault message) leaves no token in the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_secrets(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True
