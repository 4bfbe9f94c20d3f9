"""The reminder decision, checked against the worked examples (pure: no database, no Django)."""

from decimal import Decimal

import pytest

from automation.reminders.rules import (
    DEFAULT_MARGIN_RATE,
    DISCOUNT_COOLDOWN_DAYS,
    NO_DISCOUNT_CODE,
    Basket,
    Line,
    MarginRule,
    Probabilities,
    basket_margin,
    choose_reminder,
    expected_gain,
    margin_rate_for,
    recent_discount,
)

D = Decimal
DEFAULTS = Probabilities()


def one_line_basket(total: str) -> Basket:
    return Basket(total=D(total), lines=(Line(price=D(total), quantity=1, variant_id=1),))


@pytest.mark.parametrize(
    ("total", "rate", "margin", "cost", "delta_plain", "delta_discount", "arm"),
    [
        # 40 € at 55 %: 0.08·22 − 0.04·22 = 0.88; 0.11·(22 − 4) − 0.88 = 1.10 → discount
        ("40.00", "0.55", "22.00", "4.00", "0.8800", "1.1000", "discount"),
        # 40 € at 25 %: 0.08·10 − 0.4 = 0.40; 0.11·6 − 0.4 = 0.26 → plain
        ("40.00", "0.25", "10.00", "4.00", "0.4000", "0.2600", "plain"),
        # an empty basket is worth nothing either way
        ("0.00", "0.55", "0.00", "0.00", "0.0000", "0.0000", "none"),
    ],
)
def test_worked_examples(total, rate, margin, cost, delta_plain, delta_discount, arm):
    # given a basket and a merchant rule for its only variant
    basket = one_line_basket(total)
    rules = [MarginRule(rate=D(rate), variant_id=1)]

    # when the reminder is chosen with the default probabilities
    choice = choose_reminder(
        basket, rules, DEFAULTS, default_rate=DEFAULT_MARGIN_RATE, discount_available=True
    )

    # then the numbers match the worked example
    assert choice.margin == D(margin)
    assert choice.discount_cost == D(cost)
    assert choice.delta_plain == D(delta_plain)
    assert choice.delta_discount == D(delta_discount)
    assert choice.arm == arm


def test_reason_names_both_values():
    basket = one_line_basket("40.00")
    choice = choose_reminder(
        basket,
        [MarginRule(rate=D("0.55"), variant_id=1)],
        DEFAULTS,
        default_rate=DEFAULT_MARGIN_RATE,
        discount_available=True,
    )
    assert choice.reason == "discount: ΔE 1.10 > plain 0.88"


def test_tie_goes_to_plain():
    # with p_discount = p_plain and a free discount, both arms have the same ΔE
    probabilities = Probabilities(p_plain=D("0.08"), p_discount=D("0.08"), discount_rate=D("0"))
    choice = choose_reminder(
        one_line_basket("40.00"),
        [],
        probabilities,
        default_rate=DEFAULT_MARGIN_RATE,
        discount_available=True,
    )
    assert choice.delta_plain == choice.delta_discount > 0
    assert choice.arm == "plain"


def test_no_lift_means_no_mail():
    # p_plain = p0 and the discount only costs: both ΔE ≤ 0
    probabilities = Probabilities(p0=D("0.08"), p_plain=D("0.08"), p_discount=D("0.08"))
    choice = choose_reminder(
        one_line_basket("40.00"),
        [],
        probabilities,
        default_rate=DEFAULT_MARGIN_RATE,
        discount_available=True,
    )
    assert choice.delta_plain == D("0")
    assert choice.delta_discount < 0
    assert choice.arm == "none"
    assert choice.reason.startswith("none:")


@pytest.mark.parametrize("why", [NO_DISCOUNT_CODE, recent_discount(DISCOUNT_COOLDOWN_DAYS)])
def test_discount_unavailable_falls_back_to_plain_with_reason(why):
    # the 55 % basket would get the discount, were it available
    choice = choose_reminder(
        one_line_basket("40.00"),
        [MarginRule(rate=D("0.55"), variant_id=1)],
        DEFAULTS,
        default_rate=DEFAULT_MARGIN_RATE,
        discount_available=False,
        discount_unavailable_reason=why,
    )
    assert choice.arm == "plain"
    assert choice.delta_discount is None
    assert choice.delta_plain == D("0.88")
    assert choice.reason == f"plain: ΔE 0.88; discount unavailable ({why})"


def test_discount_unavailable_and_no_lift_is_none():
    choice = choose_reminder(
        one_line_basket("40.00"),
        [],
        Probabilities(p0=D("0.08"), p_plain=D("0.08")),
        default_rate=DEFAULT_MARGIN_RATE,
        discount_available=False,
        discount_unavailable_reason=NO_DISCOUNT_CODE,
    )
    assert choice.arm == "none"
    assert str(NO_DISCOUNT_CODE) in choice.reason


LINE = Line(price=D("10.00"), quantity=1, variant_id=11, product_id=22, sku="EK-1", vendor="Wachs")
VARIANT = MarginRule(rate=D("0.10"), variant_id=11)
PRODUCT = MarginRule(rate=D("0.20"), product_id=22)
SKU = MarginRule(rate=D("0.30"), sku="EK-1")
VENDOR = MarginRule(rate=D("0.50"), vendor="Wachs")


@pytest.mark.parametrize(
    ("rules", "rate"),
    [
        ([VENDOR, SKU, PRODUCT, VARIANT], "0.10"),  # variant beats everything
        ([VENDOR, SKU, PRODUCT], "0.20"),  # product beats sku and vendor
        ([VENDOR, SKU], "0.30"),  # sku beats vendor
        ([VENDOR], "0.50"),
        ([MarginRule(rate=D("0.50"), vendor=" wachs ")], "0.50"),  # vendor ignores case
        ([MarginRule(rate=D("0.90"), variant_id=99), MarginRule(rate=D("0.9"), sku="X")], "0.40"),
        ([], "0.40"),  # nothing matches: the default
    ],
)
def test_most_specific_rule_wins(rules, rate):
    assert margin_rate_for(LINE, rules, DEFAULT_MARGIN_RATE) == D(rate)


def test_first_listed_rule_wins_among_equals():
    rules = [MarginRule(rate=D("0.35"), vendor="Wachs"), MarginRule(rate=D("0.45"), vendor="Wachs")]
    assert margin_rate_for(LINE, rules, DEFAULT_MARGIN_RATE) == D("0.35")


def test_mixed_basket_sums_each_line_at_its_own_rate():
    # given three lines: one with a variant rule, one with a vendor rule, one unmatched
    basket = Basket(
        total=D("75.80"),
        lines=(
            Line(price=D("24.00"), quantity=2, variant_id=1, vendor="Wachs"),  # 48.00 · 0.55
            Line(price=D("12.90"), quantity=1, variant_id=2, vendor="Wachs"),  # 12.90 · 0.30
            Line(price=D("14.90"), quantity=1, variant_id=3, vendor="Andere"),  # 14.90 · 0.40
        ),
    )
    rules = [MarginRule(rate=D("0.55"), variant_id=1), MarginRule(rate=D("0.30"), vendor="Wachs")]

    # then the margin is 26.40 + 3.87 + 5.96 = 36.23
    assert basket_margin(basket, rules, DEFAULT_MARGIN_RATE) == D("36.23")

    # and the discount (7.58) still pays: 0.11 · (36.23 − 7.58) − 0.04 · 36.23 > 0.04 · 36.23
    choice = choose_reminder(
        basket, rules, DEFAULTS, default_rate=DEFAULT_MARGIN_RATE, discount_available=True
    )
    assert choice.discount_cost == D("7.58")
    assert choice.delta_plain == D("1.4492")
    assert choice.delta_discount == D("1.7023")
    assert choice.arm == "discount"


def test_basket_without_lines_uses_default_rate_on_total():
    # Stripe gives only a total
    basket = Basket(total=D("40.00"))
    rules = [MarginRule(rate=D("0.90"), vendor="Wachs")]
    assert basket_margin(basket, rules, DEFAULT_MARGIN_RATE) == D("16.00")
    choice = choose_reminder(
        basket, rules, DEFAULTS, default_rate=DEFAULT_MARGIN_RATE, discount_available=True
    )
    assert choice.delta_plain == D("0.64")  # 0.04 · 16
    assert choice.delta_discount == D("0.68")  # 0.11 · (16 − 4) − 0.64
    assert choice.arm == "discount"


def test_prices_arrive_as_strings():
    line = Line(price="24.00", quantity=2)
    assert line.price == D("24.00")
    assert Basket(total="48.00", lines=[line]).lines == (line,)


def test_expected_gain_formula():
    assert expected_gain(D("0.11"), D("22"), D("4"), D("0.04")) == D("1.1000")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Line(price=D("-1.00"), quantity=1), "line price must not be negative"),
        (lambda: Line(price=D("1.00"), quantity=-1), "line quantity must not be negative"),
        (lambda: Line(price="abc", quantity=1), "line price is not a number"),
        (lambda: Line(price="NaN", quantity=1), "line price must be finite"),
        (lambda: Basket(total=D("-0.01")), "basket total must not be negative"),
        (lambda: Probabilities(p0=D("-0.01")), "p0 must be between 0 and 1"),
        (lambda: Probabilities(p_plain=D("1.01")), "p_plain must be between 0 and 1"),
        (lambda: Probabilities(p_discount=D("2")), "p_discount must be between 0 and 1"),
        (lambda: Probabilities(discount_rate=D("1.5")), "discount_rate must be between 0 and 1"),
        (lambda: MarginRule(rate=D("1.2"), vendor="Wachs"), "rate must be between 0 and 1"),
        (lambda: MarginRule(rate=D("0.4")), "exactly one of"),
        (lambda: MarginRule(rate=D("0.4"), variant_id=1, sku="EK-1"), "exactly one of"),
        (lambda: expected_gain(D("1.1"), D("1"), D("0"), D("0")), "p_action must be between"),
        (lambda: expected_gain(D("0.1"), D("1"), D("-1"), D("0")), "cost must not be negative"),
        (
            lambda: basket_margin(Basket(total=D("1")), [], D("1.4")),
            "default_rate must be between 0 and 1",
        ),
    ],
)
def test_invalid_inputs_raise_value_error(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_float_money_is_refused():
    with pytest.raises(TypeError):
        Line(price=24.0, quantity=1)
