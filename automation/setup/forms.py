"""The pickers of the admin's forms: pick the product and the ad group by name, not by id.

Each id field keeps its plain input (it still works by hand, and does where no connection is
set up) and gains a search box below it; choosing a result fills the id, and the label or the
account id beside it. The script is a few lines of plain JavaScript rendered with the box.
"""

from __future__ import annotations

from django import forms
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from . import pickers


class PickerInput(forms.TextInput):
    """A text input for an id, with a search box that fills it from a picker's results."""

    def __init__(self, source: str, placeholder: str, attrs: dict | None = None) -> None:
        super().__init__(attrs={"inputmode": "numeric", "class": "vTextField", **(attrs or {})})
        self.source = source  # "products" or "ad-groups"
        self.placeholder = placeholder

    def available(self) -> bool:
        if self.source == "products":
            return pickers.products_available()
        return pickers.ad_groups_available()

    def render(self, name, value, attrs=None, renderer=None) -> SafeString:
        field = super().render(name, value, attrs, renderer)
        field_id = (attrs or {}).get("id") or f"id_{name}"
        html = render_to_string(
            "admin/setup_picker.html",
            {
                "field": field,
                "available": self.available(),
                "source": self.source,
                "url": reverse(f"setup-pick-{self.source}"),
                "target": field_id,
                "prefix": field_id[: len(field_id) - len(name)],
                "placeholder": self.placeholder,
            },
        )
        return mark_safe(html)  # noqa: S308 (rendered by the template engine, escaped)
