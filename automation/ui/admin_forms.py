"""Admin forms with rules a merchant must be told about in words."""

from decimal import Decimal, InvalidOperation

from django import forms
from django.core.exceptions import ValidationError
from django.utils import formats, timezone
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from automation.models import Promotion, PromotionAdGroup
from automation.promotions import edges as promotions
from automation.ui.setup.forms import CustomerIdField

MISSING_HALF = {
    "start": gettext_lazy("Give both a date and a time for the start."),
    "end": gettext_lazy("Give both a date and a time for the end."),
}


class PromotionForm(forms.ModelForm):
    """Local start and end, converted to instants; gaps and overlaps refused with the reason."""

    class Meta:
        model = Promotion
        fields = ["name", "time_zone", "start_date", "start_time", "end_date", "end_time"]

    def clean_time_zone(self) -> str:
        name = self.cleaned_data["time_zone"].strip()
        try:
            promotions.zone(name)
        except promotions.LocalTimeError as err:
            raise forms.ValidationError(str(err)) from None
        return name

    def clean(self) -> dict:
        data = super().clean()
        zone_name = data.get("time_zone")
        found = {}
        for edge in ("start", "end"):
            day, clock = data.get(f"{edge}_date"), data.get(f"{edge}_time")
            if (day is None) != (clock is None):
                self.add_error(f"{edge}_time", MISSING_HALF[edge])
                continue
            if day is None or not zone_name:
                continue
            try:
                found[edge] = promotions.local_to_instant(day, clock, zone_name)
            except promotions.LocalTimeError as err:
                self.add_error(f"{edge}_time", str(err))
        if "start" in found and "end" in found and found["end"] <= found["start"]:
            self.add_error("end_time", _("The end must come after the start."))
        self.instants = found
        return data

    def schedule_summary(self) -> list[str]:
        """Both times in words, e.g. 'ends 2026-06-01 00:00 Europe/Berlin = 2026-05-31 ...'."""
        data, now = self.cleaned_data, timezone.now()
        return [
            promotions.describe_instant(
                label, data[f"{edge}_date"], data[f"{edge}_time"], data["time_zone"], now
            )
            for edge, label in (("start", _("starts")), ("end", _("ends")))
            if edge in self.instants
        ]


SHOWN_DECIMAL_PLACES = 2
"""A decimal in a form shows at least this many places: 0.0400 as "0,04", 0.125 as "0,125"."""


def shown_decimal(value: Decimal) -> Decimal:
    """The value without the trailing zeros its column adds (0.0400 → 0.04, 0.1000 → 0.10)."""
    if not value.is_finite():
        return value
    places = max(-value.normalize().as_tuple().exponent, SHOWN_DECIMAL_PLACES)
    return value.quantize(Decimal(1).scaleb(-places))


class LocalizedDecimalField(forms.DecimalField):
    """A decimal as the merchant writes it: shown in the page's language ("0,04" in German),
    taken with the language's decimal mark or with a point ("0,04" and "0.04" alike).

    Django's own `localize=True` would drop a point as a thousands separator once
    USE_THOUSAND_SEPARATOR is on ("0.125" → 125); here a point is a thousands separator only
    beside a decimal comma ("1.250,5").
    """

    def __init__(self, **kwargs) -> None:
        kwargs["localize"] = True
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, Decimal):
            return shown_decimal(value)
        return value

    def to_python(self, value) -> Decimal | None:
        if value in self.empty_values:
            return None
        text = str(value).strip()
        mark = formats.get_format("DECIMAL_SEPARATOR")
        if mark != "." and mark in text:
            grouping = formats.get_format("THOUSAND_SEPARATOR")
            for separator in {grouping, ".", "\u00a0", " "}:
                text = text.replace(separator, "")
            text = text.replace(mark, ".")
        try:
            return Decimal(text)
        except InvalidOperation:
            raise ValidationError(self.error_messages["invalid"], code="invalid") from None


class PromotionAdGroupForm(forms.ModelForm):
    """A promotion's ad group: the account may be pasted as Google Ads shows it (123-456-7890)."""

    customer_id = CustomerIdField(
        label=capfirst(PromotionAdGroup._meta.get_field("customer_id").verbose_name),
        help_text=gettext_lazy(
            "The Google Ads account (10 digits; 123-456-7890 as Google Ads shows it)."
        ),
    )

    class Meta:
        model = PromotionAdGroup
        fields = ["customer_id", "ad_group_id"]
