"""One seeded shop day as a ground-truth log, and the faults its delivery will suffer.

Pure: the same parameters and seed give the same day, byte for byte. Times are offsets in real
seconds from the moment the stream starts (the day's 24 hours compressed into `duration`); the
driver turns them into instants. Checkout timestamps are backdated so that each reminder falls
due `lead` seconds after the checkout is sent, instead of an hour later.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace

from chaos import shop
from chaos.params import Params

OPENING_AT = -6 * 3600.0  # the stock levels Shopify had before the day began
OUTAGE_SECONDS = {True: 2.0, False: 3.0}  # by `short`
LEAD_MIN = 12.0  # seconds a reminder falls due after the checkout's last send, before jitter
LEAD_SPREAD = 6.0
ORDER_MARGIN = 6.0  # an order "before the reminder" reaches us at least this long before it
# The latest instant ISO 8601 with an offset can name: a sender's broken clock at its worst.
FAR_FUTURE = "9999-12-31T23:59:59-12:00"
# A level stamped this long past WEBHOOK_MAX_FUTURE_SECONDS ahead of its send: just beyond the
# senders' allowed clock skew, with room for the seconds until a worker parses it.
BEYOND_TOLERANCE = 60.0


@dataclass(frozen=True)
class WatchedAdGroup:
    """A watched item's ad group and its pause threshold; `broken`: removed in Google Ads."""

    item: int
    ad_group_id: str
    label: str
    pause_at: int
    broken: bool = False


@dataclass(frozen=True)
class LevelChange:
    """An `inventory_levels/update`: one location's new stock, stamped `at`."""

    item: int
    location: int
    available: int
    at: float


@dataclass(frozen=True)
class Line:
    """A basket line: a catalog product and its quantity."""

    product: str
    quantity: int


@dataclass(frozen=True)
class CheckoutVersion:
    """A `checkouts/create` (version 1) or `checkouts/update` as Shopify would send it."""

    token: str
    version: int
    at: float
    email: str
    first_name: str
    consent: bool
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class OrderPlaced:
    """An `orders/create` completing a checkout; `after_evaluation`: sent once it was judged."""

    token: str
    at: float
    after_evaluation: bool


@dataclass(frozen=True)
class StripeSession:
    """A Stripe `checkout.session.expired` or `.completed` event."""

    session_id: str
    kind: str
    at: float
    email: str
    consent: bool
    amount_cents: int


@dataclass(frozen=True)
class FutureLevel:
    """An `inventory_levels/update` stamped after any real clock: `updated_at` FAR_FUTURE
    (`beyond` None), or `beyond` seconds past the allowed skew ahead of its send at `at`."""

    item: int
    location: int
    available: int
    at: float
    beyond: float | None


Event = LevelChange | FutureLevel | CheckoutVersion | OrderPlaced | StripeSession


@dataclass(frozen=True)
class Send:
    """One logical delivery and the faults planned for it."""

    key: str  # X-Shopify-Webhook-Id, or the Stripe event id
    event_id: str  # X-Shopify-Event-Id
    topic: str
    event: Event
    at: float  # planned send offset, jitter included
    copies: int = 1
    concurrent: bool = False
    dropped: bool = False
    late: bool = False
    race: int | None = None  # sends of one race start together, in reverse order

    @property
    def source(self) -> str:
        return "stripe" if isinstance(self.event, StripeSession) else "shopify"


@dataclass(frozen=True)
class Checkout:
    """One buyer's checkout: what happened, for the truth."""

    key: str  # "shopify:<token>" or "stripe:<session id>"
    source: str
    token: str
    email: str
    consent: bool  # the buyer's final choice (consent is only ever given, never withdrawn)
    story: str


@dataclass(frozen=True)
class Scenario:
    """The day: watched ad groups, opening stock, every send with its faults, the checkouts."""

    params: Params
    watched: tuple[WatchedAdGroup, ...]
    locations: tuple[int, ...]
    opening: dict[tuple[int, int], int]
    sends: tuple[Send, ...]
    checkouts: tuple[Checkout, ...]
    promotion_end: float
    outage: tuple[float, float] | None
    kill_at: float | None

    @property
    def broken(self) -> WatchedAdGroup:
        return next(group for group in self.watched if group.broken)

    @property
    def items(self) -> list[int]:
        return sorted({group.item for group in self.watched})


def generate(params: Params) -> Scenario:
    """Lay out the day for `params` (seeded), faults included."""
    rng = random.Random(params.seed)
    duration = params.duration
    locations = tuple(shop.FIRST_LOCATION_ID + n for n in range(params.locations))
    outage = None
    kill_at = round(0.12 * duration + 1, 1) if params.kill else None
    if params.redis_restart:
        # early enough that checkouts still fit after it; the kill comes before it
        length = OUTAGE_SECONDS[params.short]
        start = round(min(0.3 * duration, 0.5 * (duration - _checkout_life(params)) - length), 1)
        start = max(start, 2.0)
        outage = (start, start + length)
        if kill_at is not None:
            kill_at = max(0.5, min(kill_at, start - 4.0))

    watched = _watched_ad_groups(rng, params.items)
    opening = {
        (group.item, location): rng.randint(0, 12) for group in watched for location in locations
    }
    broken = next(group for group in watched if group.broken)
    races = iter(range(1, 10_000))
    changes: list[tuple[LevelChange, int | None]] = []
    for item in sorted({group.item for group in watched} - {broken.item}):
        changes += _level_changes(rng, item, locations, opening, duration, races)
    broken_change = LevelChange(broken.item, locations[0], 0, round(0.2 * duration, 3))
    changes.append((broken_change, None))

    sends = [
        Send(_key(rng), _key(rng), "inventory_levels/update", change, change.at, race=race)
        for change, race in changes
    ]
    checkout_sends, checkouts = _checkouts(rng, params, outage)
    sends += checkout_sends
    sends = _with_faults(rng, params, sends, broken_change)
    # A generator of its own: the rest of the day stays as it was for the seed.
    far_future = random.Random(f"far-future levels {params.seed}")
    sends = _with_far_future_levels(far_future, params, watched, locations, outage, sends)
    sends.sort(key=lambda send: (send.at, send.key))
    return Scenario(
        params=params,
        watched=tuple(watched),
        locations=locations,
        opening=opening,
        sends=tuple(sends),
        checkouts=tuple(checkouts),
        promotion_end=round(0.25 * duration, 1),
        outage=outage,
        kill_at=kill_at,
    )


def _key(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _watched_ad_groups(rng: random.Random, items: int) -> list[WatchedAdGroup]:
    """One ad group per item, a low-stock second one for some; the last item's second one was
    removed in Google Ads."""
    groups: list[WatchedAdGroup] = []
    ad_group_ids = iter(range(shop.FIRST_AD_GROUP_ID, shop.FIRST_AD_GROUP_ID + 10 * items))
    for n in range(items):
        item = shop.FIRST_ITEM_ID + 7919 * n
        label = f"Kerze {n + 1:03d}"
        groups.append(WatchedAdGroup(item, str(next(ad_group_ids)), label, pause_at=0))
        if n == items - 1:
            groups.append(
                WatchedAdGroup(item, shop.BROKEN_AD_GROUP_ID, f"{label} (gelöscht)", 0, True)
            )
        elif rng.random() < 0.3:
            groups.append(
                WatchedAdGroup(item, str(next(ad_group_ids)), f"{label} knapp", pause_at=3)
            )
    return groups


def _level_changes(
    rng: random.Random,
    item: int,
    locations: tuple[int, ...],
    opening: dict[tuple[int, int], int],
    duration: float,
    races: Iterator[int],
) -> list[tuple[LevelChange, int | None]]:
    """Sales, sell-outs, restocks and corrections over the day; some as a restock race."""
    stock = {location: opening[(item, location)] for location in locations}
    plans: list[tuple[float, int, str, int | None]] = [
        (rng.uniform(0.5, duration - 0.5), rng.choice(locations), "random", None)
        for _ in range(rng.randint(4, 10))
    ]
    if rng.random() < 0.3:  # the last unit sells here while a restock is booked there
        at = rng.uniform(1.0, duration - 1.0)
        first, second = rng.sample(locations, 2)
        race = next(races)
        plans += [(at, first, "sellout", race), (at + 0.001, second, "restock", race)]
    if rng.random() < 0.15:  # sold out and restocked within milliseconds at one location
        at = rng.uniform(1.0, duration - 1.0)
        location = rng.choice(locations)
        race = next(races)
        plans += [(at, location, "sellout", race), (at + 0.002, location, "restock", race)]
    if rng.random() < 0.35:  # a bestseller: sold out everywhere by the evening
        evening = rng.uniform(0.7 * duration, duration - 1.0)
        plans += [
            (evening + n * 0.25, location, "sellout", None) for n, location in enumerate(locations)
        ]
    plans.sort()
    changes = []
    last_at = dict.fromkeys(locations, OPENING_AT)
    for at, location, kind, race in plans:
        at = round(max(at, last_at[location] + 0.005), 3)
        last_at[location] = at
        stock[location] = _next_stock(rng, stock[location], kind)
        changes.append((LevelChange(item, location, stock[location], at), race))
    return changes


def _next_stock(rng: random.Random, current: int, kind: str) -> int:
    if kind == "random":
        kind = rng.choices(["sale", "sellout", "restock", "count"], [40, 20, 25, 15])[0]
    if kind == "sale":
        return max(0, current - rng.randint(1, 3))
    if kind == "sellout":
        return 0
    if kind == "restock":
        return current + rng.randint(4, 12)
    return rng.randint(0, 6)  # a stock count corrects the number


def _checkout_life(params: Params) -> float:
    """Seconds from a checkout's first send to its reminder's due time, at most."""
    return LEAD_MIN + LEAD_SPREAD + 2 * params.window + 4


def _checkout_window(
    params: Params, outage: tuple[float, float] | None
) -> list[tuple[float, float]]:
    """When checkouts may start: their whole life (sends and due time) avoids the Redis outage.

    A delivery that arrives while Redis is down waits for the sweeper (up to a minute); an
    order stranded there would let a reminder fall due before the system could see the order.
    """
    life = _checkout_life(params)
    latest = params.duration - life
    if outage is None:
        return [(0.5, latest)]
    before = (0.5, outage[0] - life - 1)
    after = (outage[1] + 1, latest)
    return [span for span in (before, after) if span[1] > span[0]]


def _uniform_over(rng: random.Random, spans: list[tuple[float, float]]) -> float:
    total = sum(end - start for start, end in spans)
    point = rng.uniform(0, total)
    for start, end in spans:
        if point <= end - start:
            return start + point
        point -= end - start
    return spans[-1][1]


def _basket(rng: random.Random) -> tuple[Line, ...]:
    kind = rng.choice(list(shop.BASKETS))
    products = shop.BASKETS[kind]
    count = 1 if len(products) == 1 else rng.randint(1, len(products))
    return tuple(Line(name, rng.randint(1, 3)) for name in rng.sample(products, count))


def _checkouts(
    rng: random.Random, params: Params, outage: tuple[float, float] | None
) -> tuple[list[Send], list[Checkout]]:
    """Shopify checkouts (abandoned, bought before or after the reminder) and Stripe sessions."""
    spans = _checkout_window(params, outage)
    sends: list[Send] = []
    checkouts: list[Checkout] = []
    if not spans:
        return sends, checkouts
    for n in range(params.checkouts):
        start = round(_uniform_over(rng, spans), 3)
        consent = rng.random() < 0.65
        email = f"kundin.{params.seed}.{n:04d}@example.org"
        lead = LEAD_MIN + params.window + rng.uniform(0, LEAD_SPREAD)
        if rng.random() < 0.2:
            session = f"cs_test_{uuid.UUID(int=rng.getrandbits(128)).hex}"
            kind = rng.choice(["expired", "expired", "expired", "completed"])
            lines = _basket(rng)
            cents = sum(
                int(shop.CATALOG[line.product].price * 100) * line.quantity for line in lines
            )
            event = StripeSession(session, kind, start, email, consent, cents)
            sends.append(
                Send(
                    f"evt_{uuid.UUID(int=rng.getrandbits(128)).hex}",
                    "",
                    f"checkout.session.{kind}",
                    event,
                    start,
                )
            )
            checkouts.append(
                Checkout(f"stripe:{session}", "stripe", session, email, consent, f"stripe {kind}")
            )
            continue
        token = uuid.UUID(int=rng.getrandbits(128)).hex
        if rng.random() < 0.05:
            email = ""
        story = rng.choices(
            ["abandoned", "bought before the reminder", "bought after the reminder"], [45, 25, 30]
        )[0]
        versions = [(start, consent)]
        if rng.random() < 0.4:  # an update follows; consent may be ticked only there
            ticked_later = consent and rng.random() < 0.3
            versions = [(start, not ticked_later and consent)]
            versions.append((round(start + rng.uniform(0.3, 1.5), 3), consent))
        lines = _basket(rng)
        first_name = rng.choice(["Anke", "Jörn", "Maren", "Hauke", "Svea", "Ole", ""])
        for number, (sent_at, given) in enumerate(versions, start=1):
            if number > 1 and rng.random() < 0.5:
                lines = tuple(replace(line, quantity=line.quantity + 1) for line in lines)
            version = CheckoutVersion(
                token,
                number,
                round(sent_at - shop.REMINDER_DELAY_SECONDS + lead, 3),
                email,
                first_name,
                given,
                lines,
            )
            topic = "checkouts/create" if number == 1 else "checkouts/update"
            sends.append(Send(_key(rng), _key(rng), topic, version, sent_at))
        last_sent = versions[-1][0]
        if story == "bought before the reminder":
            order_at = round(
                last_sent + rng.uniform(0.5, lead - ORDER_MARGIN - 2 * params.window), 3
            )
            sends.append(
                Send(
                    _key(rng),
                    _key(rng),
                    "orders/create",
                    OrderPlaced(token, order_at, False),
                    order_at,
                )
            )
        elif story == "bought after the reminder":
            order_at = round(last_sent + lead + 3, 3)
            sends.append(
                Send(
                    _key(rng),
                    _key(rng),
                    "orders/create",
                    OrderPlaced(token, order_at, True),
                    order_at,
                )
            )
        checkouts.append(
            Checkout(f"shopify:{token}", "shopify", token, email, consent and bool(email), story)
        )
    return sends, checkouts


def _with_faults(
    rng: random.Random, params: Params, sends: list[Send], spared: LevelChange
) -> list[Send]:
    """Drop, duplicate (some concurrently), hold back until the end, and jitter within a window.

    Held back: level changes (late_rate) and orders placed before the reminder of a checkout
    with an address and consent (late_order_rate, the first such order always): their
    orders/create arrives after the day and only once the checkout was judged (chaos/driver.py),
    while Shopify's Admin API knows the order from the moment it was placed.

    The removed ad group's one level change is never dropped or held back, and always sent
    twice at once: however often it arrives, the ad group is marked missing with exactly one
    alert, and the delivery ends done (its item's other ad group set).
    """
    jitter: dict[int, float] = {}
    late_at = params.duration + 1.0
    faulty = []
    order_held = False
    # Orders worth holding back: their checkout would get a reminder were the order not known.
    newest: dict[str, CheckoutVersion] = {}
    for send in sends:
        event = send.event
        if isinstance(event, CheckoutVersion) and event.version >= getattr(
            newest.get(event.token), "version", 0
        ):
            newest[event.token] = event
    remindable = {token for token, v in newest.items() if v.email and v.consent}
    for send in sends:
        if send.event is spared:
            faulty.append(replace(send, copies=2, concurrent=True))
            continue
        if rng.random() < params.drop_rate:
            faulty.append(replace(send, dropped=True))
            continue
        copies, concurrent = 1, False
        if rng.random() < params.dup_rate:
            copies, concurrent = 2, rng.random() < 0.5
        is_level = isinstance(send.event, LevelChange)
        if is_level and send.race is None and rng.random() < params.late_rate:
            at = round(late_at + rng.uniform(0, 2), 3)
            faulty.append(replace(send, at=at, copies=copies, concurrent=concurrent, late=True))
            continue
        early_order = (
            isinstance(send.event, OrderPlaced)
            and not send.event.after_evaluation
            and send.event.token in remindable
        )
        if early_order and (not order_held or rng.random() < params.late_order_rate):
            order_held = True
            at = round(late_at + rng.uniform(0, 2), 3)
            faulty.append(replace(send, at=at, copies=copies, concurrent=concurrent, late=True))
            continue
        if send.race is None:
            shift = rng.uniform(0, params.window)
        else:  # a race's sends keep their order of milliseconds: one shift for all of them
            if send.race not in jitter:
                jitter[send.race] = rng.uniform(0, params.window)
            shift = jitter[send.race]
        at = round(send.at + shift, 3)
        faulty.append(replace(send, at=at, copies=copies, concurrent=concurrent))
    return faulty


def _with_far_future_levels(
    rng: random.Random,
    params: Params,
    watched: list[WatchedAdGroup],
    locations: tuple[int, ...],
    outage: tuple[float, float] | None,
    sends: list[Send],
) -> list[Send]:
    """Two watched items get a level from the future, then real levels that must decide them.

    One claims plenty in year 9999, and every location then sells out (its ad groups paused);
    the other claims a sell-out just beyond the allowed clock skew, the other locations sell out
    and its location is restocked (enabled). Both must be refused as `invalid`; accepted, the
    stale guard would call every real later level of that location old and freeze the item.
    Their items' own changes after the level are left out, so the real levels that follow it
    are the newest; these sends suffer no faults, so the story reaches the system whole.
    """
    broken = next(group for group in watched if group.broken)
    items = sorted({group.item for group in watched} - {broken.item})
    # a day of two items has one besides the removed ad group's: it gets the year 9999 only
    plenty, empty = rng.sample(items, 2) if len(items) > 1 else (items[0], None)
    start = round(rng.uniform(0.4, 0.5) * params.duration, 3)
    if outage is not None:
        start = max(start, round(outage[1] + 2.0, 3))
    kept = [
        send
        for send in sends
        if not (
            isinstance(send.event, LevelChange)
            and send.event.item in (plenty, empty)
            and send.event.at >= start
        )
    ]
    story: list[Event] = []
    where = rng.choice(locations)
    story.append(FutureLevel(plenty, where, rng.randint(20, 60), start, None))
    story += [
        LevelChange(plenty, location, 0, round(start + 2.0 + n * 0.25, 3))
        for n, location in enumerate(locations)
    ]
    if empty is None:
        return kept + [
            Send(_key(rng), _key(rng), "inventory_levels/update", event, event.at)
            for event in story
        ]
    where = rng.choice(locations)
    at = round(start + 1.0, 3)
    story.append(FutureLevel(empty, where, 0, at, BEYOND_TOLERANCE))
    story += [
        LevelChange(empty, location, 0, round(at + 2.0 + n * 0.25, 3))
        for n, location in enumerate(locations)
        if location != where
    ]
    story.append(LevelChange(empty, where, rng.randint(6, 12), round(at + 3.5, 3)))
    return kept + [
        Send(_key(rng), _key(rng), "inventory_levels/update", event, event.at) for event in story
    ]
