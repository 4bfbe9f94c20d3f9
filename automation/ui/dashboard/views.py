"""The staff dashboard: one page of pictures over selectors.py's numbers, in the admin's frame.

Each section shows only to users who may see the rows it summarises (page_access's table); a
section nobody may see here is not even computed.
"""

from decimal import Decimal

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from automation.models import Delivery, ReminderDecision
from automation.platform.masking import mask_secrets
from automation.ui import page_access
from automation.ui.dashboard import charts, demo, selectors
from automation.ui.dashboard import format as fmt

STATUS_COLORS = {
    "received": "#79aec8",
    "processing": "#417690",
    "done": "#5a9e4b",
    "ignored": "#b4b9bd",
    "stale": "#d8c37a",
    "invalid": "#8e6cc4",
    "failed": "#e6952e",
    "dead": "#ba2121",
    # a shop/redact we would not carry out: between `invalid` (refused input) and `dead` (needs
    # the merchant), and told apart from both in the stacked chart
    "refused": "#a3478f",
}
ARM_COLORS = {"none": "#9aa5ad", "holdout": "#6b7b86", "plain": "#417690", "discount": "#c7792b"}


def _status_label(status: str) -> str:
    return str(dict(Delivery.Status.choices).get(status, status))


@page_access.requires(page_access.DASHBOARD)
def dashboard(request: HttpRequest) -> HttpResponse:
    """Reaction to sell-outs, reminders and health, as far as the user may see them; reads the
    database only."""
    shown = page_access.allowed(request.user, page_access.DASHBOARD_SECTIONS)
    context = {
        **admin.site.each_context(request),
        "title": _("Dashboard"),
        "shown": shown,
        **overview(shown),
    }
    context["demo"] = demo.banner(request)
    return render(request, "automation/dashboard.html", context)


def overview(sections: frozenset[str] = frozenset(page_access.DASHBOARD_SECTIONS)) -> dict:
    """The template's context for `sections`: the numbers and their charts, section by section."""
    context: dict = {}
    if "reaction" in sections:
        context.update(reaction())
    if "reminders" in sections:
        context.update(reminders())
    if "health" in sections:
        context.update(health())
    return context


def reaction() -> dict:
    """Sell-outs, how fast the ads stopped, and what that cost and saved."""
    by_hand = selectors.manual_check()
    sell_outs = selectors.sell_outs(by_hand=by_hand)
    comparison = selectors.reaction_comparison(sell_outs.measured, by_hand)
    return {
        "reaction": selectors.reaction_summary(sell_outs, by_hand),
        "sell_outs": sell_outs.measured[:20],
        "comparison": comparison,
        "comparison_chart": charts.comparison_bars(
            [
                charts.Bar(
                    row.label,
                    float(row.cost),
                    row.summary_text,
                    charts.DEFAULT_COLOR if row.measured else charts.MUTED_COLOR,
                )
                for row in comparison
            ],
            title=_("What the ads cost after a sell-out, per sell-out"),
        ),
    }


def reminders() -> dict:
    """The reminder decisions by arm, their expected values and what they measurably did."""
    values = selectors.expected_values()
    arms = selectors.decisions_by_arm()
    return {
        "reminder_values": values,
        "results": selectors.reminder_results(),
        "arms": arms,
        "arms_chart": charts.grouped_bar_chart(
            [str(ReminderDecision.Arm(arm).label) for arm in arms],
            [charts.Series(_("Decisions"), list(arms.values()))],
            title=_("Reminder decisions in the last 30 days, by arm"),
            integers=True,
            width=420,
        ),
        "ev_chart": charts.grouped_bar_chart(
            [
                f"{basket.label} ({fmt.format_percent(basket.margin_rate)})"
                for basket in values.baskets
            ],
            [
                charts.Series(
                    _("Plain reminder"),
                    [float(b.delta_plain) for b in values.baskets],
                    ARM_COLORS["plain"],
                ),
                charts.Series(
                    _("With discount")
                    if values.discount_available
                    else _("With discount (not sent: no code)"),
                    [float(b.delta_discount) for b in values.baskets],
                    ARM_COLORS["discount"],
                ),
            ],
            title=_("Expected extra margin per abandoned 40 € basket (ΔE, €)"),
            value_format=lambda v: fmt.format_euros(Decimal(str(v))),
            width=480,
        ),
    }


def health() -> dict:
    """Deliveries per day and by status, dead letters, the last reconciliation."""
    deliveries = selectors.deliveries_by_day()
    run = selectors.last_reconciliation()
    return {
        "deliveries": deliveries,
        "delivery_totals": [
            (_status_label(status), total, STATUS_COLORS.get(status, "#417690"))
            for status, total in deliveries.totals.items()
        ],
        "deliveries_chart": charts.stacked_bar_chart(
            [fmt.day(day) for day in deliveries.days],
            [
                charts.Series(
                    _status_label(status),
                    values,
                    STATUS_COLORS.get(status, "#417690"),
                )
                for status, values in deliveries.counts.items()
            ],
            title=_("Webhook deliveries per day (last 14 days), by status"),
            empty_text=_("No deliveries in the last 14 days"),
        ),
        "dead_letters": selectors.dead_letters(),
        "dead_letters_url": selectors.dead_letters_url(),
        "run": run,
        # what the run stored of vendor errors, never a secret a vendor echoed into them
        "run_errors": [mask_secrets(str(error)) for error in run.errors] if run else [],
        "subscriptions": selectors.webhook_subscriptions(run),
    }
