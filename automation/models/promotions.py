"""Promotions that start and end at local wall-clock times, and the nightly reconciliation runs."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from .inventory import ad_group_id_validator, customer_id_validator, default_customer_id


def default_time_zone() -> str:
    return settings.TIME_ZONE


class Promotion(models.Model):
    """Ad groups enabled at a local start and paused at a local end (e.g. midnight in Hamburg)."""

    class Status(models.TextChoices):
        SCHEDULED = "scheduled", "scheduled"
        RUNNING = "running", "running"
        ENDED = "ended", "ended"

    name = models.CharField(max_length=200, help_text='E.g. "Adventsaktion".')
    time_zone = models.CharField(
        max_length=64,
        default=default_time_zone,
        help_text="The time zone of the start and end you type (IANA name, e.g. Europe/Berlin).",
    )
    start_date = models.DateField(null=True, blank=True, help_text="Local start date (optional).")
    start_time = models.TimeField(null=True, blank=True, help_text="Local start time.")
    end_date = models.DateField(null=True, blank=True, help_text="Local end date (optional).")
    end_time = models.TimeField(
        null=True, blank=True, help_text="Local end time; 00:00 of the next day ends a day."
    )
    start_at = models.DateTimeField(null=True, blank=True, help_text="The start as an instant.")
    end_at = models.DateTimeField(null=True, blank=True, help_text="The end as an instant.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SCHEDULED)
    started_at = models.DateTimeField(null=True, blank=True, help_text="When the start ran.")
    start_late_seconds = models.FloatField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True, help_text="When the end ran.")
    end_late_seconds = models.FloatField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-end_at", "-start_at"]

    def __str__(self) -> str:
        return self.name


class PromotionAdGroup(models.Model):
    """One ad group a promotion enables at its start and pauses at its end."""

    promotion = models.ForeignKey(Promotion, on_delete=models.CASCADE, related_name="ad_groups")
    customer_id = models.CharField(
        max_length=10,
        default=default_customer_id,
        validators=[customer_id_validator],
        help_text="The Google Ads account (10 digits).",
    )
    ad_group_id = models.CharField(
        max_length=20, validators=[ad_group_id_validator], help_text="The ad group to switch."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["promotion", "customer_id", "ad_group_id"], name="promotion_unique_ad_group"
            )
        ]

    def __str__(self) -> str:
        return f"{self.customer_id}/{self.ad_group_id}"


class ReconcileRun(models.Model):
    """One pass over Shopify's true stock; nightly runs are unique per local date."""

    class Trigger(models.TextChoices):
        NIGHTLY = "nightly", "nightly"
        MANUAL = "manual", "manual"

    class Status(models.TextChoices):
        RUNNING = "running", "running"
        OK = "ok", "ok"
        CORRECTED = "corrected", "ok, with corrections"
        ERRORS = "errors", "errors"
        NOT_CONFIGURED = "not_configured", "not configured (no SHOPIFY_ADMIN_TOKEN)"

    local_date = models.DateField(help_text="The date in the shop's time zone.")
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.NIGHTLY)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)
    items_checked = models.PositiveIntegerField(default=0)
    levels_changed = models.PositiveIntegerField(default=0)
    corrections = models.JSONField(
        default=list, help_text="Ad groups whose status was wrong: each a missed or late webhook."
    )
    subscriptions_created = models.JSONField(default=list)
    errors = models.JSONField(default=list)
    claims_deleted = models.PositiveIntegerField(default=0)
    bodies_dropped = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["local_date"],
                condition=Q(trigger="nightly"),
                name="reconcile_one_nightly_run_per_date",
            )
        ]

    def __str__(self) -> str:
        return f"{self.trigger} run {self.local_date} ({self.status})"
