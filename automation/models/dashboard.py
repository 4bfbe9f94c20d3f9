"""What the merchant tells the dashboard about their shop, to price what automation saved."""

from django.core.validators import MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from automation.models.singleton import SingletonSettings

DEFAULT_MANUAL_CHECK_HOURS = 43
"""The seed's shop owner noticed a sell-out after 43 hours on average, checking by hand."""


class DashboardSettings(SingletonSettings):
    """The one row of dashboard settings: how the shop worked before the automation."""

    manual_check_hours = models.PositiveIntegerField(
        verbose_name=_("hours until a manual check"),
        default=DEFAULT_MANUAL_CHECK_HOURS,
        validators=[MinValueValidator(1)],
        help_text=_(
            "How long, on average, the ads of a sold-out product ran on before you noticed it "
            "by hand. The dashboard prices the ad spend avoided per sell-out with it."
        ),
    )

    class Meta:
        verbose_name = _("dashboard settings")
        verbose_name_plural = _("dashboard settings")

    def __str__(self) -> str:
        return "Dashboard settings"
