"""Reminder evaluations Redis lost: checkouts past their due time that have no decision.

Each evaluation waits in RQ's ScheduledJobRegistry until its due time
(`scheduling.schedule_evaluation`), which lives only in Redis: a Redis that restarts empty takes
them all, and those checkouts would never be decided. Like the promotions' minute check
(`promotions.catch_up`), a cron entry every minute finds checkouts past their due time with no
decision for their current version and no evaluation job left in Redis, and schedules their
evaluation now. That stays exactly-once: the job id is per version, so a second schedule
replaces the first rather than adding one, and `checkouts.evaluate` writes one decision per
version and sends only under its claims. It only finds overdue work and hands it to scheduling.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from automation.models import CheckoutState, ReminderDecision, ReminderSettings
from automation.platform import scheduling
from automation.platform.queues import job_states
from automation.reminders import checkouts

logger = logging.getLogger(__name__)

# How late a reminder may still go out. A lost evaluation found within a day is caught up
# (an outage of minutes or hours); a checkout abandoned longer ago than that gets no late mail.
CATCH_UP_WINDOW = timedelta(hours=24)
# Checkouts one run looks at (one Redis round trip); a larger backlog takes several minutes.
CATCH_UP_BATCH = 500


def overdue_without_decision(now: datetime, config: ReminderSettings) -> list[CheckoutState]:
    """Open checkouts due at least DELIVERY_SWEEP_AFTER ago, within the window, undecided.

    "Due" is `checkouts.reminder_due_at` (updated_at + the reminder delay), written as a range
    on updated_at for the database; the decision's unique (checkout, version) index answers
    the NOT EXISTS.
    """
    delay = timedelta(minutes=config.reminder_delay_minutes)
    patience = timedelta(seconds=settings.DELIVERY_SWEEP_AFTER)
    decided = ReminderDecision.objects.filter(
        checkout=OuterRef("pk"), checkout_version=OuterRef("updated_at")
    )
    candidates = (
        CheckoutState.objects.filter(
            completed_at__isnull=True,
            updated_at__lt=now - delay - patience,
            updated_at__gte=now - delay - CATCH_UP_WINDOW,
        )
        .exclude(Exists(decided))
        .order_by("updated_at")[:CATCH_UP_BATCH]
    )
    return [c for c in candidates if checkouts.reminder_due_at(c, config) <= now - patience]


def catch_up(now: datetime | None = None) -> int:
    """Schedule the evaluation of every overdue, undecided checkout Redis no longer holds.

    A checkout whose evaluation job still exists is left alone, whatever its state: queued,
    scheduled or started, it will run; failed after its retries, RQ's failed-job registry
    shows it and re-running it every minute would not help. Only a job Redis no longer has
    at all is scheduled again. Returns how many were scheduled.
    """
    now = now or timezone.now()
    config = ReminderSettings.load()
    overdue = overdue_without_decision(now, config)
    states = job_states(scheduling.evaluation_job_id(checkout) for checkout in overdue)
    lost = [c for c in overdue if states[scheduling.evaluation_job_id(c)] is None]
    for checkout in lost:
        scheduling.schedule_evaluation(checkout, at=timezone.now())
    if lost:
        logger.warning(
            "scheduled %s reminder evaluations Redis had lost (checkouts %s)",
            len(lost),
            ", ".join(str(checkout.pk) for checkout in lost[:20]),
        )
    return len(lost)
