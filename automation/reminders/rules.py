"""Pure decision rules: plain values in, a decision out (no ORM, no network, no Django).

An abandoned-checkout reminder is worth sending only when its expected margin beats doing
nothing: ΔE = p_a · (m − c) − p0 · m, with m the basket's margin, c the cost of the action per
completed order (the discount in €), p_a the completion rate after the action and p0 the rate
without any mail.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Literal

from automation.platform.notes import Note, note

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

NO_DISCOUNT_CODE = note("no_discount_code")


def recent_discount(cooldown_days: int) -> Note:
    """Why the discount arm is closed to an address that got a discount within the cooldown."""
    return note("recent_discount", days=cooldown_days)


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
    """In the active language; `reason_note` is what a decision row stores."""
    reason_note: Note | str = ""


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
    discount_unavailable_reason: Note | str = "",
) -> ReminderChoice:
    """Pick the arm with the larger positive ΔE; ties go to plain, the cheaper one for the shop."""
    p = probabilities
    margin = basket_margin(basket, rules, default_rate)
    discount_cost = _money(basket.total * p.discount_rate)
    delta_plain = expected_gain(p.p_plain, margin, Decimal(0), p.p0)
    delta_discount = (
        expected_gain(p.p_discount, margin, discount_cost, p.p0) if discount_available else None
    )

    def choice(arm: Arm, reason: Note) -> ReminderChoice:
        return ReminderChoice(
            arm, margin, discount_cost, delta_plain, delta_discount, str(reason), reason
        )

    values: dict[str, object] = {"plain": _cents(delta_plain)}
    if delta_discount is None:
        why = discount_unavailable_reason
        if not isinstance(why, Note):
            why = str(why).strip() or note("no_reason_given")
        values["why"] = why
        if delta_plain > 0:
            return choice("plain", note("choice_plain_no_discount", **values))
        return choice("none", note("choice_none_no_discount", **values))
    values["discount"] = _cents(delta_discount)
    if delta_discount > delta_plain and delta_discount > 0:
        return choice("discount", note("choice_discount", **values))
    if delta_plain > 0:
        return choice("plain", note("choice_plain", **values))
    return choice("none", note("choice_none", **values))


def _cents(gain: Decimal) -> Decimal:
    """A ΔE as the reason shows it: to the cent."""
    return gain.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


# --- measuring what reminders do: the holdout, the rates, which probabilities decide --------

DEFAULT_HOLDOUT_SHARE = Decimal("0.10")
"""Share of checkouts that would get a reminder but are kept as the control group (no mail)."""
DEFAULT_ATTRIBUTION_WINDOW_DAYS = 7
"""An order from the same address within this many days of a decision counts as its result."""
DEFAULT_MIN_DECISIONS_PER_ARM = 100
"""Measured rates replace the configured ones only once every arm has this many decisions."""
CREDIBLE_LEVEL = 0.90
"""The credible interval shown beside each measured rate: 5 % below, 5 % above."""
RATE_PLACES = Decimal("0.0001")
"""Measured rates are kept to four places, as the settings store the configured ones."""

MeasuredArm = Literal["holdout", "plain", "discount"]
MEASURED_ARMS: tuple[MeasuredArm, ...] = ("holdout", "plain", "discount")
"""The arms whose completion rates we measure: holdout for p0, then the two mails."""
PROBABILITY_OF_ARM = {"holdout": "p0", "plain": "p_plain", "discount": "p_discount"}
"""Which of the Probabilities each measured arm estimates."""

_DRAW_SPACE = 2**64


def holdout_draw(source: str, token: str, salt: str) -> Decimal:
    """The checkout's fixed position in [0, 1): the first 8 bytes of SHA-256(salt, source,
    token) as a fraction of 2^64.

    Seeded from the checkout alone, so every version and every re-run of one checkout draws
    the same; a new salt draws a new control group.
    """
    digest = hashlib.sha256(f"{salt}\x00{source}\x00{token}".encode()).digest()
    return Decimal(int.from_bytes(digest[:8], "big")) / Decimal(_DRAW_SPACE)


def in_holdout(source: str, token: str, salt: str, share: Decimal | str | int) -> bool:
    """Whether a checkout that would get a reminder is kept in the control group instead."""
    return holdout_draw(source, token, salt) < _fraction(share, "holdout share")


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularised incomplete beta function I_x(a, b): P(X ≤ x) for X ~ Beta(a, b).

    The continued fraction of Numerical Recipes (3rd ed., 6.4), evaluated with the modified
    Lentz method; for x beyond the mean it uses I_x(a, b) = 1 − I_{1−x}(b, a), where the
    fraction converges fast. Checked against the exact binomial sum for integer a and b.
    """
    if a <= 0 or b <= 0:
        raise ValueError(f"beta parameters must be positive, got {a}, {b}")
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1) / (a + b + 2):
        return 1.0 - math.exp(log_front) * _beta_fraction(1 - x, b, a) / b
    return math.exp(log_front) * _beta_fraction(x, a, b) / a


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz); converges for x < (a+1)/(a+b+2)."""
    tiny, epsilon = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < epsilon:
            return result
    raise ArithmeticError(f"incomplete beta did not converge for x={x}, a={a}, b={b}")


def beta_quantile(q: float, a: float, b: float) -> float:
    """The x with I_x(a, b) = q, by bisection to 1e-10 (the CDF is monotone on [0, 1])."""
    if not 0 <= q <= 1:
        raise ValueError(f"quantile must be between 0 and 1, got {q}")
    low, high = 0.0, 1.0
    while high - low > 1e-10:
        middle = (low + high) / 2
        if beta_cdf(middle, a, b) < q:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@dataclass(frozen=True)
class ArmCounts:
    """How many decisions an arm has whose attribution window has closed, and how many bought."""

    decisions: int
    conversions: int

    def __post_init__(self) -> None:
        if not 0 <= self.conversions <= self.decisions:
            raise ValueError(
                f"conversions must be between 0 and decisions, got {self.conversions} of "
                f"{self.decisions}"
            )

    @property
    def rate(self) -> Decimal | None:
        """conversions / decisions to four places; None without decisions."""
        if not self.decisions:
            return None
        return (Decimal(self.conversions) / Decimal(self.decisions)).quantize(
            RATE_PLACES, rounding=ROUND_HALF_UP
        )

    def interval(self, level: float = CREDIBLE_LEVEL) -> tuple[float, float]:
        """The equal-tailed credible interval of the rate: uniform prior Beta(1, 1), so the
        posterior is Beta(1 + conversions, 1 + decisions − conversions)."""
        a, b = 1 + self.conversions, 1 + self.decisions - self.conversions
        tail = (1 - level) / 2
        return beta_quantile(tail, a, b), beta_quantile(1 - tail, a, b)


@dataclass(frozen=True)
class ProbabilityChoice:
    """The probabilities a decision uses, where they come from, and why."""

    probabilities: Probabilities
    source: Literal["configured", "measured"]
    reason: str
    short: tuple[MeasuredArm, ...] = ()
    """Arms with fewer decisions than the minimum (why measured ones are not used yet)."""


def choose_probabilities(
    configured: Probabilities,
    counts: dict[str, ArmCounts],
    *,
    use_measured: bool,
    minimum: int,
) -> ProbabilityChoice:
    """The measured rates once every arm has `minimum` decisions and the merchant asks for
    them; otherwise the configured ones. The discount rate is always the configured one."""
    if not use_measured:
        return ProbabilityChoice(configured, "configured", "configured: chosen in the settings")
    short = tuple(
        arm for arm in MEASURED_ARMS if counts.get(arm, ArmCounts(0, 0)).decisions < minimum
    )
    if short:
        have = ", ".join(
            f"{arm} {counts.get(arm, ArmCounts(0, 0)).decisions} of {minimum}" for arm in short
        )
        return ProbabilityChoice(
            configured, "configured", f"configured: too few decisions yet ({have})", short
        )
    measured = Probabilities(
        **{PROBABILITY_OF_ARM[arm]: counts[arm].rate for arm in MEASURED_ARMS},
        discount_rate=configured.discount_rate,
    )
    return ProbabilityChoice(
        measured, "measured", f"measured: every arm has at least {minimum} decisions"
    )


@dataclass(frozen=True)
class Uplift:
    """Orders the mails added over the holdout's rate, with a credible interval."""

    orders: float
    low: float
    high: float


def uplift(
    mailed: Sequence[ArmCounts],
    holdout: ArmCounts,
    *,
    level: float = CREDIBLE_LEVEL,
    draws: int = 4000,
    seed: int = 0,
) -> Uplift | None:
    """Σ over the mailed arms of decisions · (rate − holdout rate), the orders the mails added.

    The point value uses the observed rates; the interval draws every arm's rate from its
    Beta posterior (uniform prior), a fixed seed so the page shows the same numbers on every
    load. None without holdout decisions: there is nothing to compare with.
    """
    if not holdout.decisions:
        return None
    base = holdout.conversions / holdout.decisions
    point = sum(arm.conversions - arm.decisions * base for arm in mailed)
    rng = random.Random(seed)
    samples = []
    for _draw in range(draws):
        p0 = rng.betavariate(1 + holdout.conversions, 1 + holdout.decisions - holdout.conversions)
        samples.append(
            sum(
                arm.decisions
                * (rng.betavariate(1 + arm.conversions, 1 + arm.decisions - arm.conversions) - p0)
                for arm in mailed
            )
        )
    samples.sort()
    tail = (1 - level) / 2
    low = samples[int(tail * (draws - 1))]
    high = samples[int((1 - tail) * (draws - 1))]
    return Uplift(point, low, high)
