"""What reminders did, per arm, read from the decisions table for the dashboard and the API."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.utils import timezone

from automation.models import (
    ReminderDecision,
    ReminderSettings,
)
from automation.reminders.checkouts import Arm, arm_counts, configured_probabilities
from automation.reminders.rules import (
    CREDIBLE_LEVEL,
    MEASURED_ARMS,
    PROBABILITY_OF_ARM,
    ArmCounts,
    ProbabilityChoice,
    Uplift,
    choose_probabilities,
    uplift,
)


@dataclass(frozen=True)
class ArmResult:
    """One measured arm: its counts (closed windows), interval, the configured and the used
    probability, and every order attributed to it so far with its revenue."""

    arm: str
    counts: ArmCounts
    interval: tuple[float, float]
    configured: Decimal
    in_use: Decimal
    orders: int
    """Orders attributed to the arm's decisions, windows still open included."""
    revenue: Decimal
    open_decisions: int
    """Decisions whose attribution window is still open: not in `counts` yet."""


@dataclass(frozen=True)
class ReminderResults:
    """What reminders did, per arm, and which probabilities decide now, and why."""

    arms: list[ArmResult]
    in_use: ProbabilityChoice
    asked_for: str
    """The merchant's setting: configured or measured."""
    minimum: int
    window_days: int
    uplift: Uplift | None
    """Orders the mails added over the holdout's rate (None without holdout decisions)."""


def reminder_results(
    config: ReminderSettings | None = None, *, now: datetime | None = None
) -> ReminderResults:
    """Every measured arm's numbers from the decisions table; reads the database only."""
    config = config or ReminderSettings.load()
    now = now or timezone.now()
    counts = arm_counts(config.attribution_window_days, now=now)
    configured = configured_probabilities(config)
    in_use = choose_probabilities(
        configured,
        counts,
        use_measured=config.probabilities_from == ReminderSettings.ProbabilitySource.MEASURED,
        minimum=config.min_decisions_per_arm,
    )
    counted = Q(arm=Arm.HOLDOUT) | Q(arm__in=[Arm.PLAIN, Arm.DISCOUNT], sent_at__isnull=False)
    window_start = now - timedelta(days=config.attribution_window_days)
    totals = {
        arm: (orders, revenue or Decimal(0), open_decisions)
        for arm, orders, revenue, open_decisions in ReminderDecision.objects.filter(counted)
        .values_list("arm")
        .annotate(
            orders=Count("pk", filter=Q(converted_at__isnull=False)),
            revenue=Sum("order_value"),
            open_decisions=Count("pk", filter=Q(decided_at__gt=window_start)),
        )
        .order_by()
    }
    arms = []
    for arm in MEASURED_ARMS:
        orders, revenue, open_decisions = totals.get(arm, (0, Decimal(0), 0))
        field = PROBABILITY_OF_ARM[arm]
        arms.append(
            ArmResult(
                arm=arm,
                counts=counts[arm],
                interval=counts[arm].interval(),
                configured=getattr(configured, field),
                in_use=getattr(in_use.probabilities, field),
                orders=orders,
                revenue=revenue,
                open_decisions=open_decisions,
            )
        )
    return ReminderResults(
        arms=arms,
        in_use=in_use,
        asked_for=config.probabilities_from,
        minimum=config.min_decisions_per_arm,
        window_days=config.attribution_window_days,
        uplift=uplift(
            [counts[Arm.PLAIN], counts[Arm.DISCOUNT]], counts[Arm.HOLDOUT], level=CREDIBLE_LEVEL
        ),
    )
