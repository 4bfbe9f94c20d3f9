"""Every ad group status change we asked Google Ads for, and how it went."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class AdGroupAction(models.Model):
    """One requested status change: the log the merchant reads to see what we did and why."""

    class Status(models.TextChoices):
        PAUSED = "PAUSED", _("paused")
        ENABLED = "ENABLED", _("enabled")

    class Source(models.TextChoices):
        WEBHOOK = "webhook", _("webhook")
        RECONCILE = "reconcile", _("nightly reconciliation")
        PROMOTION = "promotion", _("promotion")
        MANUAL = "manual", _("manual")
        ADMIN = "admin", _("admin change")

    class Result(models.TextChoices):
        APPLIED = "applied", _("applied")
        DRY_RUN = "dry_run", _("dry run (not sent)")
        FAILED = "failed", _("failed")

    customer_id = models.CharField(verbose_name=_("customer id"), max_length=10)
    ad_group_id = models.CharField(verbose_name=_("ad group id"), max_length=20, db_index=True)
    desired_status = models.CharField(
        verbose_name=_("desired status"), max_length=8, choices=Status.choices
    )
    reason = models.CharField(verbose_name=_("reason"), max_length=500)
    source = models.CharField(verbose_name=_("source"), max_length=16, choices=Source.choices)
    delivery = models.ForeignKey(
        "automation.Delivery",
        verbose_name=_("delivery"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="ad_group_actions",
    )
    result = models.CharField(verbose_name=_("result"), max_length=8, choices=Result.choices)
    error = models.TextField(verbose_name=_("error"), blank=True)
    requested_at = models.DateTimeField(verbose_name=_("requested at"))
    applied_at = models.DateTimeField(verbose_name=_("applied at"), null=True, blank=True)

    class Meta:
        verbose_name = _("ad group action")
        verbose_name_plural = _("ad group actions")
        ordering = ["-requested_at", "-pk"]
        indexes = [models.Index(fields=["customer_id", "ad_group_id", "-requested_at"])]

    def __str__(self) -> str:
        status, result = self.get_desired_status_display(), self.get_result_display()
        return f"{self.ad_group_id} → {status} ({result})"
