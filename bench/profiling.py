"""Sampling profiles (py-spy) of a gunicorn worker and an RQ worker under load.

Why: the numbers alone do not say what to change. py-spy samples the real processes from outside
(no code changes, wall-clock with `--idle`, so waiting on PostgreSQL and Redis shows), and each
sample is attributed to the operation it belongs to, which is what a product change removes.
"""

import collections
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.env import RUN_DIR, flush_redis, reset_tables
from bench.servers import Processes, start_gunicorn, start_rq_workers

RATE = 100  # samples per second and process: lower keeps py-spy's own CPU out of the way

# (frame substring, operation): the sample's frame nearest to the leaf that matches decides.
INTAKE_RULES = [
    (
        "DatabaseWrapper.is_usable (django/db/backends/postgresql",
        "PostgreSQL: health check SELECT 1",
    ),
    ("insert (automation/platform/rows.py", "PostgreSQL: INSERT (autocommit, round trip)"),
    (
        "enqueue_delivery (automation/platform/scheduling.py",
        "Redis: enqueue the job (RQ + round trip)",
    ),
    ("verify (automation/intake/sources/shopify.py", "verify: HMAC, headers, JSON check"),
    ("(prometheus_client/", "metrics: prometheus_client"),
    ("close_graceful (gunicorn/util.py", "gunicorn: lingering close (waits for client FIN)"),
]
WORKER_RULES = [
    (
        "DatabaseWrapper.is_usable (django/db/backends/postgresql",
        "PostgreSQL: health check SELECT 1",
    ),
    ("BaseConnection._start_query (psycopg", "PostgreSQL: BEGIN (atomic block)"),
    ("BaseDatabaseWrapper.commit (django", "PostgreSQL: COMMIT"),
    ("claim (automation/intake/inbox.py", "job: claim UPDATE … RETURNING"),
    ("store_levels (automation/stock/levels.py", "job: stale-guard upsert"),
    ("send_status (automation/google_ads/statuses.py", "job: Ads call (dry run: one log line)"),
    (
        "send_logged (automation/google_ads/statuses.py",
        "job: AdGroupAction INSERT, confirmed status",
    ),
    ("_finish (automation/intake/inbox.py", "job: outcome UPDATE"),
    ("lock_products (automation/stock/apply.py", "job: SELECT … FOR UPDATE watched products"),
    ("watching (automation/stock/facts.py", "job: watched products of the item"),
    ("evaluate (automation/stock/apply.py", "job: the product's stock decided and stored"),
    ("lock_ad_groups (automation/stock/apply.py", "job: ad groups created, locked"),
    ("settle (automation/stock/apply.py", "job: ad groups decided (facts, rule, only on change)"),
    ("(prometheus_client/", "metrics: prometheus_client"),
    ("process_delivery (automation/jobs.py", "job: other Python (Django, JSON, logging)"),
    ("dequeue_job_and_maintain_ttl (rq/", "RQ: dequeue (BLPOP and job fetch)"),
    ("perform_job (rq/", "RQ: per-job bookkeeping (registries, status, cleanup)"),
    ("execute_job (rq/", "RQ: per-job bookkeeping (registries, status, cleanup)"),
]
GENERIC_RULES = [
    ("(psycopg/", "PostgreSQL: other"),
    ("(redis/", "Redis: other"),
    ("(rq/", "RQ: worker loop (heartbeat, maintenance)"),
    ("(django/", "Django: middleware, routing, request/response"),
    ("(gunicorn/", "gunicorn: HTTP parsing, socket I/O"),
]
_LINE = re.compile(r":\d+\)$")


@dataclass
class Breakdown:
    """Where the sampled busy time went, by operation, plus the hottest functions."""

    title: str
    samples: int
    busy_share: float
    operations: list[tuple[str, float]] = field(default_factory=list)
    hottest: list[tuple[str, float]] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "title": self.title,
            "samples": self.samples,
            "busy_share": self.busy_share,
            "operations": self.operations,
            "hottest": self.hottest,
        }


def py_spy() -> str:
    """py-spy's path (next to this Python, or on PATH); installs it with pip when missing."""
    here = Path(sys.executable).with_name("py-spy")
    if here.exists():
        return str(here)
    found = shutil.which("py-spy")
    if found:
        return found
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "py-spy"], check=False)
    if here.exists():
        return str(here)
    sys.exit("profiling needs py-spy: `pip install py-spy` (or --skip-profile)")


def record(pid: int, seconds: float, out: Path, subprocesses: bool = False) -> subprocess.Popen:
    """Start sampling `pid` (wall clock, idle included) into a collapsed-stack file."""
    argv = [
        py_spy(),
        "record",
        "--pid",
        str(pid),
        "--idle",
        "--nonblocking",
        "--rate",
        str(RATE),
        "--duration",
        str(int(seconds)),
        "--format",
        "raw",
        "--output",
        str(out),
    ]
    if subprocesses:
        argv.append("--subprocesses")
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def load(paths: list[Path]) -> collections.Counter:
    """Collapsed stacks (frames root first, line numbers dropped) with their sample counts."""
    stacks: collections.Counter = collections.Counter()
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit():
                frames = tuple(_LINE.sub(")", frame) for frame in stack.split(";"))
                stacks[frames] += int(count)
    return stacks


def operation(frames: tuple[str, ...], rules: list[tuple[str, str]]) -> str:
    """The operation of one sample: specific rules first, leaf to root, then generic ones."""
    for table in (rules, GENERIC_RULES):
        for frame in reversed(frames):
            for needle, label in table:
                if needle in frame:
                    return label
    return "other"


def analyse(
    title: str, stacks: collections.Counter, scope: str, busy: str, rules: list[tuple[str, str]]
) -> Breakdown:
    """Shares of busy samples (those with a `busy` frame) among samples in `scope`."""
    in_scope = {f: n for f, n in stacks.items() if any(scope in frame for frame in f)}
    total = sum(in_scope.values())
    busy_stacks = {f: n for f, n in in_scope.items() if any(busy in frame for frame in f)}
    busy_total = sum(busy_stacks.values()) or 1
    ops: collections.Counter = collections.Counter()
    leaves: collections.Counter = collections.Counter()
    for frames, count in busy_stacks.items():
        ops[operation(frames, rules)] += count
        leaves[frames[-1]] += count
    return Breakdown(
        title=title,
        samples=total,
        busy_share=busy_total / total if total else 0.0,
        operations=[(label, n / busy_total) for label, n in ops.most_common()],
        hottest=[(frame, n / busy_total) for frame, n in leaves.most_common(8)],
    )


def profile_intake(procs: Processes, seconds: float, target: str = "intake") -> Breakdown:
    """All four gunicorn workers under wrk at 32 connections, sampled for `seconds`."""
    from bench import intake

    wrk = intake.wrk_binary()
    server = start_gunicorn(procs, name="gunicorn-profile")
    out = RUN_DIR / f"profile-{target}.txt"
    out.unlink(missing_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-wrk-") as tmp:
            script = intake.write_script(Path(tmp), intake.TARGETS[target])
            url = server.url(intake.TARGETS[target])
            reset_tables()
            intake.run_wrk(wrk, script, url, 32, 2, "pwarm")
            load_gen = subprocess.Popen(
                [wrk, "-t2", "-c32", f"-d{seconds + 3:g}s", "-s", str(script), url, "--", "prof"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            spy = None
            try:
                time.sleep(1)
                spy = record(server.proc.pid, seconds, out, subprocesses=True)
                spy.wait()
                load_gen.wait()
            finally:
                for child in (spy, load_gen):
                    if child is not None and child.poll() is None:
                        child.kill()
                        child.wait()
    finally:
        procs.stop(server.proc)
        reset_tables()
        flush_redis()
    return analyse(
        f"{target}: gunicorn workers under wrk, 32 connections (py-spy, wall clock)",
        load([out]),
        scope="SyncWorker.run (",
        busy="SyncWorker.handle (",
        rules=INTAKE_RULES,
    )


def profile_worker(procs: Processes, seconds: float, backlog: int = 2000) -> Breakdown:
    """Two RQ workers draining a backlog of inventory deliveries, sampled for `seconds`."""
    from datetime import UTC, datetime

    from automation.models import Delivery
    from automation.platform.scheduling import enqueue_delivery
    from bench import reaction

    items = reaction.watch_items()
    reset_tables()
    flush_redis()
    now = datetime.now(UTC)
    rng = reaction.random.Random(7)
    rows = [
        Delivery(
            source="shopify",
            shop_domain=reaction.SHOP,
            topic=reaction.TOPIC,
            webhook_id=f"prof-{n}",
            triggered_at=now,
            body=reaction.level_body(n, items, now, rng),
        )
        for n in range(backlog)
    ]
    for row in Delivery.objects.bulk_create(rows):
        enqueue_delivery(row.pk)
    outs = [RUN_DIR / f"profile-worker-{n}.txt" for n in range(reaction.WORKERS)]
    for out in outs:
        out.unlink(missing_ok=True)
    workers = start_rq_workers(procs, reaction.WORKERS)
    spies: list[subprocess.Popen] = []
    try:
        spies = [record(w.pid, seconds, out) for w, out in zip(workers, outs, strict=True)]
        for spy in spies:
            spy.wait()
    finally:
        for spy in spies:
            if spy.poll() is None:
                spy.kill()
                spy.wait()
        for worker in workers:
            procs.stop(worker)
        reset_tables()
        flush_redis()
    return analyse(
        "worker: two SimpleWorkers draining inventory deliveries (py-spy, wall clock)",
        load(outs),
        scope="BaseWorker.work (",
        busy="BaseWorker.work (",
        rules=WORKER_RULES,
    )
