"""Search the shop for a product and the Ads account for an ad group, for the admin's pickers.

Each answer is a list of choices (the id to fill in, what the merchant recognises it by) and a
hint: why nothing came back (no connection, too short, an error in words). Without a connection
the picker stays empty and the id fields work as before.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.utils.translation import gettext as _

from .. import ads, shopify_access
from ..adapters import google_ads
from .probes import ad_group_status_text, explain

MIN_QUERY_LENGTH = 2
DEFAULT_VARIANT_TITLE = "Default Title"  # Shopify's title for the one variant without options


@dataclass(frozen=True)
class Choice:
    """One search result: `value` goes into the id field, `fill` into others (always),
    `fill_empty` into others that are still empty (e.g. the label)."""

    value: str
    label: str
    detail: str
    fill: dict[str, str] = field(default_factory=dict)
    fill_empty: dict[str, str] = field(default_factory=dict)


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
    return bool(settings.GOOGLE_ADS_CUSTOMER_ID) and (
        settings.ADS_BACKEND == "google" or google_ads.credentials_source() is not None
    )


def products(text: str) -> Found:
    """Variants whose product title, variant title or SKU matches `text`."""
    if not products_available():
        return Found([], _("No connection to Shopify set up: enter the inventory item id."))
    text = text.strip()
    if len(text) < MIN_QUERY_LENGTH:
        return Found([], _("Type at least two letters."))
    client = shopify_access.admin_client()
    try:
        variants = client.search_variants(text)
    except Exception as err:  # noqa: BLE001 (shown as a hint, never a 500)
        return Found([], explain(err))
    finally:
        client.close()
    results = []
    for variant in variants:
        name = variant.product_title
        if variant.variant_title and variant.variant_title != DEFAULT_VARIANT_TITLE:
            name = f"{name} – {variant.variant_title}"
        detail = _("inventory item %(id)s") % {"id": variant.inventory_item_id}
        if variant.sku:
            detail = f"SKU {variant.sku} · {detail}"
        results.append(
            Choice(
                value=str(variant.inventory_item_id),
                label=name,
                detail=detail,
                fill_empty={"label": name},
            )
        )
    hint = "" if results else _("Nothing found in the shop for “%(text)s”.") % {"text": text}
    return Found(results, hint)


def ad_groups(text: str) -> Found:
    """Ad groups of the shop's account whose own or campaign's name contains `text`."""
    if not ad_groups_available():
        return Found([], _("No connection to Google Ads set up: enter the ad group id."))
    text = text.strip()
    if len(text) < MIN_QUERY_LENGTH:
        return Found([], _("Type at least two letters."))
    customer = settings.GOOGLE_ADS_CUSTOMER_ID
    try:
        groups = google_ads.search_ad_groups_for_picking(customer, text, client=ads.google_client())
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
            fill={"customer_id": group.customer_id},
        )
        for group in groups
    ]
    hint = "" if results else _("No ad group or campaign named like “%(text)s”.") % {"text": text}
    return Found(results, hint)
