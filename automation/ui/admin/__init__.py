"""The German admin, one module per feature: deliveries; watched products and ad groups, the
catalogue and the brake (stock); reminders; promotions; the nightly runs; privacy requests; the
dashboard's setting. Importing this package registers every ModelAdmin (`AutomationConfig.ready`).
"""

from django.conf import settings
from django.contrib import admin
from django.urls import reverse_lazy

from automation.ui.admin import (  # noqa: F401 (each module registers its ModelAdmins)
    brake,
    catalogue,
    dashboard_settings,
    deliveries,
    privacy,
    promotions,
    reconcile,
    reminders,
    watched,
)

# The header names the shop, not "Django administration"; "View site" leads to the dashboard.
admin.site.site_header = settings.SHOP_NAME
admin.site.site_title = settings.SHOP_NAME
admin.site.site_url = reverse_lazy("dashboard")
