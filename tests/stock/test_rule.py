"""THE rule for an ad group's status, as a table of the shop's cases (plain values, no database)."""

import pytest

from automation.stock.rule import (
    ENABLED,
    PAUSED,
    AdGroupFact,
    LevelFact,
    ProductFact,
    PromotionFact,
    VariantFact,
    ad_group_status,
    product_sellable,
)


def variant(name: str, *stock: int | None, tracked=True, keeps_selling=False, counted=True):
    levels = tuple(LevelFact(f"Lager {i}", available, counted) for i, available in enumerate(stock))
    return VariantFact(name, tracked=tracked, keeps_selling=keeps_selling, levels=levels)


def product(*variants, pause_at=0, resume_at=None, was=None, status="active", label="Winterzauber"):
    return ProductFact(
        label=label,
        pause_at=pause_at,
        resume_at=pause_at if resume_at is None else resume_at,
        was_sellable=was,
        status=status,
        variants=tuple(variants),
    )


@pytest.mark.parametrize(
    ("fact", "sellable", "stock", "code"),
    [
        # The worked example: one variant, one location.
        (product(variant("Default Title", 12)), True, 12, "in_stock"),
        (product(variant("Default Title", 0)), False, 0, "sold_out"),
        # Two sizes: one sold out, the other in stock: still sellable.
        (product(variant("klein", 0), variant("groß", 3)), True, 3, "in_stock"),
        (product(variant("klein", 0), variant("groß", 0)), False, 0, "all_sold_out"),
        # Several locations add up; an excluded one does not count.
        (product(variant("klein", 0, 2)), True, 2, "in_stock"),
        (
            product(variant("klein", 0, counted=True), variant("groß", 5, counted=False)),
            False,
            0,
            "all_sold_out",
        ),
        # Pre-orders and untracked stock never sell out.
        (
            product(variant("klein", 0), variant("groß", 0, keeps_selling=True)),
            True,
            None,
            "keeps_selling",
        ),
        (product(variant("klein", None, tracked=False)), True, None, "untracked"),
        # A product that is not active cannot be sold, whatever its stock.
        (product(variant("klein", 10), status="archived"), False, None, "product_inactive"),
        (product(variant("klein", 10), status="draft"), False, None, "product_inactive"),
        # Nothing known: no verdict.
        (product(), None, None, "no_variants"),
        (product(variant("klein")), None, None, "stock_unknown"),
        # A variant never reported: sellable if the others suffice, else not known yet.
        (product(variant("klein", 4), variant("groß")), True, 4, "in_stock"),
        (product(variant("klein", 0), variant("groß")), None, 0, "stock_partly_unknown"),
        # The threshold: at or below pauses.
        (product(variant("klein", 2), pause_at=2), False, 2, "sold_out"),
        (product(variant("klein", 3), pause_at=2), True, 3, "in_stock"),
    ],
)
def test_a_product_is_sellable_when_its_counted_stock_is_above_its_level(
    fact, sellable, stock, code
):
    found = product_sellable(fact)
    assert (found.sellable, found.stock, found.reason.code) == (sellable, stock, code)


@pytest.mark.parametrize(
    ("stock", "was", "sellable", "code"),
    [
        (0, None, False, "sold_out"),
        (2, False, False, "below_resume"),  # paused: 2 is not above the resume level 3
        (3, False, False, "below_resume"),
        (4, False, True, "in_stock"),
        (1, True, True, "in_stock"),  # running: only the pause level counts
        (0, True, False, "sold_out"),
    ],
)
def test_once_paused_it_runs_again_only_above_the_resume_level(stock, was, sellable, code):
    found = product_sellable(product(variant("klein", stock), pause_at=0, resume_at=3, was=was))
    assert (found.sellable, found.reason.code) == (sellable, code)


def test_the_reason_names_the_variant_and_location_that_decided():
    found = product_sellable(product(variant("klein", 0, 0), variant("groß", 0, 3)))
    assert found.reason.text() == "Winterzauber: 3 available > 0 (groß: 3 Lager 1)"
    sold_out = product_sellable(product(variant("klein", 0), variant("groß", 0)))
    assert sold_out.reason.text() == "Winterzauber: all variants sold out (0 available ≤ 0)"


SELLABLE = product_sellable(product(variant("klein", 5)))
SOLD_OUT = product_sellable(product(variant("klein", 0)))
UNKNOWN = product_sellable(product(variant("klein")))
RUNNING = PromotionFact("Adventsaktion", in_window=True)
ENDED = PromotionFact("Adventsaktion", in_window=False, ended=True)
NOT_YET = PromotionFact("Adventsaktion", in_window=False)


@pytest.mark.parametrize(
    ("facts", "status", "code"),
    [
        (AdGroupFact(products=(SELLABLE,)), ENABLED, "in_stock"),
        (AdGroupFact(products=(SOLD_OUT,)), PAUSED, "sold_out"),
        # Watched for two products: runs while either can be sold.
        (AdGroupFact(products=(SOLD_OUT, SELLABLE)), ENABLED, "in_stock"),
        (AdGroupFact(products=(SOLD_OUT, SOLD_OUT)), PAUSED, "none_sellable"),
        # Unknown stock decides nothing by itself, and does not keep a sold-out one running.
        (AdGroupFact(products=(UNKNOWN,)), None, "stock_unknown"),
        (AdGroupFact(products=(UNKNOWN, SOLD_OUT)), PAUSED, "sold_out"),
        # A manual state wins over everything.
        (
            AdGroupFact(manual_status=PAUSED, manual_by="inhaberin", products=(SELLABLE,)),
            PAUSED,
            "manual_paused",
        ),
        (
            AdGroupFact(manual_status=ENABLED, products=(SOLD_OUT,), promotions=(ENDED,)),
            ENABLED,
            "manual_enabled",
        ),
        # Outside every window of a promotion that lists it: paused, whatever the stock.
        (AdGroupFact(promotions=(ENDED,), products=(SELLABLE,)), PAUSED, "promotion_ended"),
        (AdGroupFact(promotions=(NOT_YET,)), PAUSED, "promotion_not_started"),
        # Inside the window: the stock decides; with no watched product, the promotion runs it.
        (AdGroupFact(promotions=(RUNNING,), products=(SOLD_OUT,)), PAUSED, "sold_out"),
        (AdGroupFact(promotions=(RUNNING,)), ENABLED, "promotion_running"),
        (AdGroupFact(promotions=(ENDED, RUNNING)), ENABLED, "promotion_running"),
        # Nothing controls it: no verdict, nothing is sent.
        (AdGroupFact(), None, "not_controlled"),
    ],
)
def test_one_rule_per_ad_group_from_everything_that_controls_it(facts, status, code):
    verdict = ad_group_status(facts)
    assert (verdict.status, verdict.reason.code) == (status, code)


def test_the_reasons_say_what_decided():
    manual = ad_group_status(
        AdGroupFact(manual_status=PAUSED, manual_by="inhaberin", manual_reason="Fotoshooting")
    )
    assert manual.reason.text() == "manually paused by inhaberin: Fotoshooting"
    assert ad_group_status(AdGroupFact(promotions=(ENDED,))).reason.text() == (
        "promotion “Adventsaktion” ended"
    )
