"""Measuring what reminders do: the holdout draw, the credible interval, which probabilities
decide, and a simulated shop whose true rates the measurement must find (pure: no database)."""

import math
import random
from decimal import Decimal

import pytest

from automation.reminders.rules import (
    CREDIBLE_LEVEL,
    DEFAULT_HOLDOUT_SHARE,
    DEFAULT_MIN_DECISIONS_PER_ARM,
    MEASURED_ARMS,
    ArmCounts,
    Basket,
    Probabilities,
    beta_cdf,
    beta_quantile,
    choose_probabilities,
    choose_reminder,
    holdout_draw,
    in_holdout,
    uplift,
)

D = Decimal
SAMPLE_TOKEN = "b7d1c0a9e4f24f0e8a1d3c5b7e9f1a2c"  # the Shopify sample checkout's token


# --- the holdout draw ---------------------------------------------------------------------


def test_the_draw_is_the_checkout_s_fixed_position():
    # given the sample checkout: SHA-256("\0shopify\0b7d1…")'s first 8 bytes / 2^64
    draw = holdout_draw("shopify", SAMPLE_TOKEN, "")

    # then it is always the same number, and above 10 %: it gets its reminder
    assert draw == holdout_draw("shopify", SAMPLE_TOKEN, "")
    assert float(draw) == pytest.approx(0.9079649105551)
    assert not in_holdout("shopify", SAMPLE_TOKEN, "", DEFAULT_HOLDOUT_SHARE)
    # a new salt draws anew: 0.0748 < 0.10, held out
    assert float(holdout_draw("shopify", SAMPLE_TOKEN, "neu")) == pytest.approx(0.0747960512601)
    assert in_holdout("shopify", SAMPLE_TOKEN, "neu", DEFAULT_HOLDOUT_SHARE)
    # the same token from another sender is another checkout
    assert holdout_draw("stripe", SAMPLE_TOKEN, "") != draw


def test_the_draw_holds_out_the_configured_share():
    tokens = [f"checkout-{n}" for n in range(20_000)]

    held = sum(in_holdout("shopify", token, "", DEFAULT_HOLDOUT_SHARE) for token in tokens)

    # 10 % of 20,000 = 2,000; the binomial standard deviation is 42
    assert 1_850 < held < 2_150
    assert not any(in_holdout("shopify", token, "", 0) for token in tokens[:1000])
    assert all(in_holdout("shopify", token, "", 1) for token in tokens[:1000])


def test_a_share_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="holdout share"):
        in_holdout("shopify", SAMPLE_TOKEN, "", D("1.5"))


# --- the credible interval ----------------------------------------------------------------


def binomial_tail(x: float, a: int, b: int) -> float:
    """I_x(a, b) for integers: P(Binomial(a + b − 1, x) ≥ a), summed exactly in logs."""
    n = a + b - 1
    return sum(
        math.exp(
            math.lgamma(n + 1)
            - math.lgamma(j + 1)
            - math.lgamma(n - j + 1)
            + j * math.log(x)
            + (n - j) * math.log1p(-x)
        )
        for j in range(a, n + 1)
    )


@pytest.mark.parametrize(
    ("a", "b"), [(1, 1), (2, 1), (1, 5), (9, 93), (77, 1965), (740, 8241), (3, 400)]
)
@pytest.mark.parametrize("x", [0.001, 0.03, 0.08, 0.11, 0.5, 0.97])
def test_the_incomplete_beta_matches_the_binomial_sum(a, b, x):
    # the reference sums up to 9,000 terms, each from lgamma: it is itself good to ~1e-11
    assert beta_cdf(x, a, b) == pytest.approx(binomial_tail(x, a, b), abs=1e-10)


def test_quantiles_with_closed_forms():
    # Beta(1, 1) is uniform; Beta(2, 1) has CDF x²; Beta(1, n) has CDF 1 − (1 − x)^n
    assert beta_quantile(0.05, 1, 1) == pytest.approx(0.05, abs=1e-9)
    assert beta_quantile(0.5, 2, 1) == pytest.approx(math.sqrt(0.5), abs=1e-9)
    assert beta_quantile(0.95, 1, 100) == pytest.approx(1 - 0.05 ** (1 / 100), abs=1e-9)


def test_worked_example_8_of_100():
    # given 8 orders after 100 plain reminders: posterior Beta(9, 93)
    counts = ArmCounts(decisions=100, conversions=8)

    low, high = counts.interval()

    # then 5 % of the posterior lies below 4.73 % and 5 % above 13.84 %
    assert counts.rate == D("0.0800")
    assert (round(low, 4), round(high, 4)) == (0.0473, 0.1384)
    assert binomial_tail(low, 9, 93) == pytest.approx(0.05, abs=1e-8)
    assert binomial_tail(high, 9, 93) == pytest.approx(0.95, abs=1e-8)


def test_without_decisions_the_interval_is_the_prior():
    counts = ArmCounts(decisions=0, conversions=0)
    assert counts.rate is None
    assert counts.interval() == pytest.approx((0.05, 0.95), abs=1e-9)


def test_the_interval_covers_the_truth_nine_times_in_ten():
    # 400 small shops with a true rate of 8 %: the 90 % interval should miss about 40 times
    rng = random.Random(90)
    covered = 0
    for _ in range(400):
        n = 300
        k = sum(rng.random() < 0.08 for _ in range(n))
        low, high = ArmCounts(n, k).interval()
        covered += low <= 0.08 <= high
    # binomial(400, 0.9): standard deviation 6
    assert 342 <= covered <= 378


# --- which probabilities decide -----------------------------------------------------------

CONFIGURED = Probabilities()
ENOUGH = {
    "holdout": ArmCounts(200, 10),
    "plain": ArmCounts(400, 36),
    "discount": ArmCounts(300, 30),
}


def test_configured_when_the_merchant_chose_them():
    choice = choose_probabilities(
        CONFIGURED, ENOUGH, use_measured=False, minimum=DEFAULT_MIN_DECISIONS_PER_ARM
    )
    assert choice.probabilities == CONFIGURED
    assert (choice.source, choice.reason) == ("configured", "configured: chosen in the settings")


def test_configured_until_every_arm_has_the_minimum():
    short = {**ENOUGH, "holdout": ArmCounts(99, 4)}

    choice = choose_probabilities(
        CONFIGURED, short, use_measured=True, minimum=DEFAULT_MIN_DECISIONS_PER_ARM
    )

    assert choice.probabilities == CONFIGURED
    assert choice.source == "configured"
    assert choice.short == ("holdout",)
    assert choice.reason == "configured: too few decisions yet (holdout 99 of 100)"


def test_measured_once_every_arm_has_the_minimum():
    choice = choose_probabilities(
        CONFIGURED, ENOUGH, use_measured=True, minimum=DEFAULT_MIN_DECISIONS_PER_ARM
    )

    assert choice.source == "measured"
    assert choice.probabilities == Probabilities(
        p0=D("0.05"), p_plain=D("0.09"), p_discount=D("0.10"), discount_rate=D("0.10")
    )
    assert choice.reason == "measured: every arm has at least 100 decisions"


# --- the uplift over the holdout ----------------------------------------------------------


def test_uplift_is_orders_beyond_the_holdout_rate():
    # 4 % without mail; 900 plain mails brought 72 orders (36 expected anyway), 1000 with a
    # discount 110 (40 expected anyway): 36 + 70 = 106 orders added
    result = uplift(
        [ArmCounts(900, 72), ArmCounts(1000, 110)], ArmCounts(2000, 80), draws=4000, seed=1
    )

    assert result is not None
    assert result.orders == pytest.approx(106)
    assert result.low < 106 < result.high
    assert result == uplift(
        [ArmCounts(900, 72), ArmCounts(1000, 110)], ArmCounts(2000, 80), draws=4000, seed=1
    )


def test_no_uplift_without_a_holdout():
    assert uplift([ArmCounts(100, 8)], ArmCounts(0, 0)) is None


# --- a simulated shop ---------------------------------------------------------------------

TRUE_RATES = {"holdout": 0.04, "plain": 0.08, "discount": 0.11}
OWN_CANDLES, GIFT_SETS = D("0.55"), D("0.25")
SIMULATED_CHECKOUTS = 20_000


def arm_for(probabilities: Probabilities, margin_rate: Decimal) -> str:
    """The expected-value rule for a 40 € basket at the margin rate, discount available."""
    return choose_reminder(
        Basket(D(40)), [], probabilities, default_rate=margin_rate, discount_available=True
    ).arm


def simulate(seed: int) -> dict[str, ArmCounts]:
    """20,000 abandoned 40 € baskets, half own candles, half gift sets, decided with the
    configured probabilities, a holdout drawn, each buying at its arm's true rate."""
    rng = random.Random(seed)
    would_send = {rate: arm_for(CONFIGURED, rate) for rate in (OWN_CANDLES, GIFT_SETS)}
    decisions = dict.fromkeys(MEASURED_ARMS, 0)
    conversions = dict.fromkeys(MEASURED_ARMS, 0)
    for n in range(SIMULATED_CHECKOUTS):
        arm = would_send[OWN_CANDLES if n % 2 else GIFT_SETS]
        if in_holdout("shopify", f"sim-{seed}-{n}", "", DEFAULT_HOLDOUT_SHARE):
            arm = "holdout"
        decisions[arm] += 1
        conversions[arm] += rng.random() < TRUE_RATES[arm]
    return {arm: ArmCounts(decisions[arm], conversions[arm]) for arm in MEASURED_ARMS}


def test_a_simulated_shop_measures_its_true_rates_and_then_decides_by_them():
    # Checked while writing: over seeds 0-29 all three intervals held the truth for 21
    # seeds (0.9³ ≈ 73 % expected for three 90 % intervals) and the choice below was right
    # for all 30. This test fixes seed 0.
    counts = simulate(seed=0)

    # the configured rules send own candles a discount and gift sets a plain reminder, and
    # a tenth of both is held out
    assert counts["holdout"].decisions == pytest.approx(2_000, abs=150)
    assert counts["plain"].decisions == pytest.approx(9_000, abs=150)
    for arm, truth in TRUE_RATES.items():
        low, high = counts[arm].interval(CREDIBLE_LEVEL)
        assert low <= truth <= high, (arm, low, high)

    # after the switch the measured rates decide, and they choose as the true rates do
    choice = choose_probabilities(
        CONFIGURED, counts, use_measured=True, minimum=DEFAULT_MIN_DECISIONS_PER_ARM
    )
    assert choice.source == "measured"
    truth = Probabilities(
        p0=D("0.04"), p_plain=D("0.08"), p_discount=D("0.11"), discount_rate=D("0.10")
    )
    assert arm_for(choice.probabilities, OWN_CANDLES) == arm_for(truth, OWN_CANDLES) == "discount"
    assert arm_for(choice.probabilities, GIFT_SETS) == arm_for(truth, GIFT_SETS) == "plain"
