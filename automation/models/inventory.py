"""Watched products and the newest stock level we know per location."""

from decimal import Decimal

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

customer_id_validator = RegexValidator(r"^\d{10}$", "Google Ads customer ids have 10 digits.")
ad_group_id_validator = RegexValidator(r"^\d{1,20}$", "An ad group id is a number.")


def default_customer_id() -> str:
    """The shop's Google Ads account, so the merchant rarely has to type it."""
    return settings.GOOGLE_ADS_CUSTOMER_ID


class WatchedItem(models.Model):
    """A product whose ad group follows its stock: paused when sold out, enabled again after."""

    inventory_item_id = models.BigIntegerField(
        db_index=True,
        help_text="Shopify's inventory item id of the product variant (Products → variant → "
        "inventory; also in the inventory_levels/update webhook).",
    )
    label = models.CharField(max_length=200, help_text='What you call it, e.g. "Winterzauber".')
    ad_group_id = models.CharField(
        max_length=20,
        validators=[ad_group_id_validator],
        help_text="The Google Ads ad group that advertises this product (the number in its URL).",
    )
    customer_id = models.CharField(
        max_length=10,
        default=default_customer_id,
        validators=[customer_id_validator],
        help_text="The Google Ads account (10 digits, without dashes).",
    )
    pause_at = models.IntegerField(
        default=0,
        help_text="Pause the ad group when the stock over all locations is at or below this "
        "number; enable it again when it is above.",
    )
    enabled = models.BooleanField(
        default=True, help_text="Switch off to stop touching this ad group for now."
    )
    clicks_per_day = models.DecimalField(
        max_digits=8,
        decimal_places=2,
        default=Decimal("40"),
        help_text="About how many paid clicks this ad group gets a day (Google Ads shows it); "
        "the dashboard uses it to price the minutes an ad ran for a sold-out product.",
    )
    cost_per_click = models.DecimalField(
        max_digits=8,
        decimal_places=2,
        default=Decimal("0.60"),
        help_text="What one click costs you on average, in euros.",
    )

    class Meta:
        ordering = ["label", "ad_group_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["inventory_item_id", "ad_group_id"], name="watched_item_unique_ad_group"
            )
        ]

    def __str__(self) -> str:
        return f"{self.label} → ad group {self.ad_group_id}"


class StockLevel(models.Model):
    """Newest known stock per (item, location); written only through the stale guard."""

    inventory_item_id = models.BigIntegerField()
    location_id = models.BigIntegerField()
    available = models.IntegerField(
        null=True, blank=True, help_text="Empty when Shopify does not track this item's stock."
    )
    updated_at = models.DateTimeField(help_text="Shopify's timestamp of this level.")
    recorded_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["inventory_item_id", "location_id"], name="stock_level_unique_location"
            )
        ]

    def __str__(self) -> str:
        return f"item {self.inventory_item_id} @ {self.location_id}: {self.available}"
