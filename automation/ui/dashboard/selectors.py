"""What the staff dashboard shows, as plain data: reaction to sell-outs, reminders, health.

Reads the ORM, never the network: the page must render while Shopify, Google Ads or Redis are
down. Rendering (SVG, HTML) lives in charts.py and the template; nothing here builds markup.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import TruncDate
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from automation.intake.sources import load_body
from automation.models import (
    AdGroupAction,
    DashboardSettings,
    Delivery,
    ReconcileRun,
    ReminderDecision,
    ReminderSettings,
)
from automation.models.watched import DEFAULT_CLICKS_PER_DAY, DEFAULT_COST_PER_CLICK, AdGroup
from automation.platform import display_names
from automation.platform.masking import mask_secrets
from automation.reminders import selectors as reminder_selectors
from automation.reminders.rules import (
    CREDIBLE_LEVEL,
    NO_DISCOUNT_CODE,
    Basket,
    Probabilities,
    choose_reminder,
)
from automation.shopify import access as shopify_access
from automation.shopify import subscriptions
from automation.stock.selectors import ad_group_label
from automation.ui.dashboard.format import (
    CENT,
    format_clicks,
    format_duration,
    format_euros,
    format_percent,
    signed_count,
)

SECONDS_PER_DAY = Decimal(86400)
REACTION_DAYS = 30
DELIVERY_DAYS = 14

POLLING = timedelta(minutes=7.5)
"""Polling every 15 minutes notices a sell-out after half an interval on average."""

SELL_OUT_SOURCES = (AdGroupAction.Source.WEBHOOK, AdGroupAction.Source.RECONCILE)
SENT_RESULTS = (AdGroupAction.Result.APPLIED, AdGroupAction.Result.DRY_RUN)

SAMPLE_BASKET_TOTAL = Decimal("40")
SAMPLE_BASKETS = (
    (gettext_lazy("Own candles"), Decimal("0.55")),
    (gettext_lazy("Resold gift sets"), Decimal("0.25")),
)
"""The seed's two basket types: 40 € each, at the margin the merchant keeps on them."""


# --- reaction to sell-outs -----------------------------------------------------------------


def manual_check(config: DashboardSettings | None = None) -> timedelta:
    """How long the ads ran blind until the merchant's next manual check (their setting)."""
    config = config or DashboardSettings.load()
    return timedelta(hours=config.manual_check_hours)


def reaction_cost(reaction: timedelta, clicks_per_day: Decimal, cost_per_click: Decimal) -> Decimal:
    """What the ad group's clicks cost while it ran on after the sell-out: s/86400 · clicks · €."""
    seconds = Decimal(str(reaction.total_seconds()))
    return seconds / SECONDS_PER_DAY * clicks_per_day * cost_per_click


def clicks_during(reaction: timedelta, clicks_per_day: Decimal) -> Decimal:
    """Clicks paid for in vain while the ad group ran on."""
    return Decimal(str(reaction.total_seconds())) / SECONDS_PER_DAY * clicks_per_day


def item_rates(group: AdGroup | None) -> tuple[Decimal, Decimal]:
    """(clicks per day, cost per click) of an ad group; the defaults for an unknown one."""
    if group is None:
        return DEFAULT_CLICKS_PER_DAY, DEFAULT_COST_PER_CLICK
    return Decimal(group.clicks_per_day), Decimal(group.cost_per_click)


@dataclass(frozen=True)
class SellOut:
    """One sell-out: when the last unit sold, when the ad group was paused, and the cost between."""

    label: str
    customer_id: str
    ad_group_id: str
    sold_out_at: datetime
    paused_at: datetime
    reaction: timedelta
    clicks: Decimal
    cost: Decimal
    clicks_per_day: Decimal
    cost_per_click: Decimal
    source: str
    dry_run: bool
    by_hand_cost: Decimal = Decimal(0)
    """What the clicks would have cost until the next manual check, at this item's rates."""
    ad_group_name: str = ""
    """The ad group's name in Google Ads, "" when not known."""

    @property
    def reaction_text(self) -> str:
        return format_duration(self.reaction)

    @property
    def cost_text(self) -> str:
        return format_euros(self.cost)

    @property
    def avoided(self) -> Decimal:
        """Ad spend avoided: the cost until a manual check less what the ads really cost."""
        return max(self.by_hand_cost - self.cost, Decimal(0))

    @property
    def avoided_text(self) -> str:
        return format_euros(self.avoided)


@dataclass(frozen=True)
class SellOuts:
    """The measured sell-outs of a period, and how many could not be measured."""

    measured: list[SellOut]
    unmeasured: int = 0
    """Sell-outs without a start time: reconciliation without a delivery, or body dropped."""


def _sold_out_at(action: AdGroupAction) -> datetime | None:
    """Shopify's Triggered-At, else the level's updated_at from the stored body, else None."""
    delivery = action.delivery
    if delivery is None:
        return None
    if delivery.triggered_at is not None:
        return delivery.triggered_at
    if delivery.body is None:
        return None
    try:
        payload = load_body(delivery.body)
    except (ValueError, TypeError):
        return None
    stamp = payload.get("updated_at") if isinstance(payload, dict) else None
    parsed = parse_datetime(stamp) if isinstance(stamp, str) else None
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, UTC)
    return parsed


def _is_sell_out(action: AdGroupAction, previous_status: str | None) -> bool:
    """A PAUSED from stock (webhook or reconciliation) that ended an enabled (or unknown) period."""
    return (
        action.desired_status == AdGroupAction.Status.PAUSED
        and previous_status != AdGroupAction.Status.PAUSED
        and action.source in SELL_OUT_SOURCES
    )


def sell_outs(
    *, now: datetime | None = None, days: int = REACTION_DAYS, by_hand: timedelta | None = None
) -> SellOuts:
    """Every sell-out in the last `days` days: the first PAUSED per ad group after it was enabled.

    Every successful action (promotions and manual ones too) moves the ad group's status, so a
    PAUSED while already paused is a repeat, not a new sell-out. Failed calls changed nothing.
    Each is priced against `by_hand` (the merchant's manual-check time by default).
    """
    now = now or timezone.now()
    by_hand = by_hand if by_hand is not None else manual_check()
    since = now - timedelta(days=days)
    before_window = (
        AdGroupAction.objects.filter(
            customer_id=OuterRef("customer_id"),
            ad_group_id=OuterRef("ad_group_id"),
            requested_at__lt=since,
            result__in=SENT_RESULTS,
        )
        .order_by("-requested_at", "-pk")
        .values("desired_status")[:1]
    )
    actions = (
        AdGroupAction.objects.filter(
            requested_at__gte=since, requested_at__lte=now, result__in=SENT_RESULTS
        )
        .annotate(status_before_window=Subquery(before_window))
        .select_related("delivery")
        .defer("delivery__body")
        .order_by("customer_id", "ad_group_id", "requested_at", "pk")
    )
    items = {
        group.key: group
        for group in AdGroup.objects.prefetch_related("watched_products").order_by("pk")
    }
    by_ad_group = {group.ad_group_id: group for group in items.values()}

    measured: list[SellOut] = []
    unmeasured = 0
    status: dict[tuple[str, str], str | None] = {}
    for action in actions:
        key = (action.customer_id, action.ad_group_id)
        previous = status.get(key, action.status_before_window)
        status[key] = action.desired_status
        if not _is_sell_out(action, previous):
            continue
        sold_out_at = _sold_out_at(action)
        if sold_out_at is None:
            unmeasured += 1
            continue
        paused_at = action.applied_at or action.requested_at
        reaction = max(paused_at - sold_out_at, timedelta(0))
        item = items.get(key) or by_ad_group.get(action.ad_group_id)
        clicks_per_day, cost_per_click = item_rates(item)
        measured.append(
            SellOut(
                label=(
                    ad_group_label(item)
                    if item
                    else _("ad group %(id)s") % {"id": action.ad_group_id}
                ),
                customer_id=action.customer_id,
                ad_group_id=action.ad_group_id,
                sold_out_at=sold_out_at,
                paused_at=paused_at,
                reaction=reaction,
                clicks=clicks_during(reaction, clicks_per_day),
                cost=reaction_cost(reaction, clicks_per_day, cost_per_click),
                clicks_per_day=clicks_per_day,
                cost_per_click=cost_per_click,
                source=action.source,
                dry_run=action.result == AdGroupAction.Result.DRY_RUN,
                by_hand_cost=reaction_cost(by_hand, clicks_per_day, cost_per_click),
                ad_group_name=item.name if item else "",
            )
        )
    measured.sort(key=lambda sell_out: sell_out.sold_out_at, reverse=True)
    return SellOuts(measured, unmeasured)


@dataclass(frozen=True)
class ComparisonRow:
    """One way of reacting to a sell-out: how long the ads ran on and what that cost."""

    label: str
    reaction: timedelta
    clicks: Decimal
    cost: Decimal
    measured: bool
    """True for this shop's measured reaction, False for the seed's reference values."""

    @property
    def summary_text(self) -> str:
        """E.g. "7.5 min → 0.21 clicks ≈ 0.12 €", or "… less than a cent" for our reaction."""
        values = {
            "time": format_duration(self.reaction),
            "clicks": format_clicks(self.clicks),
            "cost": format_euros(self.cost),
        }
        if self.cost < CENT:
            return _("%(time)s → %(clicks)s clicks, less than a cent") % values
        return _("%(time)s → %(clicks)s clicks ≈ %(cost)s") % values


def reaction_comparison(
    measured: list[SellOut], by_hand: timedelta | None = None
) -> list[ComparisonRow]:
    """The seed's comparison (by hand, polling, at 40 clicks × 0.60 €) next to each product's."""
    by_hand = by_hand if by_hand is not None else manual_check()
    rows = [
        ComparisonRow(
            _("Checking by hand"),
            by_hand,
            clicks_during(by_hand, DEFAULT_CLICKS_PER_DAY),
            reaction_cost(by_hand, DEFAULT_CLICKS_PER_DAY, DEFAULT_COST_PER_CLICK),
            measured=False,
        ),
        ComparisonRow(
            _("Polling every 15 min"),
            POLLING,
            clicks_during(POLLING, DEFAULT_CLICKS_PER_DAY),
            reaction_cost(POLLING, DEFAULT_CLICKS_PER_DAY, DEFAULT_COST_PER_CLICK),
            measured=False,
        ),
    ]
    by_label: dict[str, list[SellOut]] = defaultdict(list)
    for sell_out in measured:
        by_label[sell_out.label].append(sell_out)
    for label, group in sorted(by_label.items()):
        ordered = sorted(group, key=lambda s: s.reaction)
        median = ordered[(len(ordered) - 1) // 2]
        rows.append(
            ComparisonRow(
                _("%(label)s (measured, median of %(count)d)")
                % {"label": label, "count": len(group)},
                median.reaction,
                median.clicks,
                median.cost,
                measured=True,
            )
        )
    return rows


@dataclass(frozen=True)
class ReactionSummary:
    """The headline numbers of the reaction section."""

    count: int
    unmeasured: int
    median: timedelta | None
    total_cost: Decimal
    by_hand_cost: Decimal
    """What the same sell-outs would have cost until a manual check, at each item's rates."""
    by_hand: timedelta = timedelta(0)
    """The merchant's manual-check time the sell-outs are priced against."""
    expected_avoided: Decimal = Decimal(0)
    """What we expected to avoid per sell-out: the manual-check time at 40 clicks × 0.60 €."""

    @property
    def avoided(self) -> Decimal:
        """Ad spend avoided, all sell-outs together."""
        return max(self.by_hand_cost - self.total_cost, Decimal(0))

    @property
    def avoided_per_sell_out(self) -> Decimal | None:
        return self.avoided / self.count if self.count else None

    @property
    def avoided_text(self) -> str:
        return format_euros(self.avoided)

    @property
    def avoided_per_sell_out_text(self) -> str:
        per = self.avoided_per_sell_out
        return format_euros(per) if per is not None else "–"

    @property
    def expected_avoided_text(self) -> str:
        return format_euros(self.expected_avoided)

    @property
    def by_hand_text(self) -> str:
        return format_duration(self.by_hand)

    @property
    def median_text(self) -> str:
        return format_duration(self.median) if self.median is not None else "–"

    @property
    def total_cost_text(self) -> str:
        return format_euros(self.total_cost)

    @property
    def by_hand_cost_text(self) -> str:
        return format_euros(self.by_hand_cost)


def reaction_summary(result: SellOuts, by_hand: timedelta | None = None) -> ReactionSummary:
    """How many sell-outs, their median reaction, and their cost against checking by hand."""
    by_hand = by_hand if by_hand is not None else manual_check()
    measured = result.measured
    median = statistics.median_low(s.reaction for s in measured) if measured else None
    return ReactionSummary(
        count=len(measured),
        unmeasured=result.unmeasured,
        median=median,
        total_cost=sum((s.cost for s in measured), Decimal(0)),
        by_hand_cost=sum(
            (reaction_cost(by_hand, s.clicks_per_day, s.cost_per_click) for s in measured),
            Decimal(0),
        ),
        by_hand=by_hand,
        expected_avoided=reaction_cost(by_hand, DEFAULT_CLICKS_PER_DAY, DEFAULT_COST_PER_CLICK),
    )


# --- reminders -----------------------------------------------------------------------------


def decisions_by_arm(*, now: datetime | None = None, days: int = REACTION_DAYS) -> dict[str, int]:
    """How many checkouts got no mail, a plain reminder or one with a discount, in `days` days."""
    since = (now or timezone.now()) - timedelta(days=days)
    counts = Counter(
        dict(
            ReminderDecision.objects.filter(decided_at__gte=since)
            .values_list("arm")
            .annotate(n=Count("pk"))
            .order_by()
        )
    )
    return {arm: counts.get(arm, 0) for arm in ReminderDecision.Arm.values}


@dataclass(frozen=True)
class BasketValue:
    """Expected value of each reminder arm for one sample basket under the current settings."""

    label: str
    total: Decimal
    margin_rate: Decimal
    margin: Decimal
    delta_plain: Decimal
    delta_discount: Decimal
    """Computed with the configured rate even when no discount code is set (illustration)."""
    arm: str
    """The arm the shop would choose today (without a code the discount arm is unavailable)."""

    @property
    def arm_label(self) -> str:
        return str(ReminderDecision.Arm(self.arm).label)


@dataclass(frozen=True)
class ReminderValues:
    """The sample baskets' values and whether the discount arm is live."""

    baskets: list[BasketValue]
    discount_available: bool
    discount_rate: Decimal
    probabilities: Probabilities = field(default_factory=Probabilities)

    @property
    def rates_text(self) -> dict[str, str]:
        """The settings behind the bars as percentages, for the caption."""
        p = self.probabilities
        return {
            "p0": format_percent(p.p0),
            "p_plain": format_percent(p.p_plain),
            "p_discount": format_percent(p.p_discount),
            "discount_rate": format_percent(self.discount_rate),
        }


def expected_values(config: ReminderSettings | None = None) -> ReminderValues:
    """ΔE per arm for the seed's baskets (40 € of own candles at 55 %, gift sets at 25 %)."""
    config = config or ReminderSettings.load()
    probabilities = Probabilities(
        p0=config.p0,
        p_plain=config.p_plain,
        p_discount=config.p_discount,
        discount_rate=config.discount_rate,
    )
    available = bool(config.discount_code.strip())
    baskets = []
    for label, rate in SAMPLE_BASKETS:
        basket = Basket(total=SAMPLE_BASKET_TOTAL)
        illustration = choose_reminder(
            basket, [], probabilities, default_rate=rate, discount_available=True
        )
        today = choose_reminder(
            basket,
            [],
            probabilities,
            default_rate=rate,
            discount_available=available,
            discount_unavailable_reason="" if available else NO_DISCOUNT_CODE,
        )
        baskets.append(
            BasketValue(
                label=str(label),
                total=SAMPLE_BASKET_TOTAL,
                margin_rate=rate,
                margin=illustration.margin,
                delta_plain=illustration.delta_plain,
                delta_discount=illustration.delta_discount,
                arm=today.arm,
            )
        )
    return ReminderValues(baskets, available, config.discount_rate, probabilities)


# --- results: what the reminders measurably did -----------------------------------------------

ARM_LABELS = {
    "holdout": gettext_lazy("Holdout (no mail)"),
    "plain": gettext_lazy("Plain reminder"),
    "discount": gettext_lazy("With discount"),
}


@dataclass(frozen=True)
class ArmRow:
    """One arm on the dashboard: measured rate and interval beside the configured value."""

    result: reminder_selectors.ArmResult

    @property
    def label(self) -> str:
        return str(ARM_LABELS[self.result.arm])

    @property
    def counts_text(self) -> str:
        counts = self.result.counts
        return _("%(k)d of %(n)d") % {"k": counts.conversions, "n": counts.decisions}

    @property
    def rate_text(self) -> str:
        rate = self.result.counts.rate
        return format_percent(rate) if rate is not None else "–"

    @property
    def interval_text(self) -> str:
        if not self.result.counts.decisions:
            return "–"
        low, high = self.result.interval
        return _("%(low)s to %(high)s") % {
            "low": format_percent(Decimal(f"{low:.4f}")),
            "high": format_percent(Decimal(f"{high:.4f}")),
        }

    @property
    def configured_text(self) -> str:
        return format_percent(self.result.configured)

    @property
    def in_use_text(self) -> str:
        return format_percent(self.result.in_use)

    @property
    def revenue_text(self) -> str:
        return format_euros(self.result.revenue)


@dataclass(frozen=True)
class ResultsView:
    """The results section: rows per arm, the uplift and which probabilities decide."""

    results: reminder_selectors.ReminderResults

    @property
    def rows(self) -> list[ArmRow]:
        return [ArmRow(arm) for arm in self.results.arms]

    @property
    def level_text(self) -> str:
        return format_percent(Decimal(str(CREDIBLE_LEVEL)))

    @property
    def measured_in_use(self) -> bool:
        return self.results.in_use.source == "measured"

    @property
    def in_use_text(self) -> str:
        """Which probabilities decide now, and why, in the merchant's words."""
        results = self.results
        if results.in_use.source == "measured":
            return _(
                "Decisions use the measured rates: every arm has at least %(minimum)d decisions."
            ) % {"minimum": results.minimum}
        if results.asked_for == ReminderSettings.ProbabilitySource.CONFIGURED:
            return _(
                "Decisions use the configured probabilities, as chosen in the reminder settings."
            )
        short = ", ".join(
            f"{ARM_LABELS[row.arm]}: {row.counts.decisions}"
            for row in results.arms
            if row.arm in results.in_use.short
        )
        return _(
            "Decisions use the configured probabilities until every arm has %(minimum)d "
            "decisions with a closed window (so far %(short)s)."
        ) % {"minimum": results.minimum, "short": short}

    @property
    def uplift_text(self) -> str:
        """E.g. "+12 orders (90 %: 5 to 19)", or a dash without a holdout."""
        uplift = self.results.uplift
        if uplift is None:
            return "–"
        return _("%(orders)s orders (%(level)s: %(low)s to %(high)s)") % {
            "orders": signed_count(uplift.orders),
            "level": self.level_text,
            "low": signed_count(uplift.low),
            "high": signed_count(uplift.high),
        }

    @property
    def mailed_orders(self) -> int:
        """Every order that followed a mail, counted naively (what the uplift corrects)."""
        return sum(row.orders for row in self.results.arms if row.arm != "holdout")

    @property
    def mailed_revenue_text(self) -> str:
        return format_euros(
            sum((row.revenue for row in self.results.arms if row.arm != "holdout"), Decimal(0))
        )

    @property
    def open_decisions(self) -> int:
        return sum(row.open_decisions for row in self.results.arms)


def reminder_results(config: ReminderSettings | None = None) -> ResultsView:
    """The measured arms, read from the decisions table (reminder_selectors.reminder_results)."""
    return ResultsView(reminder_selectors.reminder_results(config))


# --- health --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeliverySeries:
    """Deliveries per local day and status: one count list per status, aligned with `days`."""

    days: list[date]
    counts: dict[str, list[int]]
    """Only statuses that occurred, in the order of Delivery.Status."""

    @property
    def totals(self) -> dict[str, int]:
        return {status: sum(values) for status, values in self.counts.items()}


def deliveries_by_day(*, now: datetime | None = None, days: int = DELIVERY_DAYS) -> DeliverySeries:
    """Deliveries received on each of the last `days` local days (TIME_ZONE), by status."""
    zone = timezone.get_current_timezone()
    today = timezone.localdate(now or timezone.now(), zone)
    first = today - timedelta(days=days - 1)
    start = datetime.combine(first, time.min, tzinfo=zone)
    rows = (
        Delivery.objects.filter(received_at__gte=start)
        .annotate(day=TruncDate("received_at", tzinfo=zone))
        .values_list("day", "status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    all_days = [first + timedelta(days=offset) for offset in range(days)]
    index = {day: position for position, day in enumerate(all_days)}
    counts: dict[str, list[int]] = {}
    for day, status, n in rows:
        if day not in index:
            continue
        counts.setdefault(status, [0] * days)[index[day]] += n
    ordered = {s: counts[s] for s in Delivery.Status.values if s in counts}
    ordered.update({s: v for s, v in counts.items() if s not in ordered})
    return DeliverySeries(all_days, ordered)


def dead_letters() -> int:
    """Deliveries we gave up on: each waits for the merchant to fix the cause and replay it."""
    return Delivery.objects.filter(status=Delivery.Status.DEAD).count()


def dead_letters_url() -> str:
    """The admin's delivery list filtered to dead ones, where the Replay action is."""
    return reverse("admin:automation_delivery_changelist") + "?status__exact=dead"


def last_reconciliation() -> ReconcileRun | None:
    """The newest reconciliation run, whatever its outcome; each correction carries the ad
    group's and item's names the run stored (a run from before it stored them: today's)."""
    run = ReconcileRun.objects.order_by("-started_at", "-pk").first()
    if run is None or not run.corrections:
        return run
    unnamed = [c for c in run.corrections if "ad_group_name" not in c]
    groups = display_names.ad_group_names(c.get("ad_group", "") for c in unnamed)
    items = display_names.item_names(c["item"] for c in unnamed if c.get("item"))
    for correction in unnamed:
        correction["ad_group_name"] = groups.get(str(correction.get("ad_group", "")), "")
        correction["item_name"] = items.get(correction.get("item") or 0, "")
    return run


@dataclass(frozen=True)
class SubscriptionHealth:
    """Whether Shopify still sends us the webhooks we need, as far as the last run knows."""

    state: str
    """ok, recreated, missing, unknown, not_configured, or app_config (shopify.app.toml)."""
    message: str
    topics: tuple[str, ...] = subscriptions.REQUIRED_TOPICS


def webhook_subscriptions(run: ReconcileRun | None) -> SubscriptionHealth:
    """Judge the subscriptions from the last run only: the page never calls Shopify."""
    if shopify_access.webhooks_managed_by_toml():
        return SubscriptionHealth(
            "app_config",
            _(
                "Managed by the app configuration (shopify.app.toml): Shopify does not list "
                "those subscriptions, so the nightly run does not check them."
            ),
        )
    if not shopify_access.is_configured():
        return SubscriptionHealth(
            "not_configured",
            _("Not configured: set %(settings)s so the nightly run can check them.")
            % {"settings": shopify_access.missing_settings()},
        )
    if run is None or run.status in (
        ReconcileRun.Status.RUNNING,
        ReconcileRun.Status.NOT_CONFIGURED,
    ):
        return SubscriptionHealth("unknown", _("Unknown: no completed reconciliation run yet."))
    failures = [e for e in run.errors if str(e).startswith("webhook subscriptions:")]
    if failures:
        return SubscriptionHealth(
            "missing",
            _("Could not be checked on %(date)s: %(error)s")
            % {"date": run.local_date, "error": mask_secrets(failures[0])},
        )
    if run.subscriptions_created:
        return SubscriptionHealth(
            "recreated",
            _("Were missing and have been re-created on %(date)s: %(topics)s")
            % {"date": run.local_date, "topics": ", ".join(run.subscriptions_created)},
        )
    return SubscriptionHealth(
        "ok",
        _("OK: all %(count)d topics subscribed on %(date)s.")
        % {"count": len(subscriptions.REQUIRED_TOPICS), "date": run.local_date},
    )


# --- formatting shared by the charts and the template ---------------------------------------
