"""Every ad group status change we asked Google Ads for, what Google Ads confirmed, and the
safety brake that holds pauses when too many arrive at once."""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from automation.models.singleton import SingletonSettings

DEFAULT_BRAKE_WINDOW_MINUTES = 10
"""The brake counts the pauses sent within this many minutes."""
DEFAULT_BRAKE_MAX_SHARE_PERCENT = 30
"""More pauses than this share of the watched ad groups within the window engage the brake."""
DEFAULT_BRAKE_MAX_COUNT = 10
"""More pauses than this within the window engage the brake, however many ad groups are watched."""
BRAKE_MIN_PAUSES = 3
"""So many ad groups may always pause within the window: in a small shop 30 % is one or two
ad groups, and two products selling out in the same ten minutes is an ordinary busy hour."""


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
        HELD = "held", _("held by the safety brake")

    customer_id = models.CharField(verbose_name=_("customer id"), max_length=10)
    ad_group_id = models.CharField(verbose_name=_("ad group id"), max_length=20, db_index=True)
    desired_status = models.CharField(
        verbose_name=_("desired status"), max_length=8, choices=Status.choices
    )
    reason = models.CharField(verbose_name=_("reason"), max_length=500)
    reason_note = models.JSONField(verbose_name=_("reason note"), null=True, blank=True)
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


class AdGroupState(models.Model):
    """The status the backend last confirmed for one ad group: a status equal to it is not sent.

    One row per (backend, account, ad group): the dry-run backend keeps its own, so switching
    to `google` starts from "unknown" (no row), which always sends.
    """

    backend = models.CharField(verbose_name=_("backend"), max_length=8)
    customer_id = models.CharField(verbose_name=_("customer id"), max_length=10)
    ad_group_id = models.CharField(verbose_name=_("ad group id"), max_length=20)
    confirmed_status = models.CharField(
        verbose_name=_("confirmed status"),
        max_length=8,
        help_text=_("What Google Ads last confirmed (or read back at night) for this ad group."),
    )
    confirmed_at = models.DateTimeField(verbose_name=_("confirmed at"))

    class Meta:
        verbose_name = _("ad group state")
        verbose_name_plural = _("ad group states")
        constraints = [
            models.UniqueConstraint(
                fields=["backend", "customer_id", "ad_group_id"], name="ad_group_state_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.ad_group_id}: {self.confirmed_status} ({self.backend})"


class BrakeSettings(SingletonSettings):
    """The safety brake's limits ("Notbremse"): one row, edited in the admin."""

    enabled = models.BooleanField(
        verbose_name=_("enabled"),
        default=True,
        help_text=_("Hold pauses when suspiciously many products sell out at once."),
    )
    window_minutes = models.PositiveIntegerField(
        verbose_name=_("window (minutes)"),
        default=DEFAULT_BRAKE_WINDOW_MINUTES,
        validators=[MinValueValidator(1)],
        help_text=_("The pauses of this many minutes are counted together."),
    )
    max_share_percent = models.PositiveIntegerField(
        verbose_name=_("maximum share (%)"),
        default=DEFAULT_BRAKE_MAX_SHARE_PERCENT,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text=_(
            "Further pauses are held once the ad groups paused within the window would exceed "
            "this share of the watched ad groups (3 may always pause)."
        ),
    )
    max_count = models.PositiveIntegerField(
        verbose_name=_("maximum number"),
        default=DEFAULT_BRAKE_MAX_COUNT,
        validators=[MinValueValidator(1)],
        help_text=_(
            "Further pauses are held once the ad groups paused within the window would exceed "
            "this number."
        ),
    )

    class Meta:
        verbose_name = _("safety brake")
        verbose_name_plural = _("safety brake")

    def __str__(self) -> str:
        return str(_("safety brake"))

    def allowed_pauses(self, watched: int) -> int:
        """How many ad groups may pause within the window before the brake engages."""
        share = watched * self.max_share_percent // 100
        return max(min(BRAKE_MIN_PAUSES, self.max_count), min(self.max_count, share))


class BrakeEpisode(models.Model):
    """One engagement of the brake: from the first held pause until the merchant decided on all.

    At most one is open (the unique condition), so concurrent workers agree on who alerts.
    """

    is_open = models.BooleanField(verbose_name=_("open"), default=True)
    started_at = models.DateTimeField(verbose_name=_("started at"))
    ended_at = models.DateTimeField(verbose_name=_("ended at"), null=True, blank=True)
    reason = models.CharField(verbose_name=_("reason"), max_length=500)
    reason_note = models.JSONField(verbose_name=_("reason note"), null=True, blank=True)

    class Meta:
        verbose_name = _("brake episode")
        verbose_name_plural = _("brake episodes")
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_open"], condition=Q(is_open=True), name="brake_one_open_episode"
            )
        ]

    def __str__(self) -> str:
        return f"brake {self.started_at:%Y-%m-%d %H:%M}"


class HeldChange(models.Model):
    """A pause the brake held back: open until the merchant applies or discards it."""

    class Resolution(models.TextChoices):
        OPEN = "open", _("waiting for your decision")
        APPLIED = "applied", _("applied")
        DISCARDED = "discarded", _("discarded")

    episode = models.ForeignKey(
        BrakeEpisode,
        verbose_name=_("brake episode"),
        on_delete=models.PROTECT,
        related_name="held_changes",
    )
    customer_id = models.CharField(verbose_name=_("customer id"), max_length=10)
    ad_group_id = models.CharField(verbose_name=_("ad group id"), max_length=20)
    desired_status = models.CharField(
        verbose_name=_("held status"), max_length=8, choices=AdGroupAction.Status.choices
    )
    reason = models.CharField(verbose_name=_("reason"), max_length=500)
    reason_note = models.JSONField(verbose_name=_("reason note"), null=True, blank=True)
    source = models.CharField(
        verbose_name=_("source"), max_length=16, choices=AdGroupAction.Source.choices
    )
    held_at = models.DateTimeField(verbose_name=_("held at"))
    resolution = models.CharField(
        verbose_name=_("decision"),
        max_length=10,
        choices=Resolution.choices,
        default=Resolution.OPEN,
    )
    resolved_at = models.DateTimeField(verbose_name=_("decided at"), null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("decided by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    applied_status = models.CharField(
        verbose_name=_("status on applying"),
        max_length=8,
        blank=True,
        help_text=_("What the stock said when the change was applied (it may have recovered)."),
    )
    outcome = models.CharField(verbose_name=_("outcome"), max_length=500, blank=True)

    class Meta:
        verbose_name = _("held change")
        verbose_name_plural = _("held changes")
        ordering = ["-held_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["customer_id", "ad_group_id"],
                condition=Q(resolution="open"),
                name="held_change_one_open_per_ad_group",
            )
        ]

    def __str__(self) -> str:
        return f"{self.ad_group_id} → {self.desired_status} ({self.resolution})"
