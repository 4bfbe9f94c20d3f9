"""The dashboard's one setting: how long a sell-out went unnoticed before the automation."""

from django.contrib import admin

from automation.models import (
    DashboardSettings,
)
from automation.ui.admin.base import SingletonSettingsAdmin


@admin.register(DashboardSettings)
class DashboardSettingsAdmin(SingletonSettingsAdmin):
    """One row, like the reminder settings: the list view goes straight to it."""

    fields = ("manual_check_hours",)
