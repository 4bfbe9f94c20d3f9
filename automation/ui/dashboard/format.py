"""Numbers, money, durations and dates as the merchant reads them, in the active language
(Django's localisation, thousands always grouped): the dashboard's one place for it."""

from datetime import date, timedelta
from decimal import Decimal

from django.utils.formats import date_format, number_format
from django.utils.translation import gettext as _

CENT = Decimal("0.01")


def signed_count(value: float) -> str:
    """+12, −3, 0: whole orders with their sign, in the locale's number format."""
    rounded = round(value)
    text = number_format(abs(rounded))
    if rounded > 0:
        return f"+{text}"
    if rounded < 0:
        return f"−{text}"
    return text


def format_duration(value: timedelta) -> str:
    """Short human duration: 2 s, 7.5 min, 43 h, 1 h 20 min."""
    seconds = value.total_seconds()
    if seconds < 60:
        return _("%(n)s s") % {"n": _number(seconds)}
    if seconds < 3600:
        return _("%(n)s min") % {"n": _number(seconds / 60)}
    hours, rest = divmod(round(seconds / 60), 60)
    if rest == 0 or hours >= 24:
        return _("%(n)s h") % {"n": _number(seconds / 3600, places=0 if hours >= 24 else 1)}
    return _("%(h)d h %(m)d min") % {"h": hours, "m": rest}


def format_euros(amount: Decimal) -> str:
    """Cents for amounts a merchant counts, "< 0,01 €" for the fractions our reaction costs."""
    if Decimal(0) < amount < CENT:
        return f"< {format_euros(CENT)}"
    return _("%(amount)s €") % {"amount": localized(amount.quantize(CENT), 2)}


def format_percent(rate: Decimal) -> str:
    """0.04 → "4 %", 0.055 → "5,5 %" in German (Django's localisation)."""
    return _("%(n)s %%") % {"n": _number(Decimal(rate) * 100)}


def format_clicks(clicks: Decimal) -> str:
    """Two decimals; one significant digit for the fraction of a click a fast reaction costs."""
    if Decimal(0) < clicks < CENT:
        significant = Decimal(clicks).quantize(Decimal(1).scaleb(Decimal(clicks).adjusted()))
        return localized(significant, -significant.as_tuple().exponent)
    return localized(Decimal(clicks).quantize(CENT), 2)


def localized(value: Decimal | int, places: int | None = None) -> str:
    """A number in the active language's format, thousands grouped: 1.234,56 in German.

    Django's localisation (`number_format` with the locale's separators and grouping), forced to
    group whatever USE_THOUSAND_SEPARATOR says: a merchant reads 1.234 €, never 1234 €.
    """
    return number_format(value, places, use_l10n=True, force_grouping=True)


def _number(value: float | Decimal, places: int = 1) -> str:
    """One decimal place unless it is zero: 2 s, 7.5 min (7,5 min in German)."""
    rounded = Decimal(str(value)).quantize(Decimal(1).scaleb(-places))
    if places == 1 and rounded == rounded.to_integral_value():
        return localized(rounded, 0)
    return localized(rounded, places)


def number(value: float) -> str:
    """A value as people read it in the active language: 1,000.5 in English, 1.000,5 in German."""
    text = f"{value:.12g}" if abs(value) < 1e6 else f"{value:.2g}"
    return number_format(Decimal(text), use_l10n=True, force_grouping=True)


def day(value: date) -> str:
    """A chart's day label: "1. Dez." in German."""
    return date_format(value, "MONTH_DAY_FORMAT")
