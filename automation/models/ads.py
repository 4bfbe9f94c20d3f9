"""Every ad group status change we asked Google Ads for, and how it went."""

from django.db import models


class AdGroupAction(models.Model):
    """One requested status change: the log the merchant reads to see what we did and why."""

    class Status(models.TextChoices):
        PAUSED = "PAUSED", "paused"
        ENABLED = "ENABLED", "enabled"

    class Source(models.TextChoices):
        WEBHOOK = "webhook", "webhook"
        RECONCILE = "reconcile", "nightly reconciliation"
        PROMOTION = "promotion", "promotion"
        MANUAL = "manual", "manual"

    class Result(models.TextChoices):
        APPLIED = "applied", "applied"
        DRY_RUN = "dry_run", "dry run (not sent)"
        FAILED = "failed", "failed"

    customer_id = models.CharField(max_length=10)
    ad_group_id = models.CharField(max_length=20, db_index=True)
    desired_status = models.CharField(max_length=8, choices=Status.choices)
    reason = models.CharField(max_length=500)
    source = models.CharField(max_length=16, choices=Source.choices)
    delivery = models.ForeignKey(
        "automation.Delivery",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="ad_group_actions",
    )
    result = models.CharField(max_length=8, choices=Result.choices)
    error = models.TextField(blank=True)
    requested_at = models.DateTimeField()
    applied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at", "-pk"]
        indexes = [models.Index(fields=["customer_id", "ad_group_id", "-requested_at"])]

    def __str__(self) -> str:
        return f"{self.ad_group_id} → {self.desired_status} ({self.result})"
