"""The handler contract: what a handler returns, and the registry the inbox dispatches by.

A handler decides and causes its effects; it never writes its delivery's status. It returns an
`Outcome`, which the inbox records in the same transaction as the handler's effects, and whose
follow-ups (work to schedule) the inbox hands to `automation.scheduling` once that transaction
has committed. Handlers import this module, not the inbox, so dependencies point one way.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from .models import CheckoutState, Delivery
from .sources.events import Event


@dataclass(frozen=True)
class ScheduleEvaluation:
    """Follow-up: evaluate this checkout version's reminder at `at`.

    Scheduled after the handler's transaction commits, so the job never runs before the
    version it evaluates is visible.
    """

    checkout: CheckoutState
    at: datetime


FollowUp = ScheduleEvaluation


@dataclass(frozen=True)
class Outcome:
    """What a handler made of a delivery: the final status and a note for the merchant.

    `follow_ups` run after the outcome has committed. `retry` says "effects committed, retry the
    rest": the handler's effects (a stock level stored and logged) commit, then the delivery fails
    with this error as if the handler had raised it, so RQ's Retry runs it again (or, on the last
    attempt or for a permanent error, it goes `dead` with one alert). `status` and `note` are what
    the retry will see done; they are not recorded while `retry` is set.
    """

    status: str
    note: str = ""
    follow_ups: tuple[FollowUp, ...] = ()
    retry: Exception | None = None


# A handler takes its topic's typed event (automation/sources/events.py) and the delivery,
# for its id, shop and logging.
Handler = Callable[[Event | None, Delivery], Outcome]
HANDLERS: dict[tuple[str, str], Handler] = {}


def handles(source: str, *topics: str) -> Callable[[Handler], Handler]:
    """Register a handler for topics of one source; one registry serves every process."""

    def register(handler: Handler) -> Handler:
        for topic in topics:
            HANDLERS[(source, topic)] = handler
        return handler

    return register
