"""What the shop reported, to read: locations (whether they count), products, variants, stock
levels, and the ad group actions taken."""

from datetime import UTC, datetime

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import DateTimeField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Least
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from automation.google_ads import statuses as ads
from automation.models import (
    AdGroupAction,
    Location,
    Product,
    StockLevel,
    Variant,
)
from automation.platform.display_names import (
    ad_group_name_of_row,
    item_name,
    named,
    variant_names_of_row,
)
from automation.stock import apply
from automation.ui.admin.base import ReadOnlyAdmin, ReasonShownMixin
from automation.ui.admin.watched import settled_messages


@admin.register(Location)
class LocationAdmin(admin.ModelAdmin):
    """Where stock is kept; the merchant decides whether a location's stock counts. A change
    decides every watched product with stock there again, at once."""

    list_display = (
        "__str__",
        "location_id",
        "fulfills_online_orders",
        "is_active",
        "counting",
        "counted_now",
    )
    list_editable = ("counting",)
    readonly_fields = ("location_id", "name", "fulfills_online_orders", "is_active", "counted_now")
    fields = (*readonly_fields[:4], "counting", "counted_now")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # Shopify's: the nightly run lists them; a deleted row would count again

    @admin.display(description=_("counts now"), boolean=True)
    def counted_now(self, obj: Location) -> bool:
        return obj.counted

    def save_model(self, request: HttpRequest, obj: Location, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if "counting" in form.changed_data:
            transaction.on_commit(lambda: self._decide_again(request, obj))

    def _decide_again(self, request: HttpRequest, obj: Location) -> None:
        with ads.on_a_page():
            settled = apply.redecide_counting(obj.location_id)
        text = (
            _("Stock at %(location)s counts now.")
            if obj.counted
            else _("Stock at %(location)s no longer counts.")
        ) % {"location": obj}
        if not settled:
            text = _("%(text)s No watched product has stock there.") % {"text": text}
        self.message_user(request, text, messages.INFO)
        for level, line in settled_messages(settled):
            self.message_user(request, line, level)


class VariantInline(admin.TabularInline):
    """A product's variants, as Shopify last described them (read only)."""

    model = Variant
    fields = ("__str__", "sku", "inventory_item_id", "tracked", "inventory_policy", "deleted_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Product)
class ProductAdmin(ReadOnlyAdmin):
    """The shop's products as far as the stock needs them (kept from Shopify, read only)."""

    list_display = ("__str__", "product_id", "status", "updated_at", "deleted_at")
    list_filter = ("status",)
    search_fields = ("title", "product_id")
    inlines = [VariantInline]


@admin.register(Variant)
class VariantAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "product", "sku", "inventory_item_id", "tracked", "inventory_policy")
    search_fields = ("title", "sku", "inventory_item_id", "variant_id")
    list_select_related = ("product",)


@admin.register(AdGroupAction)
class AdGroupActionAdmin(ReasonShownMixin, ReadOnlyAdmin):
    list_display = (
        "requested_at",
        "ad_group",
        "desired_status",
        "result",
        "source",
        "reason_shown",
        "delivery",
        "applied_at",
    )
    list_filter = ("desired_status", "result", "source", "customer_id")
    search_fields = ("ad_group_id", "reason")
    date_hierarchy = "requested_at"
    list_select_related = ("delivery",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[AdGroupAction]:
        return super().get_queryset(request).annotate(ad_group_name=ad_group_name_of_row())

    @admin.display(description=_("ad group"), ordering="ad_group_id")
    def ad_group(self, obj: AdGroupAction) -> str:
        """The ad group by its name (from the same query), its id on hover."""
        return named(getattr(obj, "ad_group_name", ""), obj.ad_group_id)


# The latest instant Python's datetime holds in every time zone the admin may show it in.
LOADABLE_UNTIL = datetime(9999, 12, 30, tzinfo=UTC)


@admin.register(StockLevel)
class StockLevelAdmin(ReadOnlyAdmin):
    list_display = (
        "item",
        "location",
        "available",
        "shopify_updated_at",
        "recorded_at",
    )
    search_fields = ("inventory_item_id", "location_id")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        """The list reads Shopify's timestamp capped at what Python can load: a level stored
        from beyond year 9999 (before the parsers refused such times) does not take it down."""
        shown = Least("updated_at", Value(LOADABLE_UNTIL, output_field=DateTimeField()))
        variant = Variant.objects.filter(inventory_item_id=OuterRef("inventory_item_id"))
        location = Location.objects.filter(location_id=OuterRef("location_id"))
        return (
            super()
            .get_queryset(request)
            .defer("updated_at")
            .annotate(
                shown_updated_at=shown,
                **variant_names_of_row(variant),
                location_name=Subquery(location.values("name")[:1]),
            )
        )

    @admin.display(description=_("variant"), ordering="inventory_item_id")
    def item(self, level: StockLevel) -> str:
        """The product and variant the level is for, the inventory item id on hover."""
        return named(
            item_name(level.product_title, level.variant_title, level.variant_sku),
            level.inventory_item_id,
        )

    @admin.display(description=_("location"), ordering="location_id")
    def location(self, level: StockLevel) -> str:
        return named(level.location_name, level.location_id)

    @admin.display(description=_("updated at"), ordering="updated_at")
    def shopify_updated_at(self, level: StockLevel) -> datetime:
        return level.shown_updated_at
