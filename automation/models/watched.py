"""Watched products and the ad groups they control.

An ad group runs while at least one of the watched products that control it can be sold
(`automation.stock.rule`); its manual state and the promotions that list it come first.
"""

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from automation.models.catalogue import Variant
from automation.models.inventory import (
    ad_group_id_validator,
    customer_id_validator,
    default_customer_id,
)

DEFAULT_CLICKS_PER_DAY = Decimal("40")
"""The seed's ad group: about 40 paid clicks a day; also the dashboard's rate for unknown groups."""
DEFAULT_COST_PER_CLICK = Decimal("0.60")
"""The seed's average cost of one click, in euros."""


class AdGroup(models.Model):
    """One Google Ads ad group we may switch: its name, the merchant's manual state, and
    whether Google Ads still has it."""

    class Manual(models.TextChoices):
        NONE = "", _("follows the rule")
        PAUSED = "PAUSED", _("manually paused")
        ENABLED = "ENABLED", _("manually enabled")

    class Missing(models.TextChoices):
        NO = "", _("present")
        NOT_FOUND = "not_found", _("not found in Google Ads")
        REMOVED = "removed", _("removed in Google Ads")

    customer_id = models.CharField(
        verbose_name=_("customer id"),
        max_length=10,
        default=default_customer_id,
        validators=[customer_id_validator],
        help_text=_("The Google Ads account (10 digits, without dashes)."),
    )
    ad_group_id = models.CharField(
        verbose_name=_("ad group id"),
        max_length=20,
        validators=[ad_group_id_validator],
        help_text=_("The ad group's number in Google Ads (in its URL)."),
    )
    name = models.CharField(verbose_name=_("name"), max_length=255, blank=True)
    campaign_name = models.CharField(verbose_name=_("campaign"), max_length=255, blank=True)
    # A manual state wins over everything else until the merchant releases it; set and
    # cleared only through automation.stock.manual.
    manual_status = models.CharField(
        verbose_name=_("manual status"),
        max_length=8,
        blank=True,
        choices=Manual.choices,
        help_text=_(
            "Set by “Pause manually” and “Enable manually”: the ad group keeps this status "
            "whatever the stock does, until you release it."
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
    )
    manual_at = models.DateTimeField(verbose_name=_("manually set at"), null=True, blank=True)
    missing = models.CharField(
        verbose_name=_("in Google Ads"),
        max_length=10,
        blank=True,
        choices=Missing.choices,
        help_text=_(
            "Set when Google Ads reports the ad group removed or unknown: it is skipped until "
            "the nightly run finds it again."
        ),
    )
    missing_since = models.DateTimeField(verbose_name=_("missing since"), null=True, blank=True)
    demo = models.BooleanField(
        verbose_name=_("demo"),
        default=False,
        editable=False,
        help_text=_(
            "Made by the demo history: never counted or held by the safety brake, removed "
            "with the demo."
        ),
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

    class Meta:
        verbose_name = _("ad group")
        verbose_name_plural = _("ad groups")
        ordering = ["name", "ad_group_id"]
        constraints = [
            models.UniqueConstraint(fields=["customer_id", "ad_group_id"], name="ad_group_unique")
        ]

    def __str__(self) -> str:
        return self.name or gettext("ad group %(id)s") % {"id": self.ad_group_id}

    @property
    def key(self) -> tuple[str, str]:
        return (self.customer_id, self.ad_group_id)


class WatchedProduct(models.Model):
    """A product whose stock controls ad groups: they pause when it can no longer be sold."""

    product_id = models.BigIntegerField(
        verbose_name=_("product id"),
        null=True,
        blank=True,
        db_index=True,
        help_text=_(
            "Shopify's product id (in the product's admin URL). Empty only for a product "
            "watched by one inventory item until Shopify names its product."
        ),
    )
    label = models.CharField(
        verbose_name=_("label"),
        max_length=200,
        help_text=_('What you call it, e.g. "Winterzauber".'),
    )
    variants = models.ManyToManyField(
        Variant,
        verbose_name=_("variants"),
        blank=True,
        related_name="watched_by",
        help_text=_("Only these variants count; none chosen means all variants of the product."),
    )
    ad_groups = models.ManyToManyField(
        AdGroup,
        verbose_name=_("ad groups"),
        related_name="watched_products",
        help_text=_("The ad groups that advertise this product."),
    )
    pause_at = models.IntegerField(
        verbose_name=_("pause at"),
        default=0,
        help_text=_(
            "Pause when the stock of the counted variants over the counted locations is at "
            "or below this number (0: when sold out)."
        ),
    )
    resume_at = models.IntegerField(
        verbose_name=_("resume above"),
        null=True,
        blank=True,
        help_text=_(
            "Once paused, run again only when the stock is above this number, so stock "
            "around the threshold does not switch the ads with every sale. Empty: the same "
            "as “pause at”."
        ),
    )
    enabled = models.BooleanField(
        verbose_name=_("enabled"),
        default=True,
        help_text=_("Switch off to stop this product controlling its ad groups for now."),
    )
    demo = models.BooleanField(
        verbose_name=_("demo"),
        default=False,
        editable=False,
        help_text=_("Made by the demo history: removed with the demo, and only then."),
    )
    # What the stock said the last time the product was decided (automation.stock.apply):
    # the memory the resume level needs, and what the status column shows.
    sellable = models.BooleanField(verbose_name=_("sellable"), null=True, blank=True)
    stock = models.IntegerField(verbose_name=_("stock"), null=True, blank=True)
    reason = models.JSONField(
        verbose_name=_("reason"),
        default=dict,
        blank=True,
        help_text=_("What decided, as a code with its values (automation.stock.rule.Reason)."),
    )
    decided_at = models.DateTimeField(verbose_name=_("decided at"), null=True, blank=True)

    class Meta:
        verbose_name = _("watched product")
        verbose_name_plural = _("watched products")
        ordering = ["label", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(resume_at__isnull=True) | Q(resume_at__gte=models.F("pause_at")),
                name="watched_product_resume_not_below_pause",
            )
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def resume_level(self) -> int:
        """The level the stock must exceed to run again after a pause."""
        return self.pause_at if self.resume_at is None else self.resume_at

    def clean(self) -> None:
        super().clean()
        if self.resume_at is not None and self.resume_at < self.pause_at:
            raise ValidationError({"resume_at": _("“Resume above” cannot be below “pause at”.")})
