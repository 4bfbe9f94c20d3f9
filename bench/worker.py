"""Worker throughput: inventory deliveries per second against RQ no-op jobs, one SimpleWorker.

Why: the Procfile runs a single `SimpleWorker`, and a sale can fire a burst of
`inventory_levels/update` webhooks. This measures what the real job path (claim, the watched
product's lock, stale guard, the product's stock and the rule, the Ads status: a dry-run log
when it changes, nothing when unchanged, outcome) costs next to RQ's own per-job overhead, in
the same run on the same machine, so the ratio means something where absolute numbers would
not. Target: the inventory rate is at least 0.8 of the no-op rate (a worker keeps up with a
burst).

The deliveries are stored before the worker starts, as a burst that queued up: with the app's
default DELIVERY_BATCH_SIZE a job takes the waiting ones along (`backlog.claim_backlog`) and the
others' jobs find theirs taken. `DELIVERY_BATCH_SIZE=1 python bench/worker.py` measures one
job per delivery (a worker that keeps up, with no backlog).

Run from the project root: `python bench/worker.py [--deliveries N] [--rounds R] [--profile]`.
It uses its own Postgres database and Redis DB (both emptied every round), never DB 0 or 15.
"""

import argparse
import cProfile
import json
import logging
import os
import platform
import pstats
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
ENV_DEFAULTS = {
    "DJANGO_SETTINGS_MODULE": "elbkerzen.settings",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/elbkerzen_bench",
    "REDIS_URL": "redis://127.0.0.1:6379/14",
    "SECRET_KEY": "bench-only",
    "ADS_BACKEND": "dryrun",
}
FORBIDDEN_REDIS_DBS = {0: "the app's own DB", 15: "the test suite's DB"}
TARGET_RATIO = 0.8
NOOP_PATH = "bench.worker.noop"  # by path: run as a script this module is `__main__`

ITEM_ID = 808950810
AD_GROUP_ID = "555"
CUSTOMER_ID = "1234567890"
SHOP = "elbkerzen.myshopify.com"
TOPIC = "inventory_levels/update"
LOCATION_IDS = (24826418, 24826419, 24826420)
AVAILABLE_CHOICES = (0, 0, 1, 2, 3, 5, 8, 13)  # zeros so both pause and enable happen
BERLIN_WINTER = timezone(timedelta(hours=1))


def noop() -> None:
    """The baseline job: nothing but RQ's own per-job cost."""


# --- setup ---------------------------------------------------------------------------------


def configure() -> None:
    """Environment defaults, the bench database, Django, migrations, quiet console logs."""
    for key, value in ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # `elbkerzen` and `bench` import from the project root
    ensure_database(os.environ["DATABASE_URL"])
    import django
    from django.conf import settings
    from django.core.management import call_command

    django.setup()
    if settings.ADS_BACKEND != "dryrun":
        sys.exit(f"this bench measures ADS_BACKEND=dryrun, not {settings.ADS_BACKEND!r}")
    require_migrations_for_models()
    call_command("migrate", verbosity=0)
    quiet_console_logs()


def require_migrations_for_models() -> None:
    """Stop early when models changed without a migration (the job's SQL would fail mid-run)."""
    from django.core.management import call_command

    try:
        call_command("makemigrations", "--check", "--dry-run", verbosity=0)
    except SystemExit:
        sys.exit("models have changes without migrations (makemigrations --check); bench stopped")


def ensure_database(url: str) -> None:
    """Create the bench's Postgres database through the `postgres` maintenance DB if missing."""
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        return
    import psycopg
    from psycopg import sql

    name = unquote(parts.path.lstrip("/"))
    with psycopg.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=unquote(parts.username or "postgres"),
        password=unquote(parts.password) if parts.password else None,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            return
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def quiet_console_logs() -> None:
    """Keep production's INFO logging (and its cost) but write it to /dev/null; warnings show."""
    root = logging.getLogger()
    sink = open(os.devnull, "w")  # noqa: SIM115  (lives as long as the process)
    for handler in root.handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(sink)
    loud = logging.StreamHandler(sys.stderr)
    loud.setLevel(logging.WARNING)
    loud.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    root.addHandler(loud)


def bench_queue() -> Any:
    """The app's default queue on the bench Redis DB, refusing DBs that belong to others."""
    from automation.platform.queues import default_queue

    queue = default_queue()
    db = int(queue.connection.connection_pool.connection_kwargs.get("db", 0))
    if db in FORBIDDEN_REDIS_DBS:
        sys.exit(f"refusing Redis DB {db} ({FORBIDDEN_REDIS_DBS[db]}); set REDIS_URL to another")
    return queue


def reset_state(queue: Any) -> None:
    """Empty the tables the job writes, watch one product anew, flush the bench Redis DB.

    The confirmed ad group statuses and the safety brake's state go too, so each round starts
    with the status unknown (the first decision is sent) and no brake episode open.
    """
    from django.db import connection

    from automation.models import (
        AdGroupAction,
        AdGroupState,
        BrakeEpisode,
        Delivery,
        HeldChange,
        StockLevel,
        WatchedProduct,
    )
    from tests.support.watching import watch

    HeldChange.objects.all().delete()
    BrakeEpisode.objects.all().delete()
    AdGroupState.objects.all().delete()
    AdGroupAction.objects.all().delete()
    StockLevel.objects.all().delete()
    Delivery.objects.all().delete()
    WatchedProduct.objects.all().delete()
    watch(ITEM_ID, AD_GROUP_ID, label="Winterzauber (bench)", customer_id=CUSTOMER_ID)
    with connection.cursor() as cursor:  # statistics, as a shop's tables have (bench.env)
        cursor.execute("ANALYZE")
    queue.connection.flushdb()


# --- the two workloads -----------------------------------------------------------------------


def level_bodies(count: int, locations: int, seed: int) -> list[bytes]:
    """Shopify-shaped `inventory_levels/update` bodies, in order, varied stock per location."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 26, 16, 10, tzinfo=BERLIN_WINTER)
    bodies = []
    for i in range(count):
        location = rng.choice(LOCATION_IDS[:locations])
        payload = {
            "inventory_item_id": ITEM_ID,
            "location_id": location,
            "available": rng.choice(AVAILABLE_CHOICES),
            "updated_at": (start + timedelta(seconds=i)).isoformat(),
            "admin_graphql_api_id": (
                f"gid://shopify/InventoryLevel/{location}?inventory_item_id={ITEM_ID}"
            ),
        }
        bodies.append(json.dumps(payload, separators=(",", ":")).encode())
    return bodies


def store_deliveries(bodies: list[bytes]) -> list[int]:
    """Insert the bodies as received Shopify deliveries, as the intake view would store them."""
    from automation.models import Delivery

    now = datetime.now(UTC)
    rows = [
        Delivery(
            source=Delivery.Source.SHOPIFY,
            shop_domain=SHOP,
            topic=TOPIC,
            webhook_id=str(uuid.uuid4()),
            event_id=str(uuid.uuid4()),
            triggered_at=now,
            api_version="2025-10",
            body=body,
        )
        for body in bodies
    ]
    return [row.pk for row in Delivery.objects.bulk_create(rows)]


def enqueue_inventory(count: int, locations: int, seed: int) -> list[str]:
    """Store N deliveries and enqueue each through the app's real path; returns the job ids."""
    from automation.platform.scheduling import enqueue_delivery, job_id_for

    ids = store_deliveries(level_bodies(count, locations, seed))
    if not all(enqueue_delivery(pk) for pk in ids):
        sys.exit("enqueue_delivery returned False: is Redis reachable?")
    return [job_id_for(pk) for pk in ids]


def enqueue_noops(queue: Any, count: int) -> list[str]:
    """N no-op jobs on the same queue, with the delivery jobs' options (no stored result).

    The worker imports `bench.worker.noop` by path.
    """
    return [queue.enqueue(NOOP_PATH, result_ttl=0).id for _ in range(count)]


def verify_inventory(count: int) -> None:
    """All N deliveries done (stale tolerated), each either one dry-run Ads action (a status
    change) or "unchanged" in its result (no Ads call: only on change); else exit."""
    from django.db.models import Count

    from automation.models import AdGroupAction, Delivery

    statuses = dict(Delivery.objects.values_list("status").annotate(n=Count("pk")))
    done, stale = statuses.get("done", 0), statuses.get("stale", 0)
    actions = AdGroupAction.objects.filter(result=AdGroupAction.Result.DRY_RUN).count()
    unchanged = Delivery.objects.filter(status="done", result__contains="unchanged").count()
    # A batch's levels before its last tracked one: the ad groups were set once, from that one.
    unchanged += Delivery.objects.filter(
        status="done", result__contains="set with delivery"
    ).count()
    if done + stale != count or actions + unchanged != done or not actions:
        errors = list(Delivery.objects.exclude(status="done").values_list("last_error", flat=True))
        sys.exit(
            f"inventory run incomplete: statuses {statuses}, {actions} dry-run actions and "
            f"{unchanged} unchanged "
            f"for {count} deliveries; first errors: {errors[:3]}"
        )
    if stale:
        print(f"warning: {stale} deliveries stale although the data was in order")


# --- timing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """One drained batch: the burst's wall time minus an empty burst's (worker start-up)."""

    jobs: int
    wall: float
    empty_burst: float

    @property
    def rate(self) -> float:
        return self.jobs / max(self.wall - self.empty_burst, 1e-9)


def drain(queue: Any) -> float:
    """Run one SimpleWorker in burst mode in this process; returns its wall time."""
    from rq.worker import SimpleWorker

    worker = SimpleWorker([queue], connection=queue.connection)
    started = time.perf_counter()
    worker.work(burst=True)
    return time.perf_counter() - started


def measure(queue: Any, job_ids: list[str], empty_burst: float) -> Timing:
    """Drain the queue with one burst; every job must have run (none queued, none failed).

    Jobs keep no result (result_ttl=0, as delivery jobs do), so the wall time of the burst is
    the measure; subtracting an empty burst removes the worker's start-up.
    """
    wall = drain(queue)
    failed = queue.failed_job_registry.count
    if queue.count or failed:
        sys.exit(f"{queue.count} jobs still queued, {failed} failed after the burst")
    return Timing(len(job_ids), wall, empty_burst)


def run_inventory(queue: Any, count: int, locations: int, seed: int, empty: float) -> Timing:
    """Store, enqueue, drain and verify N inventory deliveries."""
    timing = measure(queue, enqueue_inventory(count, locations, seed), empty)
    verify_inventory(count)
    return timing


def run_noop(queue: Any, count: int, empty: float) -> Timing:
    """Enqueue and drain N no-op jobs."""
    return measure(queue, enqueue_noops(queue, count), empty)


@dataclass(frozen=True)
class Round:
    """Both workloads of one round, measured back to back by the same worker class."""

    number: int
    first: str
    locations: int
    inventory: Timing
    noop: Timing

    @property
    def ratio(self) -> float:
        return self.inventory.rate / self.noop.rate


def run_round(queue: Any, number: int, count: int) -> Round:
    """Both workloads on a fresh state, alternating which goes first from round to round."""
    reset_state(queue)
    empty = drain(queue)
    locations = (number - 1) % len(LOCATION_IDS) + 1
    inventory_first = number % 2 == 1
    if inventory_first:
        inventory = run_inventory(queue, count, locations, number, empty)
        noop_timing = run_noop(queue, count, empty)
    else:
        noop_timing = run_noop(queue, count, empty)
        inventory = run_inventory(queue, count, locations, number, empty)
    first = "inventory" if inventory_first else "noop"
    return Round(number, first, locations, inventory, noop_timing)


# --- report ----------------------------------------------------------------------------------


def machine() -> str:
    """nproc, CPU model and the versions that matter, on one line."""
    import django
    import rq

    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (
        f"machine: nproc {os.cpu_count()}, {model}; Python {platform.python_version()}, "
        f"Django {django.get_version()}, rq {rq.__version__}"
    )


def print_table(rounds: list[Round], count: int) -> None:
    print(f"{'round':<7}{'first':<10}{'locs':>4}  {'inventory/s':>11}{'noop/s':>9}{'ratio':>7}")
    for r in rounds:
        print(
            f"{r.number:<7}{r.first:<10}{r.locations:>4}  {r.inventory.rate:>11.1f}"
            f"{r.noop.rate:>9.1f}{r.ratio:>7.2f}"
        )
    med = statistics.median
    inv, noop_rate = med(r.inventory.rate for r in rounds), med(r.noop.rate for r in rounds)
    ratio = med(r.ratio for r in rounds)
    print(f"{'median':<21}  {inv:>11.1f}{noop_rate:>9.1f}{ratio:>7.2f}")
    verdict = "PASS" if ratio >= TARGET_RATIO else "FAIL"
    print(f"{verdict}: median ratio {ratio:.2f} vs target ≥ {TARGET_RATIO} ({count} jobs each)")


def explain() -> None:
    print(
        "jobs/s = jobs / (burst wall time − empty-burst wall time): the worker's start-up is "
        "excluded, its per-job bookkeeping included."
    )


def profile_inventory(queue: Any, count: int, top: int = 10) -> None:
    """cProfile one worker burst over inventory jobs; print the top entries by cumulative time."""
    reset_state(queue)
    enqueue_inventory(count, len(LOCATION_IDS), seed=99)
    profiler = cProfile.Profile()
    profiler.runcall(drain, queue)
    verify_inventory(count)
    print(f"\nprofile: one SimpleWorker burst over {count} inventory jobs (cProfile)")
    stats = pstats.Stats(profiler, stream=sys.stdout).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


# --- entry point -----------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=500, help="jobs per workload and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile inventory jobs too")
    args = parser.parse_args(argv)
    if args.deliveries < 2 or args.rounds < 1:
        parser.error("need --deliveries ≥ 2 and --rounds ≥ 1")
    return args


def timed(label: str, step: Callable[[], Any]) -> Any:
    """Run one step and say how long it took (progress while the rounds run)."""
    started = time.perf_counter()
    result = step()
    print(f"{label} ({time.perf_counter() - started:.1f} s)", flush=True)
    return result


def collect(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the bench as `main` does and return its numbers (for `python -m bench`'s report)."""
    args = parse_args(argv)
    configure()
    queue = bench_queue()
    print(machine())
    print(f"database {os.environ['DATABASE_URL']}, redis {os.environ['REDIS_URL']}")
    rounds = [
        timed(f"round {n} done", lambda n=n: run_round(queue, n, args.deliveries))
        for n in range(1, args.rounds + 1)
    ]
    print_table(rounds, args.deliveries)
    explain()
    if args.profile:
        profile_inventory(queue, min(args.deliveries, 200))
    med = statistics.median
    ratio = med(r.ratio for r in rounds)
    return {
        "deliveries": args.deliveries,
        "rounds": [
            {
                "number": r.number,
                "first": r.first,
                "locations": r.locations,
                "inventory_rate": r.inventory.rate,
                "noop_rate": r.noop.rate,
                "ratio": r.ratio,
            }
            for r in rounds
        ],
        "inventory_rate": med(r.inventory.rate for r in rounds),
        "noop_rate": med(r.noop.rate for r in rounds),
        "ratio": ratio,
        "target": TARGET_RATIO,
        "passed": ratio >= TARGET_RATIO,
    }


def main(argv: list[str] | None = None) -> None:
    collect(argv)


if __name__ == "__main__":
    main()
