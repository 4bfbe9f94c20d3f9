"""Promotions that start and end at local wall-clock times."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from automation.models.inventory import (
    ad_group_id_validator,
    customer_id_validator,
    default_customer_id,
)


def default_time_zone() -> str:
    return settings.TIME_ZONE


class Promotion(models.Model):
    """Ad groups enabled at a local start and paused at a local end (e.g. midnight in Hamburg)."""

    class Status(models.TextChoices):
        SCHEDULED = "scheduled", _("scheduled")
        RUNNING = "running", _("running")
        ENDED = "ended", _("ended")

    name = models.CharField(
        verbose_name=_("name"), max_length=200, help_text=_('E.g. "Adventsaktion".')
    )
    time_zone = models.CharField(
        verbose_name=_("time zone"),
        max_length=64,
        default=default_time_zone,
        help_text=_("The time zone of the start and end you type (IANA name, e.g. Europe/Berlin)."),
    )
    start_date = models.DateField(
        verbose_name=_("start date"),
        null=True,
        blank=True,
        help_text=_("Local start date (optional)."),
    )
    start_time = models.TimeField(
        verbose_name=_("start time"), null=True, blank=True, help_text=_("Local start time.")
    )
    end_date = models.DateField(
        verbose_name=_("end date"), null=True, blank=True, help_text=_("Local end date (optional).")
    )
    end_time = models.TimeField(
        verbose_name=_("end time"),
        null=True,
        blank=True,
        help_text=_("Local end time; 00:00 of the next day ends a day."),
    )
    start_at = models.DateTimeField(
        verbose_name=_("start at"), null=True, blank=True, help_text=_("The start as an instant.")
    )
    end_at = models.DateTimeField(
        verbose_name=_("end at"), null=True, blank=True, help_text=_("The end as an instant.")
    )
    status = models.CharField(
        verbose_name=_("status"), max_length=16, choices=Status.choices, default=Status.SCHEDULED
    )
    started_at = models.DateTimeField(
        verbose_name=_("started at"), null=True, blank=True, help_text=_("When the start ran.")
    )
    start_late_seconds = models.FloatField(
        verbose_name=_("start late seconds"), null=True, blank=True
    )
    ended_at = models.DateTimeField(
        verbose_name=_("ended at"), null=True, blank=True, help_text=_("When the end ran.")
    )
    end_late_seconds = models.FloatField(verbose_name=_("end late seconds"), null=True, blank=True)
    last_error = models.TextField(verbose_name=_("last error"), blank=True)

    class Meta:
        verbose_name = _("promotion")
        verbose_name_plural = _("promotions")
        ordering = ["-end_at", "-start_at"]

    def __str__(self) -> str:
        return self.name


class PromotionAdGroup(models.Model):
    """One ad group a promotion enables at its start and pauses at its end."""

    promotion = models.ForeignKey(
        Promotion, on_delete=models.CASCADE, related_name="ad_groups", verbose_name=_("promotion")
    )
    customer_id = models.CharField(
        verbose_name=_("customer id"),
        max_length=10,
        default=default_customer_id,
        validators=[customer_id_validator],
        help_text=_("The Google Ads account (10 digits)."),
    )
    ad_group_id = models.CharField(
        verbose_name=_("ad group id"),
        max_length=20,
        validators=[ad_group_id_validator],
        help_text=_("The ad group to switch."),
    )

    class Meta:
        verbose_name = _("promotion ad group")
        verbose_name_plural = _("promotion ad groups")
        constraints = [
            models.UniqueConstraint(
                fields=["promotion", "customer_id", "ad_group_id"], name="promotion_unique_ad_group"
            )
        ]

    def __str__(self) -> str:
        return f"{self.customer_id}/{self.ad_group_id}"
