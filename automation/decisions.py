"""Pure decision rules: plain values in, a decision out (no ORM, no network, no Django).

An abandoned-checkout reminder is worth sending only when its expected margin beats doing
nothing: ΔE = p_a · (m − c) − p0 · m, with m the basket's margin, c the cost of the action per
completed order (the discount in €), p_a the completion rate after the action and p0 the rate
without any mail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Literal

DEFAULT_MARGIN_RATE = Decimal("0.40")
"""Margin rate for lines no merchant rule matches (and for baskets without line items)."""

DISCOUNT_COOLDOWN_DAYS = 30
"""An address that got a discount within this many days gets no discount arm."""

DEFAULT_P0 = Decimal("0.04")
"""Share of abandoned checkouts that complete without any mail, until we have our own data."""
DEFAULT_P_PLAIN = Decimal("0.08")
"""Share that complete after a plain reminder."""
DEFAULT_P_DISCOUNT = Decimal("0.11")
"""Share that complete after a reminder with a discount code."""
DEFAULT_DISCOUNT_RATE = Decimal("0.10")
"""The discount the code gives, as a share of the basket."""

NO_DISCOUNT_CODE = "no discount code configured"


def recent_discount(cooldown_days: int) -> str:
    """Why the discount arm is closed to an address that got a discount within the cooldown."""
    return f"address got a discount within {cooldown_days} days"


CENT = Decimal("0.01")
GAIN_PLACES = Decimal("0.0001")

Arm = Literal["none", "plain", "discount"]


def _decimal(value: Decimal | str | int, name: str) -> Decimal:
    """Accept Decimal, int or a numeric string (as the webhooks send prices); floats lose cents."""
    if isinstance(value, bool | float):
        raise TypeError(f"{name} must be a Decimal, int or numeric string, not {value!r}")
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation as err:
        raise ValueError(f"{name} is not a number: {value!r}") from err
    if not number.is_finite():
        raise ValueError(f"{name} must be finite, got {value!r}")
    return number


def _non_negative(value: Decimal | str | int, name: str) -> Decimal:
    """A money amount below zero is a bug upstream, not a basket."""
    number = _decimal(value, name)
    if number < 0:
        raise ValueError(f"{name} must not be negative, got {number}")
    return number


def _fraction(value: Decimal | str | int, name: str) -> Decimal:
    """Rates and probabilities outside [0, 1] would make the expected value meaningless."""
    number = _decimal(value, name)
    if not Decimal(0) <= number <= Decimal(1):
        raise ValueError(f"{name} must be between 0 and 1, got {number}")
    return number


def _money(value: Decimal) -> Decimal:
    """Round to cents the way a receipt would."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Line:
    """One basket line, with the identifiers margin rules can match on."""

    price: Decimal
    quantity: int
    variant_id: int | None = None
    product_id: int | None = None
    sku: str = ""
    vendor: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "price", _non_negative(self.price, "line price"))
        if isinstance(self.quantity, bool) or not isinstance(self.quantity, int):
            raise TypeError(f"line quantity must be an int, not {self.quantity!r}")
        if self.quantity < 0:
            raise ValueError(f"line quantity must not be negative, got {self.quantity}")


_MATCHERS = ("variant_id", "product_id", "sku", "vendor")
"""Matcher fields, most specific first: a variant rule beats a product rule, and so on."""


@dataclass(frozen=True)
class MarginRule:
    """A merchant-edited margin rate for one variant, product, SKU or vendor (exactly one)."""

    rate: Decimal
    variant_id: int | None = None
    product_id: int | None = None
    sku: str = ""
    vendor: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", _fraction(self.rate, "margin rule rate"))
        given = [name for name in _MATCHERS if self._matcher_value(name)]
        if len(given) != 1:
            raise ValueError(
                "a margin rule needs exactly one of variant_id, product_id, sku, vendor; "
                f"got {', '.join(given) or 'none'}"
            )

    def _matcher_value(self, name: str) -> int | str | None:
        """The normalised matcher value, or None when this field is unset."""
        value = getattr(self, name)
        if isinstance(value, str):
            return value.strip() or None
        return value

    @property
    def specificity(self) -> int:
        """Position in variant > product > sku > vendor; lower wins."""
        return next(i for i, name in enumerate(_MATCHERS) if self._matcher_value(name))

    def matches(self, line: Line) -> bool:
        """SKUs compare exactly (trimmed); vendors ignore case, as merchants type them by hand."""
        if self.variant_id is not None:
            return line.variant_id == self.variant_id
        if self.product_id is not None:
            return line.product_id == self.product_id
        if self.sku.strip():
            return line.sku.strip() == self.sku.strip()
        return line.vendor.strip().casefold() == self.vendor.strip().casefold()


@dataclass(frozen=True)
class Probabilities:
    """Completion rates per arm and the discount offered; defaults until we have our own data."""

    p0: Decimal = DEFAULT_P0
    p_plain: Decimal = DEFAULT_P_PLAIN
    p_discount: Decimal = DEFAULT_P_DISCOUNT
    discount_rate: Decimal = DEFAULT_DISCOUNT_RATE

    def __post_init__(self) -> None:
        for name in ("p0", "p_plain", "p_discount", "discount_rate"):
            object.__setattr__(self, name, _fraction(getattr(self, name), name))


@dataclass(frozen=True)
class Basket:
    """An abandoned basket; Stripe gives only a total, so lines may be empty."""

    total: Decimal
    lines: tuple[Line, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", _non_negative(self.total, "basket total"))
        object.__setattr__(self, "lines", tuple(self.lines))


@dataclass(frozen=True)
class ReminderChoice:
    """The arm to send and the numbers behind it, kept for the merchant's audit trail."""

    arm: Arm
    margin: Decimal
    discount_cost: Decimal
    """What the discount would cost per completed order, computed even when unavailable."""
    delta_plain: Decimal
    delta_discount: Decimal | None
    """None when the discount arm is unavailable."""
    reason: str


def margin_rate_for(
    line: Line, rules: Sequence[MarginRule], default_rate: Decimal | str
) -> Decimal:
    """The most specific matching rule's rate (first listed wins a tie), else the default."""
    best: MarginRule | None = None
    for rule in rules:
        if rule.matches(line) and (best is None or rule.specificity < best.specificity):
            best = rule
    if best is not None:
        return best.rate
    return _fraction(default_rate, "default_rate")


def basket_margin(
    basket: Basket, rules: Sequence[MarginRule], default_rate: Decimal | str
) -> Decimal:
    """Margin in € the merchant keeps if the basket completes, rounded to cents."""
    default = _fraction(default_rate, "default_rate")
    if not basket.lines:
        return _money(basket.total * default)
    rules = tuple(rules)
    margin = sum(
        (
            line.price * line.quantity * margin_rate_for(line, rules, default)
            for line in basket.lines
        ),
        Decimal(0),
    )
    return _money(margin)


def expected_gain(
    p_action: Decimal | str, margin: Decimal | str, cost: Decimal | str, p0: Decimal | str
) -> Decimal:
    """ΔE = p_a · (m − c) − p0 · m: what an action adds over doing nothing, to 4 places."""
    p_a = _fraction(p_action, "p_action")
    p_none = _fraction(p0, "p0")
    m = _non_negative(margin, "margin")
    c = _non_negative(cost, "cost")
    return (p_a * (m - c) - p_none * m).quantize(GAIN_PLACES, rounding=ROUND_HALF_UP)


def choose_reminder(
    basket: Basket,
    rules: Sequence[MarginRule],
    probabilities: Probabilities,
    *,
    default_rate: Decimal | str,
    discount_available: bool,
    discount_unavailable_reason: str = "",
) -> ReminderChoice:
    """Pick the arm with the larger positive ΔE; ties go to plain, the cheaper one for the shop."""
    p = probabilities
    margin = basket_margin(basket, rules, default_rate)
    discount_cost = _money(basket.total * p.discount_rate)
    delta_plain = expected_gain(p.p_plain, margin, Decimal(0), p.p0)
    delta_discount = (
        expected_gain(p.p_discount, margin, discount_cost, p.p0) if discount_available else None
    )

    def choice(arm: Arm, reason: str) -> ReminderChoice:
        return ReminderChoice(arm, margin, discount_cost, delta_plain, delta_discount, reason)

    if delta_discount is None:
        why = discount_unavailable_reason.strip() or "no reason given"
        if delta_plain > 0:
            return choice("plain", f"plain: ΔE {delta_plain:.2f}; discount unavailable ({why})")
        return choice("none", f"none: plain ΔE {delta_plain:.2f} ≤ 0; discount unavailable ({why})")
    if delta_discount > delta_plain and delta_discount > 0:
        return choice("discount", f"discount: ΔE {delta_discount:.2f} > plain {delta_plain:.2f}")
    if delta_plain > 0:
        return choice("plain", f"plain: ΔE {delta_plain:.2f} ≥ discount {delta_discount:.2f}")
    return choice(
        "none", f"none: plain ΔE {delta_plain:.2f} and discount ΔE {delta_discount:.2f} ≤ 0"
    )


def status_to_set(stock_status: str, manual_status: str) -> str:
    """The ad group status to set: a manual state wins over the stock until it is released.

    `stock_status` is what the stock asks for (paused at or below the threshold), and
    `manual_status` the merchant's manual state ("" when there is none).
    """
    return manual_status or stock_status
