"""The demo history's marks, its removal, and the dashboard's banner and button.

Every demo row is findable: deliveries and checkouts carry the shop domain DEMO_SHOP (so do
the rows any handler derives from them), watched items are labelled "Demo – …" and use the
inventory item and ad group ids below, which no shop hands out. The history itself is made by
demo_history.py (only `manage.py demo_setup` imports it).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.apps import apps
from django.contrib import messages
from django.db import transaction
from django.db.models import Q
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from automation.models import (
    AdGroup,
    AdGroupAction,
    AdGroupState,
    CheckoutState,
    Claim,
    Delivery,
    Product,
    ReminderDecision,
    StockLevel,
    Variant,
    WatchedProduct,
)
from automation.reminders import checkouts
from automation.ui import page_access

DEMO_SHOP = "demo.myshopify.com"
"""The shop domain of every demo delivery and checkout (myshopify.com names are the shops')."""
DEMO_LABEL_PREFIX = "Demo – "
DEMO_CUSTOMER_ID = "1234567890"
DEMO_DAYS = 30
DEMO_LOCATION_ID = 990000000001
DEMO_SIGNING_SECRET = "demo-history"  # noqa: S105 (signs the demo's own bodies, in-process only)
DEMO_MARKER = "demo:history"
"""The claim that says the history exists; its unique key lets only one run create it."""
DEMO_MARKER_TTL = timedelta(days=3650)
DEMO_DISCOUNT_CODE = "DEMO10"
DEMO_IMPRINT = (
    "DEMO-IMPRESSUM – bitte durch Ihr eigenes ersetzen\n"
    "Elbkerzen Demo GmbH, Musterstraße 1, 20095 Hamburg\n"
    "demo@elbkerzen.example · Amtsgericht Hamburg HRB 000000 · USt-IdNr. DE000000000"
)
"""The imprint the demo writes into empty reminder settings, so its reminders are sent;
marked as a demo so nobody mistakes it for the shop's."""


@dataclass(frozen=True)
class DemoItem:
    """A demo product: its ad group, its threshold and what its clicks cost."""

    name: str
    inventory_item_id: int
    ad_group_id: str
    pause_at: int
    clicks_per_day: Decimal
    cost_per_click: Decimal
    price: Decimal

    @property
    def label(self) -> str:
        return f"{DEMO_LABEL_PREFIX}{self.name}"

    @property
    def product_id(self) -> int:
        return self.inventory_item_id + 1000

    @property
    def variant_id(self) -> int:
        return self.inventory_item_id + 2000


DEMO_ITEMS = (
    DemoItem(
        "Nordlicht", 990000000011, "990000000101", 0, Decimal(40), Decimal("0.60"), Decimal(24)
    ),
    DemoItem(
        "Sturmlicht", 990000000012, "990000000102", 2, Decimal(25), Decimal("0.45"), Decimal(16)
    ),
    DemoItem(
        "Friesennacht", 990000000013, "990000000103", 0, Decimal(60), Decimal("0.80"), Decimal(32)
    ),
)
DEMO_ITEM_IDS = tuple(item.inventory_item_id for item in DEMO_ITEMS)
DEMO_AD_GROUP_IDS = tuple(item.ad_group_id for item in DEMO_ITEMS)
DEMO_PRODUCT_IDS = tuple(item.product_id for item in DEMO_ITEMS)


def create_demo_products() -> None:
    """The demo's products, variants, ad groups and watched products (one variant each)."""
    for item in DEMO_ITEMS:
        product = Product.objects.create(
            product_id=item.product_id, title=item.label, status=Product.Status.ACTIVE
        )
        variant = Variant.objects.create(
            inventory_item_id=item.inventory_item_id,
            variant_id=item.variant_id,
            product=product,
        )
        group = AdGroup.objects.create(
            customer_id=DEMO_CUSTOMER_ID,
            ad_group_id=item.ad_group_id,
            name=item.label,
            clicks_per_day=item.clicks_per_day,
            cost_per_click=item.cost_per_click,
            demo=True,
        )
        watched = WatchedProduct.objects.create(
            product_id=item.product_id, label=item.label, pause_at=item.pause_at, demo=True
        )
        watched.variants.set([variant])
        watched.ad_groups.set([group])


def demo_present() -> bool:
    """Whether the demo history exists (its marker, or any of its rows)."""
    return (
        Claim.objects.filter(key=DEMO_MARKER).exists()
        or Delivery.objects.filter(shop_domain=DEMO_SHOP).exists()
        or WatchedProduct.objects.filter(demo=True).exists()
    )


def _models_with_shop_domain() -> list:
    """Every model of this app that records the shop a row came from."""
    return [
        model
        for model in apps.get_app_config("automation").get_models()
        if any(field.name == "shop_domain" for field in model._meta.concrete_fields)
    ]


def _plural(model: type) -> str:
    return str(model._meta.verbose_name_plural)


def remove_demo() -> Counter[str]:
    """Delete every demo row and nothing else; returns how many of each kind were deleted.

    Demo rows are those of the demo shop (any model with a shop domain, so rows a handler
    derives from a demo delivery go too), the demo's watched items, stock levels and ad group
    changes, and the claims its reminders took.
    """
    removed: Counter[str] = Counter()
    with transaction.atomic():
        demo_checkouts = CheckoutState.objects.filter(shop_domain=DEMO_SHOP)
        keys = {DEMO_MARKER}
        for checkout in demo_checkouts.only("source", "token", "email"):
            keys.add(checkouts.checkout_claim_key(checkout))
            if checkout.email:
                keys.add(checkouts.address_claim_key(checkout.email))
        removed[_plural(Claim)] = Claim.objects.filter(key__in=keys).delete()[0]
        demo_groups = AdGroup.objects.filter(demo=True)
        keys = list(demo_groups.values_list("customer_id", "ad_group_id"))
        of_demo = Q(pk__in=[])
        for customer_id, ad_group_id in keys:
            of_demo |= Q(customer_id=customer_id, ad_group_id=ad_group_id)
        removed[_plural(AdGroupAction)] = AdGroupAction.objects.filter(of_demo).delete()[0]
        removed[_plural(AdGroupAction)] += AdGroupAction.objects.filter(
            delivery__shop_domain=DEMO_SHOP
        ).delete()[0]
        # The status each demo ad group last "confirmed" (dry run).
        removed[_plural(AdGroupState)] = AdGroupState.objects.filter(of_demo).delete()[0]
        removed[_plural(ReminderDecision)] = ReminderDecision.objects.filter(
            checkout__shop_domain=DEMO_SHOP
        ).delete()[0]
        for model in _models_with_shop_domain():
            deleted = model.objects.filter(shop_domain=DEMO_SHOP).delete()[1]
            for label, n in deleted.items():
                removed[_plural(apps.get_model(label))] += n
        # The demo's own rows, by their mark: a real row with a demo-like label or id stays.
        demo_products = WatchedProduct.objects.filter(demo=True)
        product_ids = set(demo_products.values_list("product_id", flat=True))
        removed[_plural(WatchedProduct)] = demo_products.delete()[1].get(
            WatchedProduct._meta.label, 0
        )
        still_watched = set(WatchedProduct.objects.values_list("product_id", flat=True))
        gone = product_ids - still_watched
        items = set(
            Variant.objects.filter(product__product_id__in=gone).values_list(
                "inventory_item_id", flat=True
            )
        )
        removed[_plural(StockLevel)] = StockLevel.objects.filter(
            inventory_item_id__in=items
        ).delete()[0]
        removed[_plural(Variant)] = Variant.objects.filter(inventory_item_id__in=items).delete()[0]
        removed[_plural(Product)] = Product.objects.filter(product_id__in=gone).delete()[0]
        removed[_plural(AdGroup)] = demo_groups.filter(watched_products__isnull=True).delete()[0]
    return +removed


# --- the dashboard's banner and button --------------------------------------------------------


def banner(request: HttpRequest) -> dict:
    """What the dashboard says about demo data: whether it is shown, and who may remove it."""
    present = demo_present()
    return {
        "present": present,
        "can_remove": present and page_access.DEMO_REMOVE.allows(request.user),
    }


@page_access.requires(page_access.DEMO_REMOVE)
@require_POST
def remove_view(request: HttpRequest) -> HttpResponseRedirect:
    """Remove the demo history (POST, staff allowed to delete watched items)."""
    removed = remove_demo()
    if removed:
        messages.success(
            request,
            _("Demo data removed: %(deliveries)d deliveries and everything they caused.")
            % {"deliveries": removed.get(_plural(Delivery), 0)},
        )
    else:
        messages.info(request, _("There was no demo data to remove."))
    return HttpResponseRedirect(reverse("dashboard"))
