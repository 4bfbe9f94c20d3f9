"""The nightly reconciliation runs: one row per pass over Shopify's true stock."""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _


class ReconcileRun(models.Model):
    """One pass over Shopify's true stock; nightly runs are unique per local date."""

    class Trigger(models.TextChoices):
        NIGHTLY = "nightly", _("nightly")
        MANUAL = "manual", _("manual")

    class Status(models.TextChoices):
        RUNNING = "running", _("running")
        OK = "ok", _("ok")
        CORRECTED = "corrected", _("ok, with corrections")
        ERRORS = "errors", _("errors")
        NOT_CONFIGURED = "not_configured", _("not configured (no Admin API access)")

    local_date = models.DateField(
        verbose_name=_("local date"), help_text=_("The date in the shop's time zone.")
    )
    trigger = models.CharField(
        verbose_name=_("trigger"), max_length=16, choices=Trigger.choices, default=Trigger.NIGHTLY
    )
    status = models.CharField(
        verbose_name=_("status"), max_length=16, choices=Status.choices, default=Status.RUNNING
    )
    started_at = models.DateTimeField(verbose_name=_("started at"))
    finished_at = models.DateTimeField(verbose_name=_("finished at"), null=True, blank=True)
    duration_seconds = models.FloatField(verbose_name=_("duration seconds"), null=True, blank=True)
    items_checked = models.PositiveIntegerField(verbose_name=_("items checked"), default=0)
    levels_changed = models.PositiveIntegerField(verbose_name=_("levels changed"), default=0)
    corrections = models.JSONField(
        verbose_name=_("corrections"),
        default=list,
        help_text=_(
            "Ad groups whose status was wrong: a missed or late webhook (stock), or changed in "
            "Google Ads by hand (drift)."
        ),
    )
    ad_groups_read = models.PositiveIntegerField(
        verbose_name=_("ad group statuses read"),
        default=0,
        help_text=_("Watched ad groups whose real status was read from Google Ads."),
    )
    held = models.JSONField(
        verbose_name=_("held by the safety brake"),
        default=list,
        help_text=_("Pauses the safety brake holds: not sent, waiting for your decision."),
    )
    subscriptions_created = models.JSONField(verbose_name=_("subscriptions created"), default=list)
    errors = models.JSONField(verbose_name=_("errors"), default=list)
    claims_deleted = models.PositiveIntegerField(verbose_name=_("claims deleted"), default=0)
    bodies_dropped = models.PositiveIntegerField(verbose_name=_("bodies dropped"), default=0)

    class Meta:
        verbose_name = _("reconciliation run")
        verbose_name_plural = _("reconciliation runs")
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["local_date"],
                condition=Q(trigger="nightly"),
                name="reconcile_one_nightly_run_per_date",
            )
        ]

    def __str__(self) -> str:
        return gettext("%(trigger)s run %(date)s (%(status)s)") % {
            "trigger": self.get_trigger_display(),
            "date": self.local_date,
            "status": self.get_status_display(),
        }
