"""Search the shop for a product and the Ads account for ad groups, for the admin's pickers.

Each answer is a list of choices (the id to fill in, what the merchant recognises it by) and a
hint: why nothing came back (no connection, too short, an error in words). Without a connection
the picker stays empty and the id fields work as before.

Every vendor call here is made while a page waits: it runs with VENDOR_INTERACTIVE_TIMEOUT
(`shopify_access.admin_client(interactive=True)`, the Ads search's `timeout`), so a slow
vendor costs the merchant seconds and never holds a web worker that webhooks need.

A product the picker shows is kept in the catalogue (`stock.catalogue.record_product`): its
variants become the form's checkboxes, and the watched product's variants are those rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import formats
from django.utils.translation import gettext as _

from automation.google_ads import adapter as google_ads
from automation.google_ads import statuses as ads
from automation.models import Product, Variant
from automation.models.catalogue import DEFAULT_VARIANT_TITLE
from automation.platform import connections
from automation.shopify import access as shopify_access
from automation.shopify.queries import ProductInfo, VariantInfo
from automation.stock import apply, catalogue
from automation.ui.setup.failures import explain
from automation.ui.setup.probes import ad_group_status_text

MIN_QUERY_LENGTH = 2


@dataclass(frozen=True)
class Choice:
    """One search result: `value` goes into the id field, `fill` into others (always),
    `fill_empty` into others that are still empty (e.g. the label). A product carries its
    `variants` (each a Choice: the inventory item id, "klein – 0 in stock", its SKU); an ad
    group its `ref` (account, id, name and campaign, what the form keeps)."""

    value: str
    label: str
    detail: str
    fill: dict[str, str] = field(default_factory=dict)
    fill_empty: dict[str, str] = field(default_factory=dict)
    variants: list[Choice] = field(default_factory=list)
    ref: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Found:
    results: list[Choice]
    hint: str = ""

    def as_json(self) -> dict:
        return {"results": [asdict(choice) for choice in self.results], "hint": self.hint}


def products_available() -> bool:
    """Whether the shop can be searched (Admin API access is configured)."""
    return shopify_access.is_configured()


def ad_groups_available() -> bool:
    """Whether the Ads account can be searched: an account id and a live backend or credentials."""
    return bool(connections.current().google_ads_customer_id.value) and (
        settings.ADS_BACKEND == "google" or google_ads.credentials_source() is not None
    )


# --- words ---------------------------------------------------------------------------------


def status_text(status: str) -> str:
    """A product status other than active, as the picker and the form name it ("" if active)."""
    return {
        Product.Status.ARCHIVED: _("archived"),
        Product.Status.DRAFT: _("draft"),
        Product.Status.UNLISTED: _("unlisted"),
    }.get(status, "")


def variant_name(title: str, sku: str, inventory_item_id: int) -> str:
    """What the merchant calls a variant: its title, else its SKU (as `Variant.__str__`)."""
    if title and title != DEFAULT_VARIANT_TITLE:
        return title
    return sku or _("inventory item %(id)s") % {"id": inventory_item_id}


def variant_text(name: str, available: int | None, *, tracked: bool, keeps_selling: bool) -> str:
    """ "klein – 0 in stock": a variant with its stock, and whether it can sell out at all."""
    if not tracked:
        return _("%(variant)s – stock not tracked (never sells out)") % {"variant": name}
    stock = "?" if available is None else formats.localize(available)
    if keeps_selling:
        return _("%(variant)s – %(stock)s in stock, sold on when sold out") % {
            "variant": name,
            "stock": stock,
        }
    if available is None:
        return _("%(variant)s – stock not known yet") % {"variant": name}
    return _("%(variant)s – %(stock)s in stock") % {"variant": name, "stock": stock}


def sku_text(sku: str) -> str:
    return f"SKU {sku}" if sku else ""


# --- products ------------------------------------------------------------------------------


def products(text: str) -> Found:
    """Products whose title or a variant's SKU matches `text`, each with all of its variants
    and their stock; each found product is kept in the catalogue for the form."""
    if not products_available():
        return Found([], _("No connection to Shopify set up: enter the product id."))
    text = text.strip()
    if len(text) < MIN_QUERY_LENGTH:
        return Found([], _("Type at least two letters."))
    client = shopify_access.admin_client(interactive=True)
    try:
        found = client.search_products(text)
    except Exception as err:  # noqa: BLE001 (shown as a hint, never a 500)
        return Found([], explain(err))
    finally:
        client.close()
    remember(found)
    results = [product_choice(product) for product in found]
    hint = "" if results else _("Nothing found in the shop for “%(text)s”.") % {"text": text}
    return Found(results, hint)


def product_choice(product: ProductInfo) -> Choice:
    """One product for the picker: its title, status, variants with their stock."""
    details = []
    if status_text(product.status):
        details.append(
            _("%(status)s in Shopify: cannot be sold") % {"status": status_text(product.status)}
        )
    details.append(_("product %(id)s") % {"id": product.product_id})
    return Choice(
        value=str(product.product_id),
        label=product.title,
        detail=" · ".join(details),
        fill_empty={"label": product.title},
        variants=[_variant_choice(variant) for variant in product.variants],
    )


def _variant_choice(variant: VariantInfo) -> Choice:
    name = variant_name(variant.title, variant.sku, variant.inventory_item_id)
    return Choice(
        value=str(variant.inventory_item_id),
        label=variant_text(
            name,
            variant.available,
            tracked=variant.tracked,
            keeps_selling=variant.inventory_policy == Variant.Policy.CONTINUE,
        ),
        detail=sku_text(variant.sku),
    )


def remember(found: Iterable[ProductInfo]) -> None:
    """Keep the products the merchant was shown, so their variants can be chosen and the
    pages call them by the names the picker showed.

    Only a product whose variants are not all stored yet, or stored under other titles, is
    written (the picker runs with every keystroke). Watched products naming it are locked
    first, as the product webhook does: the one lock order of `stock.apply`.
    """
    for product in found:
        items = {
            (variant.inventory_item_id, variant.title[: catalogue.TITLE_LENGTH])
            for variant in product.variants
        }
        stored = set(
            Variant.objects.filter(
                inventory_item_id__in={item for item, _title in items},
                product__product_id=product.product_id,
                product__title=product.title[: catalogue.TITLE_LENGTH],
                deleted_at__isnull=True,
            ).values_list("inventory_item_id", "title")
        )
        if items and stored == items:
            continue
        with transaction.atomic():
            apply.lock_products(catalogue.watched_by_product(product.product_id))
            catalogue.record_product(product)


@dataclass(frozen=True)
class Learned:
    """What a save found out about a product's variants before storing it.

    `known`: its variants are stored (now or before); `missing`: Shopify says it has no such
    product; `hint`: why they are not known (no connection, an error in words).
    """

    known: bool
    missing: bool = False
    hint: str = ""


def learn_product(product_id: int) -> Learned:
    """Make sure the product's variants are stored: ask Shopify (one short call) if not."""
    if Variant.objects.filter(product__product_id=product_id, deleted_at__isnull=True).exists():
        return Learned(True)
    client = shopify_access.admin_client(interactive=True)
    if client is None:
        return Learned(
            False,
            hint=_(
                "No connection to Shopify: the product is watched with all of its variants; "
                "they are known once Shopify reports the product (a product webhook or the "
                "nightly run)."
            ),
        )
    try:
        found = list(client.fetch_products([product_id]))
    except Exception as err:  # noqa: BLE001 (the save goes on; the merchant reads why)
        later = _("The product is watched with all of its variants; the nightly run fills them in.")
        return Learned(False, hint=f"{explain(err)} {later}")
    finally:
        client.close()
    if product_id in client.deleted_products or not found:
        return Learned(False, missing=True)
    remember(found)
    return Learned(True)


# --- ad groups -----------------------------------------------------------------------------


def ad_groups(text: str) -> Found:
    """Ad groups of the shop's account whose own or campaign's name contains `text`."""
    if not ad_groups_available():
        return Found([], _("No connection to Google Ads set up: enter the ad group id."))
    text = text.strip()
    if len(text) < MIN_QUERY_LENGTH:
        return Found([], _("Type at least two letters."))
    customer = connections.current().google_ads_customer_id.value
    try:
        groups = google_ads.search_ad_groups_for_picking(
            customer,
            text,
            client=ads.google_client_for_page(),
            timeout=settings.VENDOR_INTERACTIVE_TIMEOUT,
        )
    except Exception as err:  # noqa: BLE001
        return Found([], explain(err))
    results = [
        Choice(
            value=group.ad_group_id,
            label=group.name,
            detail=_("campaign “%(campaign)s”, %(status)s, id %(id)s")
            % {
                "campaign": group.campaign_name,
                "status": ad_group_status_text(group.status),
                "id": group.ad_group_id,
            },
            ref={
                "customer_id": group.customer_id,
                "ad_group_id": group.ad_group_id,
                "name": group.name,
                "campaign_name": group.campaign_name,
            },
        )
        for group in groups
    ]
    hint = "" if results else _("No ad group or campaign named like “%(text)s”.") % {"text": text}
    return Found(results, hint)
