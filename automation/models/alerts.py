"""How often each kind of alert may mail: one row per kind."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class AlertSlot(models.Model):
    """When a kind of alert last mailed, and how many of it were held back since.

    The row is locked (SELECT … FOR UPDATE) to decide whether the kind may mail now, so two
    workers never both mail for the same slot.
    """

    kind = models.CharField(verbose_name=_("kind"), max_length=40, primary_key=True)
    mailed_at = models.DateTimeField(
        verbose_name=_("last mailed at"),
        null=True,
        blank=True,
        help_text=_("When the last mail of this kind went out."),
    )
    held = models.PositiveIntegerField(
        verbose_name=_("held back"),
        default=0,
        help_text=_("Alerts of this kind since the last mail; the next mail reports them."),
    )
    held_since = models.DateTimeField(
        verbose_name=_("held back since"),
        null=True,
        blank=True,
        help_text=_("When the first alert that was held back happened."),
    )

    class Meta:
        verbose_name = _("alert slot")
        verbose_name_plural = _("alert slots")

    def __str__(self) -> str:
        return self.kind
