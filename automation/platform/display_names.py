"""How every page shows a vendor's object: by its name, with its id on hover.

Products, variants and ad groups are known to Shopify and Google Ads by numbers the merchant
does not recognise; their names come from the vendors (the pickers, the webhooks, the nightly
run) and are escaped like any text from outside. An object without a known name shows its id.
The lookups here are the one place that turns ids into those names (pages, mails, stored runs).
"""

from collections.abc import Iterable

from django.db.models import OuterRef, QuerySet, Subquery
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from automation.models import AdGroup, Product, Variant
from automation.models.catalogue import DEFAULT_VARIANT_TITLE


def named(name: str | None, ident: object) -> SafeString:
    """`name` with `id <ident>` as its hover text; without a name, the id itself."""
    if not name:
        return format_html("{}", ident)
    return format_html('<span title="{}">{}</span>', gettext("id %(id)s") % {"id": ident}, name)


def plain(name: str | None, ident: object) -> str:
    """The same for plain text (mails, stored errors): "Winterzauber (990000000013)", or the
    id alone without a name."""
    return f"{name} ({ident})" if name else str(ident)


def item_name(product_title: str | None, title: str | None, sku: str | None) -> str:
    """ "Winterzauber – klein": the product and what the merchant calls the variant ("" if
    neither is known); a product's only variant is the product alone."""
    own = "" if not title or title == DEFAULT_VARIANT_TITLE else title
    variant = own or sku or ""
    if product_title and variant:
        return f"{product_title} – {variant}"
    return product_title or variant


def item_names(item_ids: Iterable[int]) -> dict[int, str]:
    """The catalogue's name of each inventory item that has one, in one query."""
    rows = Variant.objects.filter(inventory_item_id__in=set(item_ids)).values_list(
        "inventory_item_id", "product__title", "title", "sku"
    )
    names = {item: item_name(product, title, sku) for item, product, title, sku in rows}
    return {item: name for item, name in names.items() if name}


def product_names(product_ids: Iterable[int]) -> dict[int, str]:
    """The catalogue's title of each product that has one, in one query."""
    rows = Product.objects.filter(product_id__in=set(product_ids)).exclude(title="")
    return dict(rows.values_list("product_id", "title"))


def ad_group_names(ad_group_ids: Iterable[object]) -> dict[str, str]:
    """The stored name of each ad group that has one, by its id (as text), in one query."""
    ids = {str(ident) for ident in ad_group_ids}
    rows = AdGroup.objects.filter(ad_group_id__in=ids).exclude(name="")
    return dict(rows.values_list("ad_group_id", "name"))


def ad_group_name_of_row() -> Subquery:
    """The name of a row's ad group (matched by its `customer_id` and `ad_group_id`), for a
    list that names them in its one query."""
    group = AdGroup.objects.filter(
        customer_id=OuterRef("customer_id"), ad_group_id=OuterRef("ad_group_id")
    )
    return Subquery(group.values("name")[:1])


def variant_names_of_row(variants: QuerySet, *, product_title: str = "product_title") -> dict:
    """The product title, variant title and SKU of a row's variant (`variants` filtered by an
    OuterRef), as annotations for a list that names them in its one query (`item_name`)."""
    return {
        product_title: Subquery(variants.values("product__title")[:1]),
        "variant_title": Subquery(variants.values("title")[:1]),
        "variant_sku": Subquery(variants.values("sku")[:1]),
    }
