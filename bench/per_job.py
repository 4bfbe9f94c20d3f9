"""Work per worker job, counted instead of timed: inventory deliveries against RQ no-op jobs.

Why: wall-clock rates (bench/worker.py) move with whatever else the machine runs; these counts
do not. For one SimpleWorker draining jobs in this process it reports, per job:

- PostgreSQL round trips and statements, from libpq's own protocol trace (every message the
  client sends and receives, BEGIN and COMMIT included; a round trip is one ReadyForQuery);
- Redis round trips (redis-py sends) and commands (Redis's MONITOR, this DB only);
- Python function calls (cProfile's count over the drain);
- with `--instructions`, CPU instructions of the whole process (valgrind's callgrind, which
  counts the same whatever the load): two runs draining different numbers of jobs, so start-up,
  enqueueing and the warm-up cancel out in the difference.

Each figure is the drain of N jobs minus an empty drain (the worker's own start and stop), ÷ N.
`inventory − noop` is what the product adds to RQ's own per-job work.

Run from a checkout's root: `python bench/per_job.py [--jobs N] [--instructions]`; `--root DIR`
measures another checkout (its own `bench/worker.py` stores and enqueues, so it must be a
checkout of this project) with this script, e.g. a worktree of an older commit on its own
database: `DATABASE_URL=... python bench/per_job.py --root /tmp/old`. It uses the database and
Redis DB of bench/worker.py (BENCH defaults there, or DATABASE_URL / REDIS_URL), empties both.
"""

import argparse
import cProfile
import gc
import os
import pstats
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
WARM_UP = 20  # jobs drained first: psycopg prepares a statement on its 5th run, caches fill
WORKLOADS = ("inventory", "noop")


@dataclass
class Counts:
    """What one instrumented drain did."""

    jobs: int
    pg_round_trips: int = 0
    pg_statements: Counter = field(default_factory=Counter)
    redis_round_trips: int = 0
    redis_commands: Counter = field(default_factory=Counter)
    python_calls: int = 0
    wal_bytes: int = 0

    def minus(self, base: "Counts") -> dict[str, Any]:
        """Per-job figures: (this − base) ÷ jobs."""
        n = self.jobs
        return {
            "pg_round_trips": (self.pg_round_trips - base.pg_round_trips) / n,
            "pg_statements": _per_job(self.pg_statements, base.pg_statements, n),
            "redis_round_trips": (self.redis_round_trips - base.redis_round_trips) / n,
            "redis_commands": _per_job(self.redis_commands, base.redis_commands, n),
            "python_calls": (self.python_calls - base.python_calls) / n,
            "wal_bytes": (self.wal_bytes - base.wal_bytes) / n,
        }


def _per_job(counts: Counter, base: Counter, n: int) -> dict[str, float]:
    keys = set(counts) | set(base)
    return {key: (counts[key] - base[key]) / n for key in keys if counts[key] != base[key]}


# --- setup -------------------------------------------------------------------------------------


def setup(root: Path, *, migrate: bool) -> Any:
    """The measured checkout's `bench.worker`, configured (Django set up, quiet logs)."""
    os.chdir(root)
    sys.path.insert(0, str(root))
    from bench import worker

    for key, value in worker.ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    if migrate:
        worker.configure()
    else:
        import django

        django.setup()
        worker.quiet_console_logs()
    return worker


def prepare(worker: Any, workload: str, jobs: int, history: int) -> Any:
    """Fresh state with `history` past deliveries, a drained warm-up, then `jobs` queued jobs
    of the workload; the queue."""
    queue = worker.bench_queue()
    worker.reset_state(queue)
    add_history(worker, history)
    worker.enqueue_inventory(WARM_UP, len(worker.LOCATION_IDS), seed=1)
    worker.drain(queue)
    if workload == "inventory":
        worker.enqueue_inventory(jobs, len(worker.LOCATION_IDS), seed=2)
    else:
        worker.enqueue_noops(queue, jobs)
    return queue


def add_history(worker: Any, count: int) -> None:
    """`count` processed deliveries, as a shop's table holds them (rows stay for the retention
    period): index upkeep grows with the table, so an empty table would hide it. Vacuumed, so
    every run starts from the same pages."""
    from django.db import connection

    from automation.models import Delivery

    bodies = worker.level_bodies(count, len(worker.LOCATION_IDS), seed=3)
    for start in range(0, count, 2000):
        ids = worker.store_deliveries(bodies[start : start + 2000])
        Delivery.objects.filter(pk__in=ids).update(status="done", attempts=1)
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {connection.ops.quote_name(Delivery._meta.db_table)}")


# --- PostgreSQL: libpq's protocol trace --------------------------------------------------------


class PgTrace:
    """libpq's trace of the Django connection's messages while active."""

    def __init__(self) -> None:
        self.file = tempfile.NamedTemporaryFile("w+", suffix=".pqtrace")  # noqa: SIM115

    def __enter__(self) -> "PgTrace":
        from django.db import connection
        from psycopg import pq

        connection.ensure_connection()
        self.pgconn = connection.connection.pgconn
        self.pgconn.trace(self.file.fileno())
        self.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        return self

    def __exit__(self, *exc: object) -> None:
        self.pgconn.untrace()  # flushes libpq's buffer

    def text(self) -> str:
        self.file.seek(0)
        return self.file.read()


_MESSAGE = re.compile(r"^(?P<who>[FB])\t\d+\t(?P<kind>\w+)\t?(?P<rest>.*)$")
# libpq quotes a statement's text without escaping the quotes inside it, hence greedy matches.
_QUERY = re.compile(r'^ ?"(?P<sql>.*)"$', re.S)
_PARSE = re.compile(r'^ ?"(?P<name>[^"]*)" "(?P<sql>.*)" \d+(?: (?:\d+|NNNN))*$', re.S)
_BIND = re.compile(r'^ ?"[^"]*" "(?P<name>[^"]*)"')


def read_trace(text: str, names: dict[str, str]) -> tuple[int, Counter]:
    """Round trips (ReadyForQuery) and statements by their text's first words.

    `names` maps prepared statements' names to their text; filled from the trace's Parse
    messages (the warm-up traces them before the measured drain uses them by name).
    """
    round_trips = 0
    statements: Counter = Counter()
    pending = ""
    for who, kind, rest in _messages(text):
        if who == "B":
            round_trips += kind == "ReadyForQuery"
        elif kind == "Query" and (query := _QUERY.match(rest)):
            statements[_label(query["sql"])] += 1
        elif kind == "Parse" and (parse := _PARSE.match(rest)):
            pending = parse["sql"]
            if parse["name"]:
                names[parse["name"]] = pending
        elif kind == "Bind" and (bind := _BIND.match(rest)) and bind["name"]:
            pending = names.get(bind["name"], f"(prepared {bind['name']})")
        elif kind == "Execute":
            statements[_label(pending)] += 1
    return round_trips, statements


def _messages(text: str) -> list[tuple[str, str, str]]:
    """(F or B, message type, the rest) per message; a statement's newlines continue a line."""
    messages: list[list[str]] = []
    for line in text.splitlines():
        match = _MESSAGE.match(line)
        if match:
            messages.append([match["who"], match["kind"], match["rest"]])
        elif messages:
            messages[-1][2] += "\n" + line
    return [(who, kind, rest) for who, kind, rest in messages]


def _label(sql: str) -> str:
    """A statement's kind and table: `UPDATE automation_delivery`, `BEGIN`, `SELECT …`."""
    words = sql.replace('""', '"').split()
    if not words:
        return "(empty)"
    verb = words[0].upper()
    table = ""
    for key in ("FROM", "INTO", "UPDATE"):
        upper = [w.upper() for w in words]
        if key in upper and upper.index(key) + 1 < len(words):
            table = words[upper.index(key) + 1].strip('"(')
            break
    if verb == "SELECT" and "FOR" in [w.upper() for w in words[-3:]]:
        verb = "SELECT … FOR UPDATE"
    if verb == "INSERT" and "CONFLICT" in sql.upper():
        verb = "INSERT … ON CONFLICT"
    return f"{verb} {table}".strip()


# --- Redis: sends and MONITOR ------------------------------------------------------------------


class RedisCount:
    """Round trips (redis-py sends) and commands (MONITOR, this DB only) while active."""

    END = "per_job:end"

    def __init__(self, queue: Any) -> None:
        self.client = queue.connection
        self.db = int(self.client.connection_pool.connection_kwargs.get("db", 0))
        self.sends = 0
        self.commands: Counter = Counter()

    def __enter__(self) -> "RedisCount":
        from redis.connection import AbstractConnection

        self._original = AbstractConnection.send_packed_command
        count = self

        def send_packed_command(conn: Any, command: Any, check_health: bool = True) -> None:
            count.sends += 1
            return count._original(conn, command, check_health)

        self.monitor = self.client.monitor()
        self.monitor.__enter__()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        AbstractConnection.send_packed_command = send_packed_command
        return self

    def _watch(self) -> None:
        while True:
            seen = self.monitor.next_command()
            if int(seen.get("db", -1)) != self.db:
                continue
            if seen["command"] == f"ECHO {self.END}":
                return
            self.commands[seen["command"].split(" ", 1)[0].upper()] += 1

    def __exit__(self, *exc: object) -> None:
        from redis.connection import AbstractConnection

        AbstractConnection.send_packed_command = self._original
        self.client.echo(self.END)  # MONITOR shows it after every command sent before it
        self.thread.join(timeout=30)
        self.monitor.__exit__(None, None, None)


# --- one instrumented drain --------------------------------------------------------------------


def counted_drain(worker: Any, queue: Any, jobs: int, names: dict[str, str]) -> Counts:
    """Drain the queue with every counter on; `jobs` is what it holds (0 for the empty drain)."""
    profiler = cProfile.Profile()
    wal_before = wal_position()
    with RedisCount(queue) as redis_count, PgTrace() as trace:
        profiler.runcall(worker.drain, queue)
    wal_bytes = wal_position() - wal_before
    if queue.count or queue.failed_job_registry.count:
        sys.exit(f"{queue.count} jobs still queued, {queue.failed_job_registry.count} failed")
    round_trips, statements = read_trace(trace.text(), names)
    return Counts(
        jobs=jobs,
        pg_round_trips=round_trips,
        pg_statements=statements,
        redis_round_trips=redis_count.sends,
        redis_commands=redis_count.commands,
        python_calls=pstats.Stats(profiler).total_calls,
        wal_bytes=wal_bytes,
    )


def verify_inventory() -> None:
    """Every delivery ended done or stale; else the counts describe a failing path."""
    from automation.models import Delivery

    unfinished = Delivery.objects.exclude(status__in=["done", "stale"])
    if unfinished.exists():
        errors = list(unfinished.values_list("status", "last_error")[:3])
        sys.exit(f"inventory run incomplete: {unfinished.count()} not done, e.g. {errors}")


def wal_position() -> int:
    """The server's WAL insert position in bytes (the whole cluster's: only meaningful on a
    server nothing else writes to)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')")
        return int(cursor.fetchone()[0])


def measure_counts(worker: Any, workload: str, jobs: int, history: int) -> dict[str, Any]:
    """Per-job counts of one workload: its drain minus an empty drain."""
    names: dict[str, str] = {}
    with PgTrace() as warm_trace:  # the warm-up's Parse messages name the prepared statements
        queue = prepare(worker, workload, jobs, history)
    read_trace(warm_trace.text(), names)
    full = counted_drain(worker, queue, jobs, names)
    if workload == "inventory":
        verify_inventory()
    empty = counted_drain(worker, queue, 0, names)
    return full.minus(empty)


# --- instructions: callgrind, counted between markers -------------------------------------------

# callgrind zeroes its counters when the process enters the first C function and writes them out
# (and zeroes them) when it enters the second; nothing else in the job path calls either.
CLIENT_MARKERS = ("sys_getswitchinterval", "sys_getdlopenflags")
# The same for a PostgreSQL server run under callgrind (`--server-callgrind`): its backend marks
# where our statements `SELECT pg_backend_pid()` and `SELECT pg_postmaster_start_time()` run.
SERVER_MARKERS = ("pg_backend_pid", "pg_postmaster_start_time")


def counted_block(run: Any) -> None:
    """Run `run()` between the client's and the server's zero and dump markers."""
    from django.db import connection

    # Every block starts from the same collector state: otherwise a full collection (several
    # million instructions for this process's heap) lands in one block and not in another.
    gc.collect()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        sys.getswitchinterval()
        run()
        sys.getdlopenflags()
        cursor.execute("SELECT pg_postmaster_start_time()")


def child(worker: Any, workload: str, jobs: int, history: int) -> None:
    """Under valgrind: a marked drain of `jobs` jobs, then a marked empty drain.

    Prints the PostgreSQL backend's pid last, for a server run under callgrind.
    """
    from django.db import connection

    queue = prepare(worker, workload, jobs, history)
    pid = connection.connection.info.backend_pid
    counted_block(lambda: worker.drain(queue))
    counted_block(lambda: worker.drain(queue))
    if queue.count or connection.connection.info.backend_pid != pid:
        sys.exit("jobs left over, or the worker changed its database connection")
    print(f"backend_pid={pid}", flush=True)


def instructions(
    root: Path, workload: str, jobs: int, history: int, server_dir: Path | None
) -> dict[str, float]:
    """Instructions per job: (a drain of `jobs` − an empty drain) ÷ jobs, from one valgrind run.

    `client`: this process. `server`: its PostgreSQL backend, when the server runs under
    callgrind with SERVER_MARKERS (see the module docstring).
    """
    child = [str(HERE), "--root", str(root), "--child", workload]
    child += ["--jobs", str(jobs), "--history", str(history)]
    client, server = callgrind_dumps(child, 2, server_dir)
    per_job = {"client": (client[0] - client[1]) / jobs}
    if server is not None:
        per_job["server"] = (server[0] - server[1]) / jobs
    return per_job


def callgrind_dumps(
    child: list[str], dumps: int, server_dir: Path | None
) -> tuple[list[int], list[int] | None]:
    """Run `python child…` under callgrind; the instruction totals of its `dumps` dumps.

    The child marks each counted block with CLIENT_MARKERS and prints `backend_pid=N`; with
    `server_dir` (PostgreSQL itself under callgrind, SERVER_MARKERS) its backend's dumps are
    read too, else the second value is None. Shared with bench/handwritten.py.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                f"--zero-before={CLIENT_MARKERS[0]}",
                f"--dump-before={CLIENT_MARKERS[1]}",
                sys.executable,
                *child,
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        client = [_callgrind_total(Path(f"{out}.{n}")) for n in range(1, dumps + 1)]
    if server_dir is None:
        return client, None
    pid = re.findall(r"^backend_pid=(\d+)$", done.stdout, re.M)[-1]
    server = [
        _callgrind_total(server_dir / f"callgrind.out.{pid}.{n}") for n in range(1, dumps + 1)
    ]
    return client, server


def _callgrind_total(path: Path) -> int:
    """The total of one callgrind dump; waits for a server backend's to appear."""
    for _ in range(120):
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
        time.sleep(0.5)
    raise TimeoutError(f"no callgrind totals in {path}")


# --- report ------------------------------------------------------------------------------------


def report(results: dict[str, dict[str, Any]]) -> None:
    inventory, noop = results["inventory"], results["noop"]
    rows = [
        ("PostgreSQL round trips", "pg_round_trips"),
        ("Redis round trips", "redis_round_trips"),
        ("Python function calls", "python_calls"),
        ("WAL bytes (whole server)", "wal_bytes"),
    ]
    for side in ("client", "server"):
        if side in inventory.get("instructions", {}):
            rows.append((f"instructions, {side} (M)", side))
    print(f"{'per job':<26}{'inventory':>12}{'noop':>12}{'difference':>12}")
    if "pg_round_trips" not in inventory:
        rows = [row for row in rows if row[1] in ("client", "server")]
    for label, key in rows:
        if key in ("client", "server"):
            a, b = inventory["instructions"][key] / 1e6, noop["instructions"][key] / 1e6
        else:
            a, b = inventory[key], noop[key]
        print(f"{label:<26}{a:>12.2f}{b:>12.2f}{a - b:>12.2f}")
    if "pg_statements" not in inventory:
        return
    for title, key in (
        ("PostgreSQL statements", "pg_statements"),
        ("Redis commands", "redis_commands"),
    ):
        print(f"\n{title} per job (inventory | noop):")
        keys = sorted(set(inventory[key]) | set(noop[key]))
        for name in keys:
            a, b = inventory[key].get(name, 0), noop[key].get(name, 0)
            print(f"  {name:<48}{a:>8.2f}{b:>8.2f}")
        print(f"  {'total':<48}{sum(inventory[key].values()):>8.2f}{sum(noop[key].values()):>8.2f}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=HERE.parent.parent, help="checkout to measure")
    parser.add_argument("--jobs", type=int, default=200, help="jobs per measured drain")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions too (callgrind, minutes)"
    )
    parser.add_argument(
        "--valgrind-jobs", type=int, default=100, help="jobs per drain under callgrind"
    )
    parser.add_argument(
        "--instructions-only", action="store_true", help="skip the counts (with --instructions)"
    )
    parser.add_argument(
        "--server-callgrind",
        type=Path,
        help="directory where a PostgreSQL run under callgrind writes callgrind.out.<pid>",
    )
    parser.add_argument(
        "--history", type=int, default=10_000, help="processed deliveries in the table"
    )
    parser.add_argument("--json", type=Path, help="write the per-job figures here")
    parser.add_argument("--child", choices=WORKLOADS, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def history(workload: str, args: argparse.Namespace) -> int:
    """The table's history matters to the jobs that write it."""
    return args.history if workload == "inventory" else 0


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    root = args.root.resolve()
    if args.child:
        child(setup(root, migrate=False), args.child, args.jobs, args.history)
        return
    worker = setup(root, migrate=True)
    print(
        f"checkout {root}; database {os.environ['DATABASE_URL']}, redis {os.environ['REDIS_URL']}"
    )
    results: dict[str, dict[str, Any]] = {
        workload: {}
        if args.instructions_only
        else measure_counts(worker, workload, args.jobs, history(workload, args))
        for workload in WORKLOADS
    }
    if args.instructions:
        for workload in WORKLOADS:
            results[workload]["instructions"] = instructions(
                root, workload, args.valgrind_jobs, history(workload, args), args.server_callgrind
            )
    report(results)
    if args.json:
        import json

        args.json.write_text(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
