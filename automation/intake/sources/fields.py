"""Readers for the fields of vendor bodies: each returns a typed value or raises InvalidPayload.

The reason texts name the field, so a delivery that ends `invalid` tells the merchant which
value was unusable.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext

from automation.intake.sources import parse_timestamp
from automation.platform.exceptions import InvalidPayload

NOT_AN_OBJECT = "body is not a JSON object"
_BIGINT = 2**63 - 1
# The most characters of one text field that any cleaning, regex or address parser reads;
# a longer value is cut first (`bounded`). Above every field we keep (the recovery URL's
# 2,000 the longest), so only a hostile value loses anything.
MAX_FIELD_CHARS = 4096
# A phone number is kept only as a pseudonym of its digits: more than this is no number.
PHONE_MAX_CHARS = 64


def bounded(value: object, limit: int = MAX_FIELD_CHARS) -> object:
    """A string cut to `limit` characters, anything else as it is: what every parser does to a
    text field before reading it, so a field's length cannot make a regex (or an HTML or
    address parser) slow; one such regex was quadratic in a name's length."""
    return value[:limit] if isinstance(value, str) else value


def json_object(payload: object, problem: str = NOT_AN_OBJECT) -> dict:
    """The body as a dict; anything else (a list, a string, a number) is unusable."""
    if not isinstance(payload, dict):
        raise InvalidPayload(problem)
    return payload


def text(value: object, name: str, limit: int, *, required: bool = False) -> str:
    """A string of at most `limit` characters, stripped; null is "" unless `required`."""
    if value is None and not required:
        return ""
    if isinstance(value, str) and len(value) > limit:
        raise InvalidPayload(f"{name} is longer than {limit} characters")
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidPayload(f"{name} must be a{' non-empty' if required else ''} string")
    return value.strip()


def amount(value: object, name: str) -> Decimal:
    """A non-negative money amount below 10^10, as Shopify's decimal strings carry it."""
    if type(value) not in (str, int):
        raise InvalidPayload(f"{name} must be a decimal string")
    try:
        parsed = Decimal(str(value))
    except InvalidOperation:
        raise InvalidPayload(f"{name} must be a decimal string") from None
    if not parsed.is_finite() or not 0 <= parsed < Decimal("1e10"):
        raise InvalidPayload(f"{name} must be a non-negative amount")
    return parsed.quantize(Decimal("0.01"))


def positive_int(payload: dict, key: str, limit: int = _BIGINT) -> int:
    """`payload[key]` as a positive integer up to `limit` (a bool is not one)."""
    value = payload.get(key)
    if type(value) is not int or not 0 < value <= limit:
        raise InvalidPayload(f"{key} must be a positive integer")
    return value


def optional_id(value: object) -> int | None:
    """A positive 64-bit id, or None for anything else (ids we only keep when usable)."""
    return value if type(value) is int and 0 < value < 2**63 else None


def shopify_customer_id(value: object) -> int | None:
    """A Shopify customer id (a positive 64-bit integer, also accepted as a digit string)."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    return value if type(value) is int and 0 < value < 2**63 else None


# No sender's instant lies before this: Shopify was founded in 2006 (Stripe in 2010).
EARLIEST_INSTANT = datetime(2006, 1, 1, tzinfo=UTC)


def timestamp(value: object, name: str, *, required: bool) -> datetime | None:
    """An ISO 8601 instant with offset, and a possible one (`possible_instant`); null is None
    unless `required`."""
    if value is None and not required:
        return None
    parsed = parse_timestamp(bounded(value, 64)) if isinstance(value, str) else None
    if parsed is None:
        raise InvalidPayload(f"{name} must be an ISO 8601 timestamp with offset")
    return possible_instant(parsed, name)


def possible_instant(instant: datetime, name: str) -> datetime:
    """`instant`, unless it lies after now + WEBHOOK_MAX_FUTURE_SECONDS or before
    EARLIEST_INSTANT: then InvalidPayload with the reason.

    Every sender timestamp guards against stale messages (a newer one stored wins), so one
    dated in the far future would make every real later message `stale` for good. A few
    minutes ahead is the senders' clock skew; more is no time a message was sent at.
    """
    # Compared as given: converting year 9999 at -12:00 to UTC overflows Python's datetime.
    if instant > _latest_instant():
        raise InvalidPayload(_in_the_future(name, instant.isoformat()))
    if instant < EARLIEST_INSTANT:
        raise InvalidPayload(_too_early(name, instant.isoformat()))
    return instant


def epoch_instant(value: object, name: str) -> datetime:
    """A Unix time in whole seconds (Stripe's `created`) as a possible instant in UTC."""
    if type(value) is not int:
        raise InvalidPayload(f"{name} must be a Unix timestamp")
    # Checked as a number first: fromtimestamp() raises for years past 9999.
    if value > _latest_instant().timestamp():
        raise InvalidPayload(_in_the_future(name, str(value)))
    if value < EARLIEST_INSTANT.timestamp():
        raise InvalidPayload(_too_early(name, str(value)))
    return datetime.fromtimestamp(value, tz=UTC)


def _latest_instant() -> datetime:
    return timezone.now() + timedelta(seconds=settings.WEBHOOK_MAX_FUTURE_SECONDS)


def _in_the_future(name: str, shown: str) -> str:
    return gettext("%(name)s %(value)s lies more than %(seconds)d seconds in the future") % {
        "name": name,
        "value": shown[:64],
        "seconds": settings.WEBHOOK_MAX_FUTURE_SECONDS,
    }


def _too_early(name: str, shown: str) -> str:
    return gettext("%(name)s %(value)s lies before %(earliest)s") % {
        "name": name,
        "value": shown[:64],
        "earliest": EARLIEST_INSTANT.date().isoformat(),
    }


def raw_email(value: object, name: str) -> str:
    """The sender's address field as given: a string or null, anything else is malformed."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidPayload(f"{name} must be a string")
    return bounded(value)


def phone(*candidates: object) -> str:
    """The first phone number given as a string; we keep only its pseudonym, for redaction."""
    return next(
        (
            bounded(value, PHONE_MAX_CHARS)
            for value in candidates
            if isinstance(value, str) and value
        ),
        "",
    )


def dig(payload: object, *keys: str) -> object:
    """`payload[k1][k2]…`, or None as soon as a level is not an object."""
    for key in keys:
        if not isinstance(payload, dict):
            return None
        payload = payload.get(key)
    return payload
