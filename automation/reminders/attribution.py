"""An order attributed to the reminder decision it followed: same checkout, else same address
within the window; idempotent through the decision's unique `order_ref`."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Case, Value, When
from django.db.models.functions import Lower

from automation.models import (
    ReminderDecision,
    ReminderSettings,
)
from automation.platform.addresses import address_key
from automation.platform.notes import Note, note
from automation.reminders.rules import (
    MEASURED_ARMS,
)


@dataclass(frozen=True)
class Order:
    """An order as attribution reads it, whichever sender reported it."""

    ref: str
    """Unique per order ("shopify:order:<id>", "stripe:<session id>"): attributed once."""
    source: str
    token: str
    """The checkout it completes, "" when none (a draft or POS order)."""
    email: str
    placed_at: datetime
    value: Decimal | None
    shop_domain: str = ""
    """The shop that took the order: only its own checkouts' decisions may claim it."""


def _attributable(decisions):
    """Open decisions made before the order; measured arms first (they are what we count),
    then the newest."""
    measured_first = Case(When(arm__in=MEASURED_ARMS, then=Value(0)), default=Value(1))
    return decisions.filter(converted_at__isnull=True).order_by(
        measured_first, "-decided_at", "-pk"
    )


def attribute_order(order: Order, config: ReminderSettings) -> Note | str:
    """Record the order on the decision for the same checkout, else on the newest one for the
    same address within the attribution window; a note of what happened, "" when none fits.
    Only decisions about checkouts of the order's own shop (source and shop domain) count: one
    buyer may shop at two shops that deliver here.

    At-least-once safe: an order is recorded at most once (the unique `order_ref`; a repeat
    finds the first decision converted, tries the next and is refused by the key), and a
    decision converts at most once (the conditional UPDATE on `converted_at IS NULL`).
    """
    if ReminderDecision.objects.filter(order_ref=order.ref).exists():
        return note("order_attributed_already")
    before = ReminderDecision.objects.filter(
        decided_at__lte=order.placed_at,
        checkout__source=order.source,
        checkout__shop_domain=order.shop_domain,
    )
    candidates = []
    if order.token:
        candidates.append(
            (
                ReminderDecision.AttributedBy.CHECKOUT,
                _attributable(
                    before.filter(checkout__source=order.source, checkout__token=order.token)
                ),
            )
        )
    key = address_key(order.email) if order.email else None
    if key:
        since = order.placed_at - timedelta(days=config.attribution_window_days)
        same_address = before.alias(address=Lower("email")).filter(
            address=key, decided_at__gte=since
        )
        candidates.append((ReminderDecision.AttributedBy.ADDRESS, _attributable(same_address)))
    for attributed_by, decisions in candidates:
        decision = decisions.first()
        if decision is None:
            continue
        try:
            with transaction.atomic():
                won = ReminderDecision.objects.filter(
                    pk=decision.pk, converted_at__isnull=True
                ).update(
                    converted_at=order.placed_at,
                    order_value=order.value,
                    order_ref=order.ref,
                    attributed_by=attributed_by,
                )
        except IntegrityError:
            return note("order_attributed_already")
        if won:
            return note(
                "attributed_to_decision",
                decision=decision.pk,
                arm=note(f"arm_{decision.arm}"),
                by=note(f"attributed_by_{attributed_by}"),
            )
    return ""
