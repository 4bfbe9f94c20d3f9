"""THE rule for an ad group's status, from everything that controls it (pure: plain values in,
a verdict out).

Per ad group: a manual state wins; outside the window of every promotion that lists the ad
group, it is paused; otherwise it runs while at least one of the watched products that
control it can be sold, and is paused when none can. A product can be sold when it is active
and the stock of its counted variants over its counted locations is above its pause level
(above its resume level once paused); a variant Shopify keeps selling without stock (not
tracked, or policy "continue") always can. While a variant's stock was never reported, a
product whose other variants are not above the level is not known to be sold out.

Every verdict carries a `Reason` (a code and its values) that names what decided; `text()`
writes it in the active language.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.utils import formats
from django.utils.translation import gettext

from automation.platform import notes

PAUSED = "PAUSED"
ENABLED = "ENABLED"
ACTIVE = "active"
UNKNOWN_STATUS = ""


@dataclass(frozen=True)
class Reason:
    """What decided, as a code with its values; rendered when written or shown."""

    code: str
    values: dict[str, object] = field(default_factory=dict)

    def text(self) -> str:
        """The reason in the active language (the shop's, in a worker: LANGUAGE_CODE)."""
        return _render(self)

    def note(self) -> notes.Note | str:
        """The reason as a note, so a stored row is shown in its reader's language."""
        return _note(self)


# --- facts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LevelFact:
    """One location's stored stock of a variant; `counted` is False for an excluded location."""

    location: str
    available: int | None
    counted: bool = True


@dataclass(frozen=True)
class VariantFact:
    """A variant the product counts, with its levels."""

    name: str
    tracked: bool = True
    keeps_selling: bool = False  # inventory policy "continue" (e.g. pre-orders)
    levels: tuple[LevelFact, ...] = ()


@dataclass(frozen=True)
class ProductFact:
    """A watched product as the rule needs it.

    `was_sellable` is what the product was the last time it was decided (None: never), the
    memory the resume level needs. `status` is Shopify's product status ("" when not known:
    a product known only by an inventory item id counts as active).
    """

    label: str
    pause_at: int
    resume_at: int
    was_sellable: bool | None = None
    status: str = ACTIVE
    variants: tuple[VariantFact, ...] = ()


@dataclass(frozen=True)
class Sellability:
    """Whether a product can be sold now: None while nothing is known about its stock.

    `stock` is the counted total (None when not counted); the variants and locations whose stock
    decided stand in the reason's values (`where`), which render them.
    """

    sellable: bool | None
    reason: Reason
    stock: int | None = None


@dataclass(frozen=True)
class PromotionFact:
    """A promotion that lists the ad group: whether now is inside its window, and which side."""

    name: str
    in_window: bool
    ended: bool = False


@dataclass(frozen=True)
class AdGroupFact:
    """Everything that controls one ad group."""

    manual_status: str = ""
    manual_by: str = ""
    manual_reason: str = ""
    promotions: tuple[PromotionFact, ...] = ()
    products: tuple[Sellability, ...] = ()
    labels: tuple[str, ...] = ()  # the controlling products' labels, for the merchant's lists


@dataclass(frozen=True)
class Verdict:
    """The status an ad group should have (None: nothing controls it, or nothing is known)."""

    status: str | None
    reason: Reason


# --- the rule ------------------------------------------------------------------------------


def product_sellable(product: ProductFact) -> Sellability:
    """Whether the product can be sold now, and what decided it."""
    label = product.label
    if product.status not in (ACTIVE, UNKNOWN_STATUS):
        return Sellability(
            False, Reason("product_inactive", {"label": label, "status": product.status})
        )
    if not product.variants:
        return Sellability(None, Reason("no_variants", {"label": label}))
    for variant in product.variants:
        if not variant.tracked:
            return Sellability(
                True,
                Reason("untracked", {"label": label, "variant": variant.name}),
            )
        if variant.keeps_selling:
            return Sellability(
                True,
                Reason("keeps_selling", {"label": label, "variant": variant.name}),
            )
    if not any(variant.levels for variant in product.variants):
        return Sellability(None, Reason("stock_unknown", {"label": label}))
    stock = sum(
        level.available or 0
        for variant in product.variants
        for level in variant.levels
        if level.counted
    )
    entries = _where(product.variants)
    waiting = product.was_sellable is False and product.resume_at > product.pause_at
    level = product.resume_at if waiting else product.pause_at
    values = {"label": label, "stock": stock, "level": level, "where": entries}
    if stock > level:
        return Sellability(True, Reason("in_stock", values), stock)
    unknown = [variant.name for variant in product.variants if not variant.levels]
    if unknown:
        # Not sold out for sure while a variant's stock was never reported (the nightly run
        # reads it): pausing now could stop ads for a product that sells.
        values["unknown"] = ", ".join(unknown)
        return Sellability(None, Reason("stock_partly_unknown", values), stock)
    if stock > product.pause_at:  # paused, and not yet above the resume level
        return Sellability(False, Reason("below_resume", values), stock)
    values["level"] = product.pause_at
    several = len(product.variants) > 1
    code = "all_sold_out" if several and stock <= 0 else "sold_out"
    return Sellability(False, Reason(code, values), stock)


def ad_group_status(facts: AdGroupFact) -> Verdict:
    """The status one ad group should have, and the reason that names what decided."""
    if facts.manual_status:
        values = {"who": facts.manual_by or "?", "why": facts.manual_reason}
        code = "manual_paused" if facts.manual_status == PAUSED else "manual_enabled"
        return Verdict(facts.manual_status, Reason(code, values))
    if facts.promotions and not any(promotion.in_window for promotion in facts.promotions):
        promotion = _last_relevant(facts.promotions)
        code = "promotion_ended" if promotion.ended else "promotion_not_started"
        return Verdict(PAUSED, Reason(code, {"name": promotion.name}))
    running = next((promotion for promotion in facts.promotions if promotion.in_window), None)
    if not facts.products:
        if running is not None:
            return Verdict(ENABLED, Reason("promotion_running", {"name": running.name}))
        return Verdict(None, Reason("not_controlled"))
    for product in facts.products:
        if product.sellable:
            return Verdict(ENABLED, product.reason)
    decided = [product for product in facts.products if product.sellable is False]
    if not decided:
        return Verdict(None, facts.products[0].reason)
    if len(decided) == 1:
        return Verdict(PAUSED, decided[0].reason)
    return Verdict(PAUSED, Reason("none_sellable", {"reasons": [p.reason for p in decided]}))


def _last_relevant(promotions: Sequence[PromotionFact]) -> PromotionFact:
    """The promotion to name when all are outside their window: one that ended, if any."""
    return next((promotion for promotion in promotions if promotion.ended), promotions[0])


def _where(variants: Sequence[VariantFact]) -> list[list[object]]:
    """The variants (and locations, when there are several) holding counted stock, as
    [variant, location or "", available] entries; none for a one-variant, one-location
    product, which needs no detail. Kept as values, written out in the reader's language."""
    locations = {level.location for variant in variants for level in variant.levels}
    if len(variants) == 1 and len(locations) <= 1:
        return []
    entries: list[list[object]] = []
    for variant in variants:
        held = [level for level in variant.levels if level.counted and (level.available or 0) > 0]
        if len(locations) > 1:
            entries += [[variant.name, level.location, level.available] for level in held]
        elif held:
            entries.append([variant.name, "", sum(level.available or 0 for level in held)])
    return entries


def where_text(entries: object) -> str:
    """'groß: 3 Lager Hamburg; klein: 2' from `_where`'s entries (or a name, for one variant)."""
    if isinstance(entries, str):
        return entries
    by_variant: dict[str, list[str]] = {}
    for name, location, available in entries or []:  # type: ignore[misc]
        amount = formats.localize(available)
        by_variant.setdefault(str(name), []).append(
            f"{amount} {location}" if location else str(amount)
        )
    return "; ".join(f"{name}: {', '.join(parts)}" for name, parts in by_variant.items())


# --- words ---------------------------------------------------------------------------------


def _note(reason: Reason) -> notes.Note | str:
    values = dict(reason.values)
    code = reason.code
    if code == "none_sellable":
        return notes.join(*(inner.note() for inner in values["reasons"]))  # type: ignore[union-attr]
    if code == "product_inactive":
        status = str(values.get("status"))
        named = f"product_{status}"
        values["status"] = notes.note(named) if named in notes.TEMPLATES else status
    where = where_text(values.pop("where", None))
    placeholders = _PLACEHOLDER.findall(str(notes.TEMPLATES[f"rule_{code}"]))
    made = notes.note(f"rule_{code}", **{name: values.get(name) for name in placeholders})
    if where and code in ("in_stock", "below_resume", "sold_out", "all_sold_out"):
        return notes.note("rule_where", reason=made, where=where)
    return made


_PLACEHOLDER = re.compile(r"%\((\w+)\)")


def _render(reason: Reason) -> str:
    values = dict(reason.values)
    for name in ("stock", "level"):
        if isinstance(values.get(name), int):
            values[name] = formats.localize(values[name])
    code = reason.code
    if code == "none_sellable":
        return "; ".join(inner.text() for inner in values["reasons"])  # type: ignore[union-attr]
    if code == "product_inactive":
        status = values.get("status")
        values["status"] = {
            "archived": gettext("archived"),
            "draft": gettext("draft"),
            "unlisted": gettext("unlisted"),
        }.get(str(status), str(status))
    text = _TEMPLATES[code]() % values
    where = where_text(values.get("where"))
    if where and code in ("in_stock", "below_resume", "sold_out", "all_sold_out"):
        text = f"{text} ({where})"
    return text


_TEMPLATES = {
    "in_stock": lambda: gettext("%(label)s: %(stock)s available > %(level)s"),
    "sold_out": lambda: gettext("%(label)s: %(stock)s available ≤ %(level)s"),
    "all_sold_out": lambda: gettext(
        "%(label)s: all variants sold out (%(stock)s available ≤ %(level)s)"
    ),
    "below_resume": lambda: gettext(
        "%(label)s: %(stock)s available, runs again only above %(level)s"
    ),
    "product_inactive": lambda: gettext("%(label)s: the product is %(status)s in Shopify"),
    "untracked": lambda: gettext("%(label)s: Shopify does not track the stock of %(variant)s"),
    "keeps_selling": lambda: gettext(
        "%(label)s: Shopify keeps selling %(variant)s when it is sold out"
    ),
    "no_variants": lambda: gettext("%(label)s: no variants known yet"),
    "stock_unknown": lambda: gettext("%(label)s: no stock known yet"),
    "stock_partly_unknown": lambda: gettext(
        "%(label)s: %(stock)s available, no stock known yet for %(unknown)s"
    ),
    "manual_paused": lambda: gettext("manually paused by %(who)s: %(why)s"),
    "manual_enabled": lambda: gettext("manually enabled by %(who)s: %(why)s"),
    "promotion_ended": lambda: gettext("promotion “%(name)s” ended"),
    "promotion_not_started": lambda: gettext("promotion “%(name)s” has not started"),
    "promotion_running": lambda: gettext("promotion “%(name)s” is running"),
    "not_controlled": lambda: gettext("no watched product or promotion controls it"),
}
