"""The handler contract: what a handler returns, and the registry the inbox dispatches by.

A handler decides and causes its effects; it never writes its delivery's status. It returns an
`Outcome`, which the inbox records in the same transaction as the handler's effects, and whose
follow-ups (work to schedule) the inbox runs once that transaction has committed, without
knowing what they are. Handlers import this module, not the inbox, so dependencies point one
way; it knows no capability.
"""

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

from automation.intake.sources.events import Event
from automation.models import Delivery
from automation.platform.notes import Note


class FollowUp(Protocol):
    """Work an outcome asks for once it has committed (a job to schedule, say).

    The inbox calls `run()` after the handler's transaction commits, so the work never sees a
    state that is not visible yet; an error it raises (Redis down) fails the delivery for its
    retry, like a handler's.
    """

    def run(self) -> None: ...


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
    note: "str | Note" = ""
    follow_ups: tuple[FollowUp, ...] = ()
    retry: Exception | None = None


# A handler takes its topic's typed event (automation/intake/sources/events.py) and the delivery,
# for its id, shop and logging.
Handler = Callable[[Event | None, Delivery], Outcome]
HANDLERS: dict[tuple[str, str], Handler] = {}


# A batch handler takes deliveries of one topic that share a key (the same inventory item), in
# the order they were received, and returns one Outcome for each, in the same order.
BatchHandler = Callable[[Sequence[tuple[Event, Delivery]]], list[Outcome]]


@dataclass(frozen=True)
class Batching:
    """How a topic's backlog is worked off in one job: its handler and the key it groups by.

    For topics whose deliveries supersede each other (a stock level): when a burst has queued
    up, the job that claims one delivery claims the others waiting (`backlog.claim_backlog`),
    and each group of one key runs in one transaction with its outcomes; the jobs of the
    others then find them taken, which costs one statement instead of a whole job's work.
    """

    handler: BatchHandler
    key: Callable[[Event], Hashable]


BATCH_HANDLERS: dict[tuple[str, str], Batching] = {}


def handled_topics() -> set[tuple[str, str]]:
    """Every (source, topic) with a handler, single or batch."""
    return set(HANDLERS) | set(BATCH_HANDLERS)


def handles_batch(
    source: str, topic: str, *, key: Callable[[Event], Hashable]
) -> Callable[[BatchHandler], BatchHandler]:
    """Register a batch handler: its deliveries are grouped by `key` (see `Batching`)."""

    def register(handler: BatchHandler) -> BatchHandler:
        BATCH_HANDLERS[(source, topic)] = Batching(handler, key)
        return handler

    return register


def handles(source: str, *topics: str) -> Callable[[Handler], Handler]:
    """Register a handler for topics of one source; one registry serves every process."""

    def register(handler: Handler) -> Handler:
        for topic in topics:
            HANDLERS[(source, topic)] = handler
        return handler

    return register
