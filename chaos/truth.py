"""The truth, derived from the day's log alone: final ad group statuses and the reminders due.

Stock truth comes from the whole log (the reconciliation reads Shopify's true stock, so drops
must not matter in the end). Before the reconciliation the system can only know what reached
it, so that expectation is computed from the delivered sends. Reminders are computed from what
reached the system too: a checkout whose every version was dropped is unknown, and a dropped
order cannot stop a reminder. The arm comes from `automation.reminders.rules.choose_reminder` with
the shop's own margin rules and probabilities: the expected-value rule itself is not re-derived.
A checkout the holdout draw (`automation.reminders.rules.in_holdout`, the shop's salt and share)
keeps from a mail is due nothing: its arm is `holdout`. A level stamped in the future is no
level at all: it must be refused, and the real levels alone decide its item's ad groups.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from automation.reminders.rules import Basket, Line, choose_reminder, in_holdout
from chaos import shop
from chaos.generator import (
    OPENING_AT,
    CheckoutVersion,
    FutureLevel,
    LevelChange,
    OrderPlaced,
    Scenario,
    Send,
    StripeSession,
)

PAUSED, ENABLED = "PAUSED", "ENABLED"
MISSING = "removed"  # AdGroup.missing of the ad group removed in Google Ads: skipped


@dataclass(frozen=True)
class Reminder:
    """The reminder one checkout must get: `none`, `holdout`, `plain` or `discount`."""

    key: str
    email: str
    arm: str


@dataclass(frozen=True)
class Truth:
    """Everything the run is checked against."""

    final_levels: dict[tuple[int, int], tuple[int, float]]
    ad_groups: dict[str, str]
    delivered_ad_groups: dict[str, str | None]
    reminders: dict[str, Reminder]
    consenting: frozenset[str]
    # the far-future levels' keys, each with its item's ad groups: refused `invalid`, they
    # must leave those ad groups to the real levels
    far_future: dict[str, tuple[str, ...]]

    @property
    def due(self) -> dict[str, Reminder]:
        return {key: r for key, r in self.reminders.items() if r.arm not in ("none", "holdout")}


def status_for(total: int, pause_at: int) -> str:
    """The rule for a one-variant product without a resume level (automation.stock.rule):
    paused at or below the threshold, enabled above it."""
    return PAUSED if total <= pause_at else ENABLED


def derive(scenario: Scenario) -> Truth:
    """Compute the truth for `scenario` from its log and its planned drops."""
    final = _levels(scenario, [s for s in scenario.sends if isinstance(s.event, LevelChange)])
    delivered = _levels(
        scenario,
        [s for s in scenario.sends if isinstance(s.event, LevelChange) and not s.dropped],
        opening=False,
    )
    ad_groups: dict[str, str] = {shop.PROMOTION_AD_GROUP_ID: PAUSED}
    before: dict[str, str | None] = {}
    for group in scenario.watched:
        totals = [level for (item, _), (level, _) in final.items() if item == group.item]
        ad_groups[group.ad_group_id] = (
            MISSING if group.broken else status_for(sum(totals), group.pause_at)
        )
        known = [level for (item, _), (level, _) in delivered.items() if item == group.item]
        # Nothing known about its stock: the rule decides nothing, Google Ads keeps its status.
        before[group.ad_group_id] = (
            None
            if group.broken
            else status_for(sum(known), group.pause_at)
            if known
            else shop.INITIAL_AD_GROUP_STATUS
        )
    reminders = _reminders(scenario)
    consenting = frozenset(c.email for c in scenario.checkouts if c.consent and c.email)
    far_future = {
        send.key: tuple(g.ad_group_id for g in scenario.watched if g.item == send.event.item)
        for send in scenario.sends
        if isinstance(send.event, FutureLevel)
    }
    return Truth(final, ad_groups, before, reminders, consenting, far_future)


def _levels(
    scenario: Scenario, sends: list[Send], *, opening: bool = True
) -> dict[tuple[int, int], tuple[int, float]]:
    """The newest level per (item, location), by Shopify's timestamp, not by arrival."""
    newest: dict[tuple[int, int], tuple[int, float]] = {}
    if opening:
        newest = {key: (level, OPENING_AT) for key, level in scenario.opening.items()}
    for send in sends:
        change = send.event
        assert isinstance(change, LevelChange)
        key = (change.item, change.location)
        if key not in newest or newest[key][1] <= change.at:
            newest[key] = (change.available, change.at)
    return newest


def basket_for(version: CheckoutVersion) -> Basket:
    """The basket exactly as the product builds it from a stored Shopify checkout."""
    lines = tuple(
        Line(
            price=shop.CATALOG[line.product].price,
            quantity=line.quantity,
            variant_id=shop.CATALOG[line.product].variant_id,
            product_id=shop.CATALOG[line.product].product_id,
            sku=shop.CATALOG[line.product].sku,
            vendor=shop.CATALOG[line.product].vendor,
        )
        for line in version.lines
    )
    total = sum((line.price * line.quantity for line in lines), Decimal(0))
    return Basket(total=total, lines=lines)


def arm_for(basket: Basket) -> str:
    """The arm the merchant's rules choose (no address has had a discount before)."""
    return choose_reminder(
        basket,
        shop.MARGIN_RULES,
        shop.PROBABILITIES,
        default_rate=shop.DEFAULT_MARGIN_RATE,
        discount_available=True,
    ).arm


def _reminders(scenario: Scenario) -> dict[str, Reminder]:
    versions: dict[str, list[CheckoutVersion]] = defaultdict(list)
    orders_known: set[str] = set()
    stripe: dict[str, StripeSession] = {}
    for send in scenario.sends:
        event = send.event
        # Shopify knows an order from the moment it is placed, whether its orders/create
        # arrives early, late or never: the reminder asks Shopify before it goes out.
        if isinstance(event, OrderPlaced) and not event.after_evaluation:
            orders_known.add(event.token)
        if send.dropped:
            continue
        if isinstance(event, CheckoutVersion):
            versions[event.token].append(event)
        elif isinstance(event, StripeSession):
            stripe[event.session_id] = event
    reminders = {}
    for checkout in scenario.checkouts:
        arm = "none"
        if checkout.source == "stripe":
            session = stripe.get(checkout.token)
            if session and session.kind == "expired" and session.consent:
                arm = arm_for(Basket(total=Decimal(session.amount_cents) / 100))
        elif versions[checkout.token] and checkout.token not in orders_known:
            newest = max(versions[checkout.token], key=lambda version: version.at)
            if newest.email and newest.consent:
                arm = arm_for(basket_for(newest))
        if arm != "none" and in_holdout(
            checkout.source, checkout.token, shop.HOLDOUT_SALT, shop.HOLDOUT_SHARE
        ):
            arm = "holdout"
        reminders[checkout.key] = Reminder(checkout.key, checkout.email, arm)
    return reminders
