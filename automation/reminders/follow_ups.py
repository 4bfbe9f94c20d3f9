"""What the reminders ask the inbox to run once a checkout's delivery has committed.

A step of its own: the inbox runs a follow-up after the handler has returned, so the work
is handed on here instead of back into the handlers.
"""

from dataclasses import dataclass
from datetime import datetime

from automation.models import CheckoutState
from automation.platform import scheduling


@dataclass(frozen=True)
class ScheduleEvaluation:
    """Follow-up (`handling.FollowUp`): evaluate this checkout version's reminder at `at`.

    Run by the inbox after the handler's transaction commits, so the job never runs before the
    version it evaluates is visible.
    """

    checkout: CheckoutState
    at: datetime

    def run(self) -> None:
        scheduling.schedule_evaluation(self.checkout, at=self.at)
