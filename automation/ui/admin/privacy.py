"""The customers' data requests that Shopify forwards (`customers/data_request`)."""

from django.contrib import admin

from automation.models import (
    DataRequest,
)


@admin.register(DataRequest)
class DataRequestAdmin(admin.ModelAdmin):
    list_display = ("received_at", "customer_email", "customer_id", "shop_domain", "handled")
    list_editable = ("handled",)
    readonly_fields = ("shop_domain", "customer_email", "customer_id", "orders_requested")
