"""Intake throughput and latency under wrk: the product's view against two references.

Why: a webhook intake is judged by how close it gets to what the server setup can do at all
(`bare`) and to the least the design needs (`verify + enqueue`, no database write). All of them
are served by the same gunicorn in the same run, interleaved, so the ratios survive a noisy
machine where absolute numbers would not.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.env import SECRET, SHOP, flush_redis, reset_tables
from bench.machine import cpu_busy
from bench.servers import Processes, start_gunicorn

TOPIC = "inventory_levels/update"
TARGET_RATIO = 0.3
TARGET_P99_MS = {32: 100.0, 4: 25.0}
BODY = json.dumps(
    {
        "inventory_item_id": 271878346596884015,
        "location_id": 24826418,
        "available": 0,
        "updated_at": "2026-11-26T16:10:00+01:00",
        "admin_graphql_api_id": (
            "gid://shopify/InventoryLevel/24826418?inventory_item_id=271878346596884015"
        ),
    },
    separators=(",", ":"),
).encode()
TARGETS = {
    "bare": "/bench/bare/",
    "verify+enqueue": "/bench/verify-enqueue/",
    "intake": "/webhooks/shopify/",
}

LUA = r"""
-- One signed body (the signature covers only the body); a new X-Shopify-Webhook-Id per request.
local body = [==[{body}]==]
local path = "{path}"
local headers = {{
  ["Content-Type"] = "application/json",
  ["X-Shopify-Topic"] = "{topic}",
  ["X-Shopify-Hmac-Sha256"] = "{signature}",
  ["X-Shopify-Shop-Domain"] = "{shop}",
  ["X-Shopify-Event-Id"] = "bench-event",
  ["X-Shopify-Triggered-At"] = "2026-11-26T15:10:00.000000Z",
  ["X-Shopify-API-Version"] = "2026-07",
}}
local next_thread = 0
local counter = 0
local prefix = "bench-"

function setup(thread)
  thread:set("thread_number", next_thread)
  next_thread = next_thread + 1
end

function init(args)
  prefix = (args[1] or "run") .. "-" .. tostring(thread_number) .. "-"
end

function request()
  counter = counter + 1
  headers["X-Shopify-Webhook-Id"] = prefix .. counter
  return wrk.format("POST", path, headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
"""


@dataclass(frozen=True)
class Run:
    """One wrk run against one target."""

    round: int
    target: str
    connections: int
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int
    stored: int  # rows (intake) or queued jobs (verify+enqueue) seen afterwards; -1: not checked

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


@dataclass
class Summary:
    """Medians over rounds for one (target, connections), with the median ratio to bare."""

    target: str
    connections: int
    rate: float
    p50_ms: float
    p99_ms: float
    ratio: float
    errors: int


@dataclass
class IntakeResult:
    """Every run and the per-(target, connections) medians."""

    rounds: int
    seconds: float
    runs: list[Run] = field(default_factory=list)
    background: list[float] = field(default_factory=list)  # CPU busy before each round, idle
    summaries: list[Summary] = field(default_factory=list)

    def summary(self, target: str, connections: int) -> Summary:
        return next(
            s for s in self.summaries if s.target == target and s.connections == connections
        )

    def verdicts(self) -> list[tuple[str, str, bool]]:
        """(target, measured, passed) for each intake target."""
        found = []
        for connections in (32, 4):
            intake = self.summary("intake", connections)
            found.append(
                (
                    f"intake ≥ {TARGET_RATIO}× bare at {connections} connections",
                    f"{intake.ratio:.2f}×",
                    intake.ratio >= TARGET_RATIO and intake.errors == 0,
                )
            )
            limit = TARGET_P99_MS[connections]
            found.append(
                (
                    f"intake p99 ≤ {limit:g} ms at {connections} connections",
                    f"{intake.p99_ms:.1f} ms",
                    intake.p99_ms <= limit,
                )
            )
        return found

    def as_dict(self) -> dict:
        return {
            "rounds": self.rounds,
            "seconds": self.seconds,
            "runs": [asdict(r) | {"rate": r.rate} for r in self.runs],
            "background": self.background,
            "summaries": [asdict(s) for s in self.summaries],
        }


def wrk_binary() -> str:
    """wrk's path; as root it is installed from Debian's packages, otherwise the bench says how."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("wrk missing: installing Debian's package (apt-get install -y wrk)", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False)
        found = shutil.which("wrk")
        if not found:
            subprocess.run(["apt-get", "update", "-qq"], check=False)
            subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False)
            found = shutil.which("wrk")
    if not found:
        sys.exit("the intake bench needs wrk: `sudo apt-get install wrk` (or --skip-intake)")
    return found


def write_script(directory: Path, path: str) -> Path:
    """The Lua script for one target path, with the body signed once."""
    from automation.intake.sources.shopify import sign

    text = LUA.format(
        body=BODY.decode(), path=path, topic=TOPIC, signature=sign(BODY, SECRET), shop=SHOP
    )
    script = directory / f"{path.strip('/').replace('/', '_')}.lua"
    script.write_text(text)
    return script


def run_wrk(wrk: str, script: Path, url: str, connections: int, seconds: float, tag: str) -> dict:
    """One wrk run (2 threads); the numbers its `done()` printed."""
    argv = [
        wrk,
        "-t2",
        f"-c{connections}",
        f"-d{seconds:g}s",
        "--timeout",
        "10s",
        "--latency",
        "-s",
        str(script),
        url,
        "--",
        tag,
    ]
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    for line in completed.stdout.splitlines():
        if line.startswith("WRK_JSON "):
            return json.loads(line.removeprefix("WRK_JSON "))
    raise RuntimeError(f"wrk printed no result: {completed.stdout}\n{completed.stderr}")


def stored_count(target: str, tag: str) -> int:
    """What the run left behind: intake rows with the run's ids, or jobs queued."""
    if target not in ("bare", "verify+enqueue"):  # an intake: the product's or a candidate's
        from automation.models import Delivery

        return Delivery.objects.filter(webhook_id__startswith=f"{tag}-").count()
    if target == "verify+enqueue":
        from automation.platform.queues import default_queue

        return default_queue().count
    return -1


def measure_one(wrk: str, target: "Target", conns: int, secs: float, rnd: int) -> Run:
    """Clean state, one wrk run, then check every answered request left its row or job."""
    reset_tables()
    flush_redis()
    time.sleep(0.5)
    tag = f"r{rnd}{uuid.uuid4().hex[:8]}"
    raw = run_wrk(wrk, target.script, target.url, conns, secs, tag)
    errors = raw["connect"] + raw["read"] + raw["write"] + raw["status"] + raw["timeout"]
    run = Run(
        round=rnd,
        target=target.name,
        connections=conns,
        requests=raw["requests"],
        seconds=raw["duration_us"] / 1e6,
        p50_ms=raw["p50_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
        errors=errors,
        stored=stored_count(target.name, tag),
    )
    if run.stored != -1 and run.stored < run.requests - run.errors:
        print(f"  warning: {run.stored} stored for {run.requests} answered requests")
    return run


@dataclass(frozen=True)
class Target:
    """One URL under test, with the wrk script that posts to it."""

    name: str
    url: str
    script: Path


def summarise(runs: list[Run], names: list[str]) -> list[Summary]:
    """Medians per (target, connections); ratios are taken per round, then the median."""
    med = statistics.median
    summaries = []
    for conns in (32, 4):
        bare = {r.round: r.rate for r in runs if r.target == "bare" and r.connections == conns}
        for target in names:
            mine = [r for r in runs if r.target == target and r.connections == conns]
            summaries.append(
                Summary(
                    target=target,
                    connections=conns,
                    rate=med(r.rate for r in mine),
                    p50_ms=med(r.p50_ms for r in mine),
                    p99_ms=med(r.p99_ms for r in mine),
                    ratio=med(r.rate / bare[r.round] for r in mine),
                    errors=sum(r.errors for r in mine),
                )
            )
    return summaries


def run(
    procs: Processes, rounds: int, seconds: float, candidates: dict[str, Path] | None = None
) -> IntakeResult:
    """Warm up, then rounds of (32, 4 connections) × the targets, their order rotated.

    `candidates` are other checkouts (experiments on the product) whose intakes are served by
    their own gunicorn each and measured as more targets in the same rounds.
    """
    candidates = candidates or {}
    wrk = wrk_binary()
    server = start_gunicorn(procs, name="gunicorn-intake")
    servers = [server]
    result = IntakeResult(rounds=rounds, seconds=seconds)
    with tempfile.TemporaryDirectory(prefix="bench-wrk-") as tmp:
        targets = [
            Target(name, server.url(path), write_script(Path(tmp), path))
            for name, path in TARGETS.items()
        ]
        for name, root in candidates.items():
            other = start_gunicorn(procs, root=root, name=f"gunicorn-{name}")
            servers.append(other)
            targets.append(Target(name, other.url(TARGETS["intake"]), targets[-1].script))
        for target in targets:  # every worker opens its DB and Redis connections first
            measure_one(wrk, target, 32, 2, 0)
        for rnd in range(1, rounds + 1):
            result.background.append(cpu_busy())
            for conns in (32, 4):
                for target in targets:
                    run_ = measure_one(wrk, target, conns, seconds, rnd)
                    result.runs.append(run_)
                    print(
                        f"  round {rnd} {target.name:<15} c={conns:<3} {run_.rate:8.0f}/s "
                        f"p50 {run_.p50_ms:6.1f} ms  p99 {run_.p99_ms:6.1f} ms"
                        + (f"  errors {run_.errors}" if run_.errors else ""),
                        flush=True,
                    )
                targets = targets[1:] + targets[:1]
    reset_tables()
    flush_redis()
    for each in servers:
        procs.stop(each.proc)
    result.summaries = summarise(result.runs, [*TARGETS, *candidates])
    return result
