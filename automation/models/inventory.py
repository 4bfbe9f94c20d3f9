"""Watched products and the newest stock level we know per location."""

from decimal import Decimal

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

customer_id_validator = RegexValidator(r"^\d{10}$", _("Google Ads customer ids have 10 digits."))
ad_group_id_validator = RegexValidator(r"^\d{1,20}$", _("An ad group id is a number."))

DEFAULT_CLICKS_PER_DAY = Decimal("40")
"""The seed's ad group: about 40 paid clicks a day; also the dashboard's rate for unknown groups."""
DEFAULT_COST_PER_CLICK = Decimal("0.60")
"""The seed's average cost of one click, in euros."""


def default_customer_id() -> str:
    """The shop's Google Ads account, so the merchant rarely has to type it."""
    return settings.GOOGLE_ADS_CUSTOMER_ID


class WatchedItem(models.Model):
    """A product whose ad group follows its stock: paused when sold out, enabled again after."""

    inventory_item_id = models.BigIntegerField(
        verbose_name=_("inventory item id"),
        db_index=True,
        help_text=_(
            "Shopify's inventory item id of the product variant (Products → variant → "
            "inventory; also in the inventory_levels/update webhook)."
        ),
    )
    label = models.CharField(
        verbose_name=_("label"),
        max_length=200,
        help_text=_('What you call it, e.g. "Winterzauber".'),
    )
    ad_group_id = models.CharField(
        verbose_name=_("ad group id"),
        max_length=20,
        validators=[ad_group_id_validator],
        help_text=_(
            "The Google Ads ad group that advertises this product (the number in its URL)."
        ),
    )
    customer_id = models.CharField(
        verbose_name=_("customer id"),
        max_length=10,
        default=default_customer_id,
        validators=[customer_id_validator],
        help_text=_("The Google Ads account (10 digits, without dashes)."),
    )
    pause_at = models.IntegerField(
        verbose_name=_("pause at"),
        default=0,
        help_text=_(
            "Pause the ad group when the stock over all locations is at or below this "
            "number; enable it again when it is above."
        ),
    )
    enabled = models.BooleanField(
        verbose_name=_("enabled"),
        default=True,
        help_text=_("Switch off to stop touching this ad group for now."),
    )
    clicks_per_day = models.DecimalField(
        verbose_name=_("clicks per day"),
        max_digits=8,
        decimal_places=2,
        default=DEFAULT_CLICKS_PER_DAY,
        help_text=_(
            "About how many paid clicks this ad group gets a day (Google Ads shows it); "
            "the dashboard uses it to price the minutes an ad ran for a sold-out product."
        ),
    )
    cost_per_click = models.DecimalField(
        verbose_name=_("cost per click"),
        max_digits=8,
        decimal_places=2,
        default=DEFAULT_COST_PER_CLICK,
        help_text=_("What one click costs you on average, in euros."),
    )
    # A manual state wins over the stock until the merchant releases it
    # (decisions.status_to_set); set and cleared only through inventory.set_manual/release_manual.
    manual_status = models.CharField(
        verbose_name=_("manual status"),
        max_length=8,
        blank=True,
        choices=[("PAUSED", _("manually paused")), ("ENABLED", _("manually enabled"))],
        help_text=_(
            "Set by the actions “Pause manually” and “Enable manually”: the ad group keeps "
            "this status whatever the stock does, until you release it."
        ),
    )
    manual_reason = models.CharField(
        verbose_name=_("manual reason"),
        max_length=200,
        blank=True,
        help_text=_("Why the ad group is held manually."),
    )
    manual_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("manually set by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("Who set the manual status."),
    )
    manual_at = models.DateTimeField(
        verbose_name=_("manually set at"),
        null=True,
        blank=True,
        help_text=_("When the manual status was set."),
    )

    class Meta:
        verbose_name = _("watched item")
        verbose_name_plural = _("watched items")
        ordering = ["label", "ad_group_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["inventory_item_id", "ad_group_id"], name="watched_item_unique_ad_group"
            )
        ]

    def __str__(self) -> str:
        return gettext("%(label)s → ad group %(ad_group_id)s") % {
            "label": self.label,
            "ad_group_id": self.ad_group_id,
        }


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
