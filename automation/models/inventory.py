"""The newest stock level we know per inventory item and location, and the Google Ads id checks
shared by every model that names an ad group."""

import re

from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from automation.platform import connections

customer_id_validator = RegexValidator(r"^\d{10}$", _("Google Ads customer ids have 10 digits."))
ad_group_id_validator = RegexValidator(r"^\d{1,20}$", _("An ad group id is a number."))
CUSTOMER_ID_INPUT_LENGTH = 20
"""Room for an id typed or pasted as Google Ads shows it (123-456-7890), spaces included."""


def customer_id_digits(text: str) -> str:
    """The id without the dashes and spaces Google Ads shows; the validator judges the rest."""
    return re.sub(r"[\s-]", "", text)


def default_customer_id() -> str:
    """The shop's Google Ads account, so the merchant rarely has to type it."""
    return connections.current().google_ads_customer_id.value


class StockLevel(models.Model):
    """Newest known stock per (item, location); written only through the stale guard."""

    inventory_item_id = models.BigIntegerField(verbose_name=_("inventory item id"))
    location_id = models.BigIntegerField(verbose_name=_("location id"))
    available = models.IntegerField(
        verbose_name=_("available"),
        null=True,
        blank=True,
        help_text=_("Empty when Shopify does not track this item's stock."),
    )
    updated_at = models.DateTimeField(
        verbose_name=_("updated at"), help_text=_("Shopify's timestamp of this level.")
    )
    recorded_at = models.DateTimeField(verbose_name=_("recorded at"), auto_now=True)

    class Meta:
        verbose_name = _("stock level")
        verbose_name_plural = _("stock levels")
        constraints = [
            models.UniqueConstraint(
                fields=["inventory_item_id", "location_id"], name="stock_level_unique_location"
            )
        ]

    def __str__(self) -> str:
        return gettext("item %(item)s @ location %(location)s: %(available)s") % {
            "item": self.inventory_item_id,
            "location": self.location_id,
            "available": "–" if self.available is None else self.available,
        }
