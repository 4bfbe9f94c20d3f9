"""Deliver the day over real HTTP the way Shopify and Stripe do, faults included.

Each planned send goes out at its time from a thread pool; duplicates go twice (at the same
instant through a barrier, or a little later), a race's sends start together in reverse order,
dropped ones never go, late ones go after everything else, and an order "after the reminder"
waits until the system has judged its checkout. Like the real senders, a timeout, a connection
error or a 5xx/429 answer is retried a bounded number of times with the same webhook id.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import requests

from chaos import payloads
from chaos.generator import CheckoutVersion, OrderPlaced, Scenario, Send

logger = logging.getLogger(__name__)

TRIES = 5
BACKOFF = (0.5, 1.0, 2.0, 4.0)
TIMEOUT = 5.0  # Shopify gives up on an answer after five seconds
EVALUATION_WAIT = 120.0


@dataclass(frozen=True)
class Attempt:
    """One HTTP request and its answer (`status` None: no answer at all)."""

    copy: int
    sent_at: float
    status: int | None
    answer: str

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status >= 500 or self.status == 429

    @property
    def accepted(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass
class Record:
    """Everything that happened to one planned send."""

    send: Send
    attempts: list[Attempt] = field(default_factory=list)
    waited_for_evaluation: float | None = None
    evaluated: bool | None = None


class Driver:
    """Sends the scenario to `base_url` starting at the real instant `t0`."""

    def __init__(
        self,
        scenario: Scenario,
        base_url: str,
        t0: float,
        evaluated: Callable[[str], bool],
        threads: int = 16,
        take_order: Callable[[OrderPlaced], None] | None = None,
    ) -> None:
        self.scenario = scenario
        self.base_url = base_url.rstrip("/")
        self.t0 = t0
        self.evaluated = evaluated
        # The shop takes an order (Shopify's Admin API knows it) when the buyer pays, which is
        # before its orders/create arrives, if it ever does.
        self.take_order = take_order or (lambda order: None)
        self.records = {send.key: Record(send) for send in scenario.sends}
        self.known = {  # checkouts the system can know of: some version was not dropped
            send.event.token
            for send in scenario.sends
            if isinstance(send.event, CheckoutVersion) and not send.dropped
        }
        self._lock = threading.Lock()
        self._local = threading.local()
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="send")
        self._futures: list[Future] = []
        self._waiters: list[threading.Thread] = []

    # --- the schedule ---------------------------------------------------------------------

    def run(self) -> None:
        """Send everything at its time and return when every send has its final answer."""
        try:
            for at, tasks in self._schedule():
                delay = self.t0 + at - time.time()
                if delay > 0:
                    time.sleep(delay)
                for task in tasks:
                    self._futures.append(self._pool.submit(task))
            for future in self._futures:
                future.result()
            for waiter in self._waiters:
                waiter.join()
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _schedule(self) -> list[tuple[float, list[Callable[[], None]]]]:
        """(time, tasks started together) in time order."""
        slots: list[tuple[float, list[Callable[[], None]]]] = []
        races: dict[int, list[Send]] = defaultdict(list)
        for send in self.scenario.sends:
            event = send.event
            if isinstance(event, OrderPlaced) and not event.after_evaluation:
                slots.append((event.at, [lambda order=event: self.take_order(order)]))
            if send.dropped:
                continue
            if send.race is not None:
                races[send.race].append(send)
                continue
            slots += self._slots_for(send)
        for members in races.values():
            members.sort(key=lambda send: send.event.at, reverse=True)  # newest first
            barrier = threading.Barrier(len(members))
            at = min(send.at for send in members)
            slots.append((at, [self._task(send, 1, barrier) for send in members]))
            for send in members:
                if send.copies > 1:
                    slots.append((send.at + _later(send), [self._task(send, 2)]))
        slots.sort(key=lambda slot: slot[0])
        return slots

    def _slots_for(self, send: Send) -> list[tuple[float, list[Callable[[], None]]]]:
        if isinstance(send.event, OrderPlaced) and (send.event.after_evaluation or send.late):
            # an order held back arrives after its checkout was judged, however late that is
            return [(send.at, [lambda: self._spawn_waiter(send)])]
        if send.copies > 1 and send.concurrent:
            barrier = threading.Barrier(send.copies)
            tasks = [self._task(send, copy, barrier) for copy in range(1, send.copies + 1)]
            return [(send.at, tasks)]
        slots = [(send.at, [self._task(send, 1)])]
        if send.copies > 1:
            slots.append((send.at + _later(send), [self._task(send, 2)]))
        return slots

    def _task(
        self, send: Send, copy: int, barrier: threading.Barrier | None = None
    ) -> Callable[[], None]:
        def run() -> None:
            if barrier is not None:
                try:
                    barrier.wait(timeout=10)
                except threading.BrokenBarrierError:
                    logger.warning("a concurrent send of %s started alone", send.key)
            self.deliver(send, copy)

        return run

    def _spawn_waiter(self, send: Send) -> None:
        """Wait in a thread of its own, so waiting orders never hold up the pool."""
        waiter = threading.Thread(target=self._after_evaluation, args=(send,), daemon=True)
        with self._lock:
            self._waiters.append(waiter)
        waiter.start()

    def _after_evaluation(self, send: Send) -> None:
        """An order "after the reminder", or one whose orders/create is held back: wait until
        the checkout was judged, then send it."""
        assert isinstance(send.event, OrderPlaced)
        started = time.monotonic()
        judged = False
        while send.event.token in self.known and time.monotonic() - started < EVALUATION_WAIT:
            if self.evaluated(send.event.token):
                judged = True
                break
            time.sleep(0.5)
        with self._lock:
            record = self.records[send.key]
            record.waited_for_evaluation = round(time.monotonic() - started, 1)
            record.evaluated = judged if send.event.token in self.known else None
        if send.event.after_evaluation:  # an order held back was taken when the buyer paid
            self.take_order(send.event)
        for copy in range(1, send.copies + 1):
            self.deliver(send, copy)

    # --- one send ---------------------------------------------------------------------------

    def deliver(self, send: Send, copy: int) -> None:
        """POST one copy, retrying like the sender would; every attempt is recorded."""
        raw = payloads.body(send, self.t0)
        url = self.base_url + payloads.path(send)
        for attempt in range(TRIES):
            sent_at = time.time() - self.t0
            try:
                response = self._session().post(
                    url, data=raw, headers=payloads.headers(send, raw), timeout=TIMEOUT
                )
                result = Attempt(copy, sent_at, response.status_code, _answer(response))
            except requests.RequestException as err:
                result = Attempt(copy, sent_at, None, type(err).__name__)
            with self._lock:
                self.records[send.key].attempts.append(result)
            if not result.retryable:
                return
            if attempt < len(BACKOFF):
                time.sleep(BACKOFF[attempt])

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session


def _later(send: Send) -> float:
    """When a sequential duplicate follows its original: 0.2 to 3 s, fixed by its key."""
    return 0.2 + int(send.key[:4], 16) % 2800 / 1000


def _answer(response: requests.Response) -> str:
    try:
        data = json.loads(response.content)
    except ValueError:
        return response.text[:80]
    return str(data.get("status") or data.get("error") or "")[:80]
