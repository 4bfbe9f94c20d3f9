"""Reaction time: from a delivery's `X-Shopify-Triggered-At` to the Ads call, at a fixed rate.

Why: what the merchant cares about is how long an ad keeps running for a product that just sold
out. An open-loop driver sends signed `inventory_levels/update` deliveries at exactly R per
second (a closed loop would slow down with the server and hide queueing); gunicorn takes them and
two Procfile workers process them. The database says when each Ads call was made
(`AdGroupAction.requested_at` is set just before the backend call), or, for a delivery that
needed no call, when its outcome was recorded, so reaction is measured end to end on one clock
without instrumenting the product.
"""

import asyncio
import json
import math
import random
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from bench.env import SECRET, SHOP, reset_tables
from bench.machine import cpu_busy
from bench.servers import Processes, Server, start_gunicorn, start_rq_workers

TOPIC = "inventory_levels/update"
WORKERS = 2
TARGET_RATE = 20
TARGET_P99_MS = 250.0
STEADY_P99_MS = 1000.0
ITEMS = 200  # distinct watched products: deliveries for one take turns on its row lock
FIRST_ITEM = 271878346596000000
LOCATIONS = (24826418, 24826419, 24826420)
CUSTOMER_ID = "1234567890"


@dataclass(frozen=True)
class Step:
    """One fixed-rate run: what the driver did and what the database says happened."""

    rate: float
    seconds: float
    sent: int
    measured: int
    achieved_rate: float
    max_lateness_ms: float
    http_errors: int
    http_p50_ms: float
    http_p99_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    stale: int
    missing: int
    background_cpu: float  # CPU busy share just before the step, with our servers idle

    @property
    def steady(self) -> bool:
        """p99 under a second, every delivery processed and answered, the driver on time."""
        return (
            self.p99_ms < STEADY_P99_MS
            and self.missing == 0
            and self.http_errors == 0
            and self.achieved_rate >= 0.97 * self.rate
        )


@dataclass
class ReactionResult:
    """The 20/s measurement and the rate steps that followed it."""

    seconds: float
    warmup: float
    steps: list[Step] = field(default_factory=list)

    @property
    def at_target(self) -> Step:
        return next(s for s in self.steps if s.rate == TARGET_RATE)

    @property
    def highest_steady(self) -> float | None:
        steady = [s.rate for s in self.steps if s.steady]
        return max(steady) if steady else None

    def verdicts(self) -> list[tuple[str, str, bool]]:
        step = self.at_target
        best = self.highest_steady
        return [
            (
                f"reaction p99 ≤ {TARGET_P99_MS:g} ms at {TARGET_RATE}/s, {WORKERS} workers",
                f"{step.p99_ms:.0f} ms",
                step.p99_ms <= TARGET_P99_MS and step.missing == 0 and step.http_errors == 0,
            ),
            (
                "highest steady rate with p99 < 1 s (reported, no target)",
                f"{best:g}/s" if best else "none",
                True,
            ),
        ]

    def as_dict(self) -> dict:
        return {
            "seconds": self.seconds,
            "warmup": self.warmup,
            "steps": [asdict(s) | {"steady": s.steady} for s in self.steps],
        }


def watch_items() -> list[int]:
    """Replace the watched products with ITEMS bench products, each counting one inventory
    item and controlling one ad group; the inventory items."""
    from automation.models import AdGroup, WatchedProduct
    from tests.support.watching import watch

    WatchedProduct.objects.all().delete()
    AdGroup.objects.all().delete()
    ids = [FIRST_ITEM + n for n in range(ITEMS)]
    for n, item in enumerate(ids):
        watch(item, str(900000 + n), label=f"bench item {n}", customer_id=CUSTOMER_ID)
    return ids


def level_body(n: int, items: list[int], at: datetime, rng: random.Random) -> bytes:
    """The n-th delivery's body: items in turn, locations in turn, stock sometimes zero."""
    item = items[n % len(items)]
    location = LOCATIONS[(n // len(items)) % len(LOCATIONS)]
    payload = {
        "inventory_item_id": item,
        "location_id": location,
        "available": rng.choice((0, 0, 1, 4, 9)),
        "updated_at": at.isoformat(timespec="microseconds"),
        "admin_graphql_api_id": f"gid://shopify/InventoryLevel/{location}?inventory_item_id={item}",
    }
    return json.dumps(payload, separators=(",", ":")).encode()


def request_bytes(
    port: int,
    body: bytes,
    webhook_id: str,
    triggered: datetime,
    *,
    secret: str = SECRET,
    shop: str = SHOP,
) -> bytes:
    """One delivery as Shopify sends it: HMAC of the body, new connection, Connection: close."""
    from automation.intake.sources.shopify import sign

    head = (
        "POST /webhooks/shopify/ HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"X-Shopify-Topic: {TOPIC}\r\n"
        f"X-Shopify-Hmac-Sha256: {sign(body, secret)}\r\n"
        f"X-Shopify-Shop-Domain: {shop}\r\n"
        f"X-Shopify-Webhook-Id: {webhook_id}\r\n"
        f"X-Shopify-Event-Id: {uuid.uuid4()}\r\n"
        f"X-Shopify-Triggered-At: {triggered.isoformat(timespec='microseconds')}\r\n"
        "X-Shopify-API-Version: 2026-07\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


async def deliver(port: int, payload: bytes) -> tuple[int, float]:
    """Send one request on a new connection; (HTTP status or 0, seconds to the full answer)."""
    started = time.perf_counter()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(payload)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), timeout=30)
        writer.close()
        status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    except (OSError, TimeoutError, ValueError, IndexError):
        status = 0
    return status, time.perf_counter() - started


async def drive(port: int, rate: float, seconds: float, tag: str, items: list[int]) -> dict:
    """Open loop: the n-th delivery leaves at start + n/rate whatever the answers do."""
    loop = asyncio.get_running_loop()
    rng = random.Random(tag)
    total = int(rate * seconds)
    tasks: list[asyncio.Task] = []
    lateness = 0.0
    start = loop.time() + 0.2
    for n in range(total):
        due = start + n / rate
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        lateness = max(lateness, loop.time() - due)
        now = datetime.now(UTC)
        payload = request_bytes(port, level_body(n, items, now, rng), f"{tag}-{n}", now)
        tasks.append(asyncio.create_task(deliver(port, payload)))
    sent_span = loop.time() - start
    answers = await asyncio.gather(*tasks)
    return {
        "sent": total,
        "achieved_rate": (total - 1) / sent_span if total > 1 else 0.0,
        "max_lateness_ms": lateness * 1000,
        "statuses": [status for status, _ in answers],
        "http_seconds": [secs for _, secs in answers],
    }


def wait_until_processed(tag: str, expected: int, timeout: float) -> None:
    """Poll until every stored delivery of the step has left `received`/`processing`."""
    from automation.models import Delivery

    deadline = time.monotonic() + timeout
    pending = Delivery.objects.filter(
        webhook_id__startswith=f"{tag}-", status__in=["received", "processing"]
    )
    while time.monotonic() < deadline:
        stored = Delivery.objects.filter(webhook_id__startswith=f"{tag}-").count()
        if stored >= expected and not pending.exists():
            return
        time.sleep(0.5)


def reactions(tag: str, skip: int) -> tuple[list[float], int]:
    """Seconds from triggered_at to the reaction per delivery (after the warm-up), and stale.

    The reaction is the first Ads call the delivery made. A delivery that needed none is done
    when its outcome is recorded: the status Google Ads already has (sent only on change),
    or the one set in the same transaction with the last level of its batch (a
    backlog worked off in one job). A delivery neither stale nor done is missing.
    """
    from django.db.models import Min

    from automation.models import Delivery

    rows = (
        Delivery.objects.filter(webhook_id__startswith=f"{tag}-")
        .annotate(first_call=Min("ad_group_actions__requested_at"))
        .values_list("webhook_id", "status", "triggered_at", "first_call", "processed_at")
    )
    found, stale = [], 0
    for webhook_id, status, triggered, first_call, processed in rows:
        if int(webhook_id.rsplit("-", 1)[1]) < skip:
            continue
        if status == "stale":
            stale += 1
        elif first_call is not None:
            found.append((first_call - triggered).total_seconds())
        elif status == "done" and processed is not None:
            found.append((processed - triggered).total_seconds())
    return found, stale


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile; inf (a delivery never processed) sorts last."""
    if not values:
        return math.inf
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def run_step(server: Server, rate: float, seconds: float, warmup: float, items: list[int]) -> Step:
    """Drive one rate, wait for the workers to finish, read the reactions from PostgreSQL."""
    reset_tables()
    background = cpu_busy()
    tag = f"re{uuid.uuid4().hex[:10]}"
    driven = asyncio.run(drive(server.port, rate, seconds, tag, items))
    accepted = sum(status == 200 for status in driven["statuses"])
    wait_until_processed(tag, accepted, timeout=max(30.0, 3 * seconds))
    skip = int(rate * warmup)
    found, stale = reactions(tag, skip)
    expected = driven["sent"] - skip
    missing = max(0, expected - stale - len(found))
    measured = found + [math.inf] * missing
    http = driven["http_seconds"][skip:]
    return Step(
        rate=rate,
        seconds=seconds,
        sent=driven["sent"],
        measured=len(measured),
        achieved_rate=driven["achieved_rate"],
        max_lateness_ms=driven["max_lateness_ms"],
        http_errors=driven["sent"] - accepted,
        http_p50_ms=percentile(http, 50) * 1000,
        http_p99_ms=percentile(http, 99) * 1000,
        p50_ms=percentile(measured, 50) * 1000,
        p99_ms=percentile(measured, 99) * 1000,
        max_ms=max(measured, default=math.inf) * 1000,
        stale=stale,
        missing=missing,
        background_cpu=background,
    )


def print_step(step: Step) -> None:
    print(
        f"  {step.rate:5.0f}/s  reaction p50 {step.p50_ms:7.0f} ms  p99 {step.p99_ms:7.0f} ms  "
        f"(http p99 {step.http_p99_ms:5.0f} ms, sent {step.achieved_rate:5.1f}/s, "
        f"missing {step.missing}, stale {step.stale})  {'steady' if step.steady else 'NOT steady'}",
        flush=True,
    )


def run(
    procs: Processes, seconds: float, warmup: float, step: float = 20, max_rate: float = 400
) -> tuple[ReactionResult, Server, list]:
    """The 20/s run, then rates up by `step` until one is not steady, then one halfway back.

    Leaves gunicorn and the workers running for the worker profile; the caller stops them.
    """
    from bench.env import flush_redis

    items = watch_items()
    flush_redis()
    server = start_gunicorn(procs, name="gunicorn-reaction")
    workers = start_rq_workers(procs, WORKERS)
    run_step(server, TARGET_RATE, 3, 0, items)  # warm: connections, imports, the Ads client
    result = ReactionResult(seconds=seconds, warmup=warmup)
    rate: float = TARGET_RATE
    while rate <= max_rate:
        measured = run_step(server, rate, seconds, warmup, items)
        result.steps.append(measured)
        print_step(measured)
        if not measured.steady:
            break
        rate += step
    last_steady = result.highest_steady
    unsteady = result.steps[-1].rate if not result.steps[-1].steady else None
    if last_steady is not None and unsteady is not None:
        middle = round((last_steady + unsteady) / 2 / 5) * 5  # one step back, halfway
        if last_steady < middle < unsteady:
            measured = run_step(server, middle, seconds, warmup, items)
            result.steps.append(measured)
            print_step(measured)
    return result, server, workers
