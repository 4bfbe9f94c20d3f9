"""The watched product's admin form: the product and its ad groups picked by name, not by id.

- The product: one search box (title or SKU) under its id. A result shows the product with all
  of its variants and their stock; choosing it fills the id and the label (if empty) and shows
  the variants as checkboxes, "all variants" ticked.
- The variants: "all variants" (no subset: a variant Shopify adds later counts too), or only
  the ticked ones.
- The ad groups: any number, found by ad group or campaign name, or typed by id (the account
  may be pasted as 123-456-7890); name and campaign are kept on the ad group's row.

Every id still works typed by hand, and does where no connection is set up. A save whose
product's variants are not stored yet asks Shopify once, briefly (`pickers.learn_product`).
The script and styles are static files (automation/static/automation/watched_product.*), the
form's media; they put the pickers' JSON into the page with textContent only.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

from django import forms
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from automation.models import AdGroup, Location, StockLevel, Variant, WatchedProduct
from automation.models.inventory import CUSTOMER_ID_INPUT_LENGTH, customer_id_digits
from automation.platform import connections
from automation.ui.setup import pickers

CUSTOMER_ID = re.compile(r"\d{10}")
AD_GROUP_ID = re.compile(r"\d{1,20}")
SEPARATORS = re.compile(r"[\s,;]+")


def customer_digits(text: str) -> str:
    """A Google Ads customer id as typed or pasted ("123-456-7890") → its 10 digits, or ""."""
    digits = customer_id_digits(str(text or ""))
    return digits if CUSTOMER_ID.fullmatch(digits) else ""


def dashed(customer_id: str) -> str:
    """1234567890 → 123-456-7890, as Google Ads shows account ids."""
    if not CUSTOMER_ID.fullmatch(customer_id or ""):
        return customer_id or ""
    return f"{customer_id[:3]}-{customer_id[3:6]}-{customer_id[6:]}"


class ProjectTemplateWidget(forms.Widget):
    """A widget whose template lives in the project's templates/ (the form renderer reads only
    Django's own and the apps'), rendered by the template engine like the admin's pages."""

    def render(self, name, value, attrs=None, renderer=None) -> SafeString:
        context = self.get_context(name, value, self.build_attrs(self.attrs, attrs))
        return mark_safe(render_to_string(self.template_name, context))  # noqa: S308 (escaped)


# --- the product ---------------------------------------------------------------------------


class PickerInput(forms.TextInput):
    """A text input for an id, with a search box that fills it from a picker's results."""

    def __init__(self, source: str, placeholder: str, attrs: dict | None = None) -> None:
        super().__init__(attrs={"inputmode": "numeric", "class": "vTextField", **(attrs or {})})
        self.source = source  # "products" or "ad-groups"
        self.placeholder = placeholder

    def available(self) -> bool:
        if self.source == "products":
            return pickers.products_available()
        return pickers.ad_groups_available()

    def render(self, name, value, attrs=None, renderer=None) -> SafeString:
        field = super().render(name, value, attrs, renderer)
        field_id = (attrs or {}).get("id") or f"id_{name}"
        prefix = field_id[: len(field_id) - len(name)]
        html = render_to_string(
            "admin/setup_picker.html",
            {
                "field": field,
                "available": self.available(),
                "source": self.source,
                "url": reverse(f"setup-pick-{self.source}"),
                "target": field_id,
                "prefix": prefix,
                "variants": f"{prefix}variants",
                "placeholder": self.placeholder,
            },
        )
        return mark_safe(html)  # noqa: S308 (rendered by the template engine, escaped)


@dataclass(frozen=True)
class VariantOption:
    """One variant checkbox: its inventory item id, "klein – 0 in stock", SKU, and whether
    Shopify deleted it (kept only while a subset still names it)."""

    value: str
    label: str
    detail: str
    gone: bool = False


def counted_stock(variants: Sequence[Variant]) -> dict[int, int | None]:
    """Each variant's stored stock over the locations that count (None: never reported)."""
    levels = StockLevel.objects.filter(
        inventory_item_id__in=[variant.inventory_item_id for variant in variants]
    )
    locations = {
        location.location_id: location
        for location in Location.objects.filter(
            location_id__in=levels.values("location_id").distinct()
        )
    }
    stock: dict[int, int | None] = defaultdict(lambda: None)
    for level in levels:
        location = locations.get(level.location_id)
        if location is not None and not location.counted:
            continue
        stock[level.inventory_item_id] = (stock[level.inventory_item_id] or 0) + (
            level.available or 0
        )
    return stock


def variant_options(product_id: int | None, chosen: Iterable[int]) -> list[VariantOption]:
    """The product's variants as checkboxes, in Shopify's order, with their stored stock; a
    chosen variant that is no longer listed (deleted, another product) stays, marked."""
    chosen = set(chosen)
    listed = list(
        Variant.objects.filter(product__product_id=product_id, deleted_at__isnull=True).order_by(
            "position", "pk"
        )
        if product_id
        else []
    )
    shown = {variant.inventory_item_id for variant in listed}
    extra = Variant.objects.filter(inventory_item_id__in=chosen - shown)
    rows = [*listed, *extra.order_by("position", "pk")]
    stock = counted_stock(rows)
    options = []
    for variant in rows:
        gone = variant not in listed
        label = pickers.variant_text(
            str(variant),
            stock[variant.inventory_item_id],
            tracked=variant.tracked,
            keeps_selling=variant.inventory_policy == Variant.Policy.CONTINUE,
        )
        detail = pickers.sku_text(variant.sku)
        if gone:
            detail = " · ".join(filter(None, [detail, str(_("no longer in this product"))]))
        options.append(VariantOption(str(variant.inventory_item_id), label, detail, gone))
    return options


class VariantChoice(ProjectTemplateWidget):
    """ "All variants", or the ticked ones: checkboxes named `<name>` plus `<name>_all`."""

    template_name = "admin/setup_variants.html"

    def __init__(self, attrs: dict | None = None) -> None:
        super().__init__(attrs)
        self.options: list[VariantOption] = []

    def value_from_datadict(self, data, files, name) -> dict:
        return {"all": f"{name}_all" in data, "chosen": data.getlist(name)}

    def value_omitted_from_data(self, data, files, name) -> bool:
        return False  # an unticked checkbox is a choice, not an omission

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        if isinstance(value, dict):
            every, chosen = value.get("all", False), {str(v) for v in value.get("chosen", [])}
        else:
            chosen = {str(v) for v in value or []}
            every = not chosen
        context["widget"].update(
            {
                "all": every,
                "options": [(option, option.value in chosen) for option in self.options],
            }
        )
        return context


class VariantsField(forms.Field):
    """The variants that count: [] for all of them, else the ticked Variant rows."""

    widget = VariantChoice
    default_error_messages = {
        "none": _("Tick the variants that count, or “all variants”."),
        "unknown": _("Unknown variant: %(value)s. Search the product again to show its variants."),
    }

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def clean(self, value) -> list[Variant]:
        if not isinstance(value, dict) or value.get("all"):
            return []
        ids = []
        for raw in value.get("chosen", []):
            if not str(raw).isdigit():
                raise ValidationError(self.error_messages["unknown"], params={"value": raw})
            ids.append(int(raw))
        if not ids:
            raise ValidationError(self.error_messages["none"])
        rows = Variant.objects.filter(inventory_item_id__in=ids).select_related("product")
        found = {variant.inventory_item_id: variant for variant in rows}
        for item_id in ids:
            if item_id not in found:
                raise ValidationError(self.error_messages["unknown"], params={"value": item_id})
        return [found[item_id] for item_id in dict.fromkeys(ids)]

    def has_changed(self, initial, data) -> bool:
        before = {str(v) for v in initial or []}
        if not isinstance(data, dict):
            return before != {str(v) for v in data or []}
        after = set() if data.get("all") else {str(v) for v in data.get("chosen", [])}
        return before != after


# --- the ad groups -------------------------------------------------------------------------


@dataclass(frozen=True)
class AdGroupRef:
    """An ad group the form names: its account and id, and, when the picker found it, its
    name and campaign (kept on the AdGroup row)."""

    customer_id: str
    ad_group_id: str
    name: str = ""
    campaign_name: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.customer_id, self.ad_group_id)

    def value(self) -> str:
        """What the checkbox posts: the ref as a query string (the picker's script writes the
        same with URLSearchParams)."""
        return urlencode(
            {
                "customer_id": self.customer_id,
                "ad_group_id": self.ad_group_id,
                "name": self.name,
                "campaign_name": self.campaign_name,
            }
        )

    @classmethod
    def of(cls, group: AdGroup) -> AdGroupRef:
        return cls(group.customer_id, group.ad_group_id, group.name, group.campaign_name)


NAME_LENGTH = AdGroup._meta.get_field("name").max_length


def parse_ref(raw: str) -> AdGroupRef:
    """A posted ad group: `customer_id=…&ad_group_id=…&name=…&campaign_name=…` (a chosen one),
    or `customer id:ad group id`."""
    raw = str(raw).strip()
    if "=" in raw:
        data = dict(parse_qsl(raw))
        customer, ad_group = data.get("customer_id", ""), data.get("ad_group_id", "")
        name = data.get("name", "")[:NAME_LENGTH]
        campaign = data.get("campaign_name", "")[:NAME_LENGTH]
    else:
        customer, _sep, ad_group = raw.rpartition(":")
        name = campaign = ""
    return AdGroupRef(_customer(customer), _ad_group(ad_group), name, campaign)


def _customer(text: str) -> str:
    digits = customer_digits(text)
    if not digits:
        raise ValidationError(
            _("A Google Ads customer id has 10 digits, e.g. 123-456-7890 (not “%(value)s”)."),
            params={"value": text},
        )
    return digits


class CustomerIdField(forms.CharField):
    """A Google Ads account as typed or pasted (123-456-7890), cleaned to its 10 digits.

    The model's max_length (10) would become the input's maxlength, and a browser cuts a pasted
    123-456-7890 to 123-456-78 before anyone can clean it.
    """

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("max_length", CUSTOMER_ID_INPUT_LENGTH)
        super().__init__(**kwargs)

    def clean(self, value: str) -> str:
        text = super().clean(value)
        return _customer(text) if text else text


def _ad_group(text: str) -> str:
    text = str(text).strip()
    if not AD_GROUP_ID.fullmatch(text):
        raise ValidationError(
            _("An ad group id is a number (in the ad group's URL in Google Ads), not “%(value)s”."),
            params={"value": text},
        )
    return text


class AdGroupsInput(ProjectTemplateWidget):
    """The chosen ad groups (checkboxes, ticked), a search box that adds more, and two inputs
    for ids typed by hand: the account (`<name>_account`) and the ids (`<name>_ids`)."""

    template_name = "admin/setup_ad_groups.html"

    def value_from_datadict(self, data, files, name) -> dict:
        return {
            "chosen": data.getlist(name),
            "account": data.get(f"{name}_account", ""),
            "typed": data.get(f"{name}_ids", ""),
        }

    def value_omitted_from_data(self, data, files, name) -> bool:
        return False

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        account, typed, rows = dashed(connections.current().google_ads_customer_id.value), "", []
        if isinstance(value, dict):
            account, typed = value.get("account", account), value.get("typed", "")
            for raw in value.get("chosen", []):
                try:
                    rows.append(parse_ref(raw))
                except ValidationError:
                    continue
        else:
            rows = list(value or [])
        named = _stored_names(rows)
        context["widget"].update(
            {
                "rows": [(ref.value(), *_ref_words(named.get(ref.key, ref))) for ref in rows],
                "available": pickers.ad_groups_available(),
                "url": reverse("setup-pick-ad-groups"),
                "account": account,
                "typed": typed,
            }
        )
        return context


def _stored_names(refs: Sequence[AdGroupRef]) -> dict[tuple[str, str], AdGroupRef]:
    """The stored name and campaign of refs that came without them (typed, or `id:id`)."""
    bare = [ref for ref in refs if not ref.name]
    if not bare:
        return {}
    found = AdGroup.objects.filter(ad_group_id__in={ref.ad_group_id for ref in bare})
    keys = {ref.key for ref in bare}
    return {group.key: AdGroupRef.of(group) for group in found if group.key in keys}


def _ref_words(ref: AdGroupRef) -> tuple[str, str]:
    """A chosen ad group's line: its name (or id), then campaign, id and account."""
    label = ref.name or str(_("ad group %(id)s") % {"id": ref.ad_group_id})
    parts = []
    if ref.campaign_name:
        parts.append(str(_("campaign “%(campaign)s”") % {"campaign": ref.campaign_name}))
    parts.append(str(_("id %(id)s") % {"id": ref.ad_group_id}))
    parts.append(str(_("account %(account)s") % {"account": dashed(ref.customer_id)}))
    return label, " · ".join(parts)


class AdGroupsField(forms.Field):
    """The ad groups a watched product controls, at least one: a list of AdGroupRef."""

    widget = AdGroupsInput
    default_error_messages = {
        "required": _(
            "Choose at least one ad group: search by campaign or ad group name, or type its id."
        ),
    }

    def clean(self, value) -> list[AdGroupRef]:
        value = value if isinstance(value, dict) else {"chosen": list(value or [])}
        refs, errors = [], []
        for raw in value.get("chosen", []):
            try:
                refs.append(parse_ref(raw))
            except ValidationError as err:
                errors.append(err)
        typed = [part for part in SEPARATORS.split(value.get("typed", "").strip()) if part]
        if typed:
            try:
                account = _customer(value.get("account", ""))
            except ValidationError as err:
                errors.append(err)
            else:
                for text in typed:
                    try:
                        refs.append(AdGroupRef(account, _ad_group(text)))
                    except ValidationError as err:
                        errors.append(err)
        if errors:
            raise ValidationError(errors)
        unique = list({ref.key: ref for ref in reversed(refs)}.values())[::-1]
        if not unique:
            raise ValidationError(self.error_messages["required"], code="required")
        return unique

    def has_changed(self, initial, data) -> bool:
        before = {ref.key for ref in initial or []}
        try:
            after = {ref.key for ref in self.clean(data)}
        except ValidationError:
            return True
        return before != after


def keep_ad_groups(refs: Sequence[AdGroupRef]) -> list[AdGroup]:
    """The AdGroup rows of `refs`, created where new; a name and campaign the picker found
    are kept (a typed id keeps what the row already has)."""
    rows = []
    for ref in refs:
        group, created = AdGroup.objects.get_or_create(
            customer_id=ref.customer_id,
            ad_group_id=ref.ad_group_id,
            defaults={"name": ref.name, "campaign_name": ref.campaign_name},
        )
        if (
            not created
            and ref.name
            and (group.name, group.campaign_name)
            != (
                ref.name,
                ref.campaign_name,
            )
        ):
            AdGroup.objects.filter(pk=group.pk).update(
                name=ref.name, campaign_name=ref.campaign_name
            )
        rows.append(group)
    return rows


# --- the form ------------------------------------------------------------------------------


class WatchedProductForm(forms.ModelForm):
    """The watched product's page. The admin names the fields it shows (its fieldsets).

    `notes` are what the merchant should read after the save (e.g. that the variants could
    not be asked for): the admin shows them as messages.
    """

    variants = VariantsField(
        label=capfirst(WatchedProduct._meta.get_field("variants").verbose_name),
        help_text=_(
            "“All variants” counts every variant of the product, also ones added later in "
            "Shopify. Tick single variants to count only those (e.g. only the large candle)."
        ),
    )
    ad_groups = AdGroupsField(
        label=capfirst(WatchedProduct._meta.get_field("ad_groups").verbose_name),
        help_text=_(
            "The ad groups that advertise this product: they pause when it can no longer be "
            "sold and run again when it can. Untick one to remove it."
        ),
    )

    class Meta:
        model = WatchedProduct
        fields = [
            "label",
            "product_id",
            "variants",
            "pause_at",
            "resume_at",
            "enabled",
            "ad_groups",
        ]
        widgets = {
            "product_id": PickerInput("products", _("Search the shop by product title or SKU …")),
        }
        help_texts = {
            "product_id": _(
                "Search by title or SKU and choose the product; its number appears here (or "
                "type it: it is in the product's address in the Shopify admin)."
            ),
            "pause_at": _(
                "Pause the ad groups when the stock of the counted variants is at or below this "
                "number. 0: only when sold out; 3: when 3 or fewer are left."
            ),
            "resume_at": _(
                "After a pause, run again only when the stock is above this number, so a stock "
                "around “pause at” does not switch the ads with every sale (e.g. pause at 0, "
                "resume above 5: the ads run again from 6 on). Empty: as soon as the stock is "
                "above “pause at”."
            ),
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.notes: list[str] = []
        chosen = (
            [variant.inventory_item_id for variant in self.instance.variants.all()]
            if self.instance.pk
            else []
        )
        self._chosen_before = set(chosen)
        # model_to_dict gave the rows; the widgets take inventory item ids and refs.
        if "variants" in self.fields:
            self.initial["variants"] = chosen
            self.fields["variants"].widget.options = variant_options(self._product_id(), chosen)
        if "ad_groups" in self.fields:
            groups = self.instance.ad_groups.all() if self.instance.pk else []
            self.initial["ad_groups"] = [AdGroupRef.of(group) for group in groups]

    def _product_id(self) -> int | None:
        """The product the variant checkboxes are for: the posted one, else the stored one."""
        if self.is_bound:
            raw = str(self.data.get(self.add_prefix("product_id"), "")).strip()
            return int(raw) if raw.isdigit() else None
        return self.instance.product_id

    def clean(self):
        data = super().clean()
        product_id, variants = data.get("product_id"), data.get("variants")
        if "product_id" in self.errors or variants is None:
            return data
        if product_id is None:
            if not variants:
                self.add_error(
                    "product_id",
                    _("Choose the product (search by title or SKU) or type its number."),
                )
            return data
        learned = pickers.learn_product(product_id)
        if learned.missing:
            self.add_error(
                "product_id",
                _("Shopify has no product %(id)s: check the number, or search by title.")
                % {"id": product_id},
            )
            return data
        if learned.hint:
            self.notes.append(learned.hint)
        foreign = [
            variant
            for variant in variants
            if variant.inventory_item_id not in self._chosen_before
            and (variant.product is None or variant.product.product_id != product_id)
        ]
        if foreign:
            self.add_error(
                "variants",
                _("%(variants)s: not a variant of this product. Tick its own or “all variants”.")
                % {"variants": ", ".join(str(variant) for variant in foreign)},
            )
        return data

    def _save_m2m(self) -> None:
        if "ad_groups" in self.cleaned_data:
            self.cleaned_data["ad_groups"] = keep_ad_groups(self.cleaned_data["ad_groups"])
        super()._save_m2m()

    class Media:
        css = {"all": ["automation/watched_product.css"]}
        js = ["automation/watched_product.js"]


class AdGroupForm(forms.ModelForm):
    """An ad group's own page: the account may be pasted as Google Ads shows it (123-456-7890)."""

    customer_id = CustomerIdField(
        label=capfirst(AdGroup._meta.get_field("customer_id").verbose_name),
        help_text=_("The Google Ads account (10 digits; 123-456-7890 as Google Ads shows it)."),
    )

    class Meta:
        model = AdGroup
        fields = [
            "name",
            "campaign_name",
            "customer_id",
            "ad_group_id",
            "missing",
            "clicks_per_day",
            "cost_per_click",
        ]
        # The model has none for these two (adding them there would need a migration).
        help_texts = {
            "name": _("The ad group's name in Google Ads, as the picker found it."),
            "campaign_name": _("The name of its campaign in Google Ads."),
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if "customer_id" in self.fields and not self.instance.pk:
            self.initial.setdefault(
                "customer_id", dashed(connections.current().google_ads_customer_id.value)
            )
