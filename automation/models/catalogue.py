"""The shop's catalogue as far as stock needs it: products, their variants' inventory items, and
the locations whose stock counts.

Kept from the `products/*` webhooks, the pickers and the nightly reconciliation; the stock
rule reads it to know which inventory items make up a product and whether they can run out.
"""

from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _


class Product(models.Model):
    """A Shopify product: its status decides whether it can be sold at all."""

    class Status(models.TextChoices):
        # Shopify's ProductStatus, as the REST webhook spells it (FACTS.md, "Products").
        ACTIVE = "active", _("active")
        ARCHIVED = "archived", _("archived")
        DRAFT = "draft", _("draft")
        UNLISTED = "unlisted", _("unlisted")
        UNKNOWN = "", _("not known yet")

    product_id = models.BigIntegerField(verbose_name=_("product id"), unique=True)
    title = models.CharField(verbose_name=_("title"), max_length=255, blank=True)
    status = models.CharField(
        verbose_name=_("status"),
        max_length=16,
        blank=True,
        choices=Status.choices,
        help_text=_("Only an active product can be sold; archived and draft ones cannot."),
    )
    updated_at = models.DateTimeField(
        verbose_name=_("updated at"),
        null=True,
        blank=True,
        help_text=_("Shopify's timestamp of what we know: an older message never overrides it."),
    )
    deleted_at = models.DateTimeField(
        verbose_name=_("deleted in Shopify"),
        null=True,
        blank=True,
        help_text=_("When Shopify said the product was deleted."),
    )
    recorded_at = models.DateTimeField(verbose_name=_("recorded at"), auto_now=True)

    class Meta:
        verbose_name = _("product")
        verbose_name_plural = _("products")
        ordering = ["title", "product_id"]

    def __str__(self) -> str:
        return self.title or gettext("product %(id)s") % {"id": self.product_id}


class Variant(models.Model):
    """One variant and its inventory item: the unit Shopify reports stock levels for.

    Keyed by the inventory item (what `inventory_levels/*` name). `variant_id` and `product`
    are empty only for a row kept from an inventory item id alone, until Shopify names them.
    A variant Shopify no longer lists is marked deleted, never removed: a chosen subset of a
    watched product must not turn into "all variants" because its last member went away.
    """

    class Policy(models.TextChoices):
        DENY = "deny", _("stop selling when sold out")
        CONTINUE = "continue", _("keep selling when sold out")

    inventory_item_id = models.BigIntegerField(verbose_name=_("inventory item id"), unique=True)
    variant_id = models.BigIntegerField(
        verbose_name=_("variant id"), unique=True, null=True, blank=True
    )
    product = models.ForeignKey(
        Product,
        verbose_name=_("product"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="variants",
    )
    title = models.CharField(verbose_name=_("title"), max_length=255, blank=True)
    sku = models.CharField(verbose_name=_("SKU"), max_length=255, blank=True)
    position = models.PositiveIntegerField(verbose_name=_("position"), default=0)
    tracked = models.BooleanField(
        verbose_name=_("stock tracked"),
        default=True,
        help_text=_("Shopify counts this variant's stock; an untracked one never sells out."),
    )
    inventory_policy = models.CharField(
        verbose_name=_("when sold out"),
        max_length=8,
        choices=Policy.choices,
        default=Policy.DENY,
        help_text=_("“Keep selling” (e.g. pre-orders) means the variant never sells out."),
    )
    deleted_at = models.DateTimeField(verbose_name=_("deleted in Shopify"), null=True, blank=True)
    recorded_at = models.DateTimeField(verbose_name=_("recorded at"), auto_now=True)

    class Meta:
        verbose_name = _("variant")
        verbose_name_plural = _("variants")
        ordering = ["product_id", "position", "pk"]
        indexes = [models.Index(fields=["product", "position"], name="variant_product_position")]

    def __str__(self) -> str:
        return variant_name(self.title, self.sku, self.inventory_item_id)

    @property
    def sells_without_stock(self) -> bool:
        """An untracked variant, or one Shopify keeps selling at 0, can never sell out."""
        return not self.tracked or self.inventory_policy == self.Policy.CONTINUE


DEFAULT_VARIANT_TITLE = "Default Title"
"""Shopify's title of the one variant of a product without options."""


def variant_name(title: str, sku: str, inventory_item_id: int) -> str:
    """What the merchant calls a variant: its title, else its SKU, else its inventory item
    (also for rows read without the model, `stock.facts`)."""
    if title and title != DEFAULT_VARIANT_TITLE:
        return title
    if sku:
        return sku
    return gettext("inventory item %(id)s") % {"id": inventory_item_id}


class Location(models.Model):
    """A place stock is kept; its levels count towards a product's stock unless excluded."""

    class Counting(models.TextChoices):
        SHOPIFY = "", _("as Shopify says (counted when it fulfils online orders)")
        ALWAYS = "always", _("always counted")
        NEVER = "never", _("never counted")

    location_id = models.BigIntegerField(verbose_name=_("location id"), unique=True)
    name = models.CharField(verbose_name=_("name"), max_length=255, blank=True)
    fulfills_online_orders = models.BooleanField(
        verbose_name=_("fulfils online orders"),
        null=True,
        blank=True,
        help_text=_("What Shopify says (empty until the Admin API was asked)."),
    )
    is_active = models.BooleanField(verbose_name=_("active"), null=True, blank=True)
    counting = models.CharField(
        verbose_name=_("stock counts"),
        max_length=8,
        blank=True,
        choices=Counting.choices,
        default=Counting.SHOPIFY,
        help_text=_(
            "Whether the stock kept here counts for your ads. A shop or warehouse that does "
            "not ship online orders should not keep a sold-out product's ads running."
        ),
    )
    recorded_at = models.DateTimeField(verbose_name=_("recorded at"), auto_now=True)

    class Meta:
        verbose_name = _("location")
        verbose_name_plural = _("locations")
        ordering = ["name", "location_id"]

    def __str__(self) -> str:
        return location_name(self.name, self.location_id)

    @property
    def counted(self) -> bool:
        """The merchant's choice, else Shopify's `fulfillsOnlineOrders` (unknown counts)."""
        return location_counted(self.counting, self.fulfills_online_orders, self.is_active)


def location_name(name: str, location_id: int) -> str:
    """What the merchant calls a location (also for rows read without the model)."""
    return name or gettext("location %(id)s") % {"id": location_id}


def location_counted(
    counting: str, fulfills_online_orders: bool | None, is_active: bool | None
) -> bool:
    """Whether a location's stock counts: the merchant's choice, else Shopify's
    `fulfillsOnlineOrders` and `isActive` (unknown counts)."""
    if counting == Location.Counting.ALWAYS:
        return True
    if counting == Location.Counting.NEVER:
        return False
    return fulfills_online_orders is not False and is_active is not False
