"""Slow clients against the documented stack: signed webhooks answered while slow clients hold on.

Why: gunicorn's sync workers serve one connection each; four clients that send their headers,
then one body byte every 2 s, held all four workers and every real webhook timed out.
docker-compose.yml therefore puts nginx in front (deploy/nginx/default.conf.template),
which reads each body completely before gunicorn sees the request. This bench runs that very
template with the local nginx binary in front of the Dockerfile's gunicorn command, opens SLOW
connections that trickle their bodies, and sends signed `inventory_levels/update` deliveries at
RATE per second for SECONDS, open loop. Target: every delivery answered 200 within 1 s. The same
run straight against gunicorn shows what the proxy prevents.

`python -m bench.slow_clients` runs only this part and rewrites its section of
docs/PERFORMANCE.md; `python -m bench` runs it with the others.
"""

import argparse
import asyncio
import contextlib
import json
import math
import os
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.env import ROOT, RUN_DIR, SECRET, SHOP
from bench.reaction import request_bytes
from bench.servers import Processes, nginx_binary, start_gunicorn, start_nginx

SLOW = 200
RATE = 10.0
SECONDS = 30.0
LIMIT_S = 1.0  # every legitimate delivery answered within this
BYTE_INTERVAL_S = 2.0  # the slow clients' pace: one body byte per interval
SLOW_BODY_BYTES = 10_000  # declared Content-Length: at one byte per 2 s the body never ends
ANSWER_CAP_S = 10.0  # a delivery not answered by then counts as never answered
TOPIC = "inventory_levels/update"
SECTION_START = "<!-- slow-clients:start -->"
SECTION_END = "<!-- slow-clients:end -->"


@dataclass
class Attack:
    """What the slow clients managed to hold and what the legitimate deliveries got."""

    path: str  # "nginx → gunicorn" or "gunicorn directly"
    slow: int
    rate: float
    seconds: float
    sent: int = 0
    answered_200: int = 0
    latencies_s: list[float] = field(default_factory=list)  # inf: no answer within the cap
    statuses: dict[str, int] = field(default_factory=dict)
    slow_opened: int = 0  # connections the slow clients opened (re-opened when cut)
    slow_cut: int = 0  # slow connections the server answered or closed
    slow_held_at_end: int = 0

    @property
    def within_limit(self) -> int:
        return sum(1 for s in self.latencies_s if s <= LIMIT_S)

    @property
    def passed(self) -> bool:
        """Every delivery sent was answered 200 within LIMIT_S."""
        return self.sent > 0 and self.answered_200 == self.sent and self.within_limit == self.sent

    @property
    def max_ms(self) -> float:
        return max(self.latencies_s, default=math.inf) * 1000

    def percentile_ms(self, q: float) -> float:
        if not self.latencies_s:
            return math.inf
        ordered = sorted(self.latencies_s)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))] * 1000

    def as_dict(self) -> dict:
        return asdict(self) | {
            "passed": self.passed,
            "within_limit": self.within_limit,
            "max_ms": self.max_ms,
            "p99_ms": self.percentile_ms(99),
        }

    def line(self) -> str:
        return (
            f"  {self.path:<18} {self.slow} slow, {self.rate:g}/s for {self.seconds:g} s: "
            f"{self.within_limit}/{self.sent} answered 200 within {LIMIT_S:g} s, "
            f"p50 {_ms(self.percentile_ms(50))} ms, p99 {_ms(self.percentile_ms(99))} ms, "
            f"max {_ms(self.max_ms)} ms; slow connections held at end {self.slow_held_at_end}"
            f"  {'PASS' if self.passed else 'FAIL'}"
        )


@dataclass
class SlowClientsResult:
    """Both runs of one measurement, and what they ran on."""

    measured_at: str
    versions: dict[str, str]
    proxied: Attack
    direct: Attack | None

    def verdicts(self) -> list[tuple[str, str, bool]]:
        p = self.proxied
        rows = [
            (
                f"slow clients: {p.slow} held, {p.rate:g} webhooks/s for {p.seconds:g} s behind "
                f"nginx → all answered ≤ {LIMIT_S:g} s",
                f"{p.within_limit}/{p.sent}, max {_ms(p.max_ms)} ms",
                p.passed,
            )
        ]
        if self.direct:
            d = self.direct
            rows.append(
                (
                    "slow clients straight to gunicorn (no proxy; reported, no target)",
                    f"{d.within_limit}/{d.sent} within {LIMIT_S:g} s",
                    True,
                )
            )
        return rows

    def verdict_words(self) -> list[tuple[str, str, str]]:
        """The verdicts as the report's Targets table shows them (the direct run is info)."""
        words = [(t, m, "PASS" if ok else "FAIL") for t, m, ok in self.verdicts()]
        return words[:1] + [(t, m, "info") for t, m, _ in words[1:]]

    def as_dict(self) -> dict:
        return {
            "measured_at": self.measured_at,
            "versions": self.versions,
            "proxied": self.proxied.as_dict(),
            "direct": self.direct.as_dict() if self.direct else None,
        }


def _ms(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:,.0f}"


def slow_head(port: int) -> bytes:
    """Headers of a request whose body then trickles in; nobody signs it, nobody needs to."""
    return (
        "POST /webhooks/shopify/ HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {SLOW_BODY_BYTES}\r\n"
        f"X-Shopify-Topic: {TOPIC}\r\n"
        f"X-Shopify-Shop-Domain: {SHOP}\r\n"
        "X-Shopify-Hmac-Sha256: c2xvdw==\r\n\r\n"
    ).encode()


def delivery(port: int, n: int, tag: str, secret: str, shop: str) -> bytes:
    """The n-th legitimate delivery as Shopify sends it: signed body, new connection."""
    now = datetime.now(UTC)
    item = 271878346596000000 + n
    body = json.dumps(
        {
            "inventory_item_id": item,
            "location_id": 24826418,
            "available": n % 5,
            "updated_at": now.isoformat(timespec="microseconds"),
            "admin_graphql_api_id": (
                f"gid://shopify/InventoryLevel/24826418?inventory_item_id={item}"
            ),
        },
        separators=(",", ":"),
    ).encode()
    return request_bytes(port, body, f"{tag}-{n}", now, secret=secret, shop=shop)


async def _slow_client(port: int, stop: asyncio.Event, attack: Attack, held: list[int]) -> None:
    """Hold one connection open with a trickling body; open a new one when the server cuts it."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.5)
            continue
        attack.slow_opened += 1
        held[0] += 1
        answer = asyncio.ensure_future(reader.read(1))  # any answer or EOF ends this hold
        stopped = asyncio.ensure_future(stop.wait())
        try:
            writer.write(slow_head(port))
            while True:
                await writer.drain()
                done, _ = await asyncio.wait(
                    {answer, stopped}, timeout=BYTE_INTERVAL_S, return_when=asyncio.FIRST_COMPLETED
                )
                if answer in done:
                    attack.slow_cut += 1
                    break
                if stopped in done:
                    break
                writer.write(b" ")
        except OSError:
            attack.slow_cut += 1
        finally:
            held[0] -= 1
            answer.cancel()
            stopped.cancel()
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def _deliver(port: int, payload: bytes, cap: float) -> tuple[int, float]:
    """One delivery on a new connection: (status or 0, seconds to the whole answer or inf)."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(cap):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(payload)
                await writer.drain()
                answer = await reader.read()
            finally:
                writer.close()
    except (OSError, TimeoutError):
        return 0, math.inf
    elapsed = time.perf_counter() - started
    try:
        return int(answer.split(b" ", 2)[1]), elapsed
    except (IndexError, ValueError):
        return 0, math.inf


async def attack(
    port: int,
    path: str,
    slow: int = SLOW,
    rate: float = RATE,
    seconds: float = SECONDS,
    secret: str = SECRET,
    shop: str = SHOP,
    settle: float = 2 * BYTE_INTERVAL_S + 0.5,
    answer_cap: float = ANSWER_CAP_S,
) -> Attack:
    """Open `slow` slow connections, let them settle, then send signed deliveries open loop.

    A delivery not answered within `answer_cap` seconds counts as never answered (inf).
    """
    result = Attack(path=path, slow=slow, rate=rate, seconds=seconds)
    stop = asyncio.Event()
    held = [0]
    slow_tasks = [asyncio.create_task(_slow_client(port, stop, result, held)) for _ in range(slow)]
    await asyncio.sleep(settle)  # every slow client has sent its headers and some bytes
    loop = asyncio.get_running_loop()
    tag = f"slow{uuid.uuid4().hex[:8]}"
    start = loop.time()
    sends = []
    for n in range(int(rate * seconds)):
        delay = start + n / rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        payload = delivery(port, n, tag, secret, shop)
        sends.append(asyncio.create_task(_deliver(port, payload, answer_cap)))
    answers = await asyncio.gather(*sends)
    result.slow_held_at_end = held[0]
    stop.set()
    await asyncio.gather(*slow_tasks)
    result.sent = len(answers)
    result.latencies_s = [secs for _, secs in answers]
    result.answered_200 = sum(1 for status, _ in answers if status == 200)
    for status, _ in answers:
        key = str(status) if status else "no answer"
        result.statuses[key] = result.statuses.get(key, 0) + 1
    return result


def nginx_version() -> str:
    binary = nginx_binary()
    if not binary:
        return "not installed"
    out = subprocess.run([binary, "-v"], capture_output=True, text=True, check=False)
    return (out.stderr or out.stdout).strip().removeprefix("nginx version: nginx/")


def require_nginx() -> None:
    """nginx must be there; as root it is installed from Debian's packages, as .ci/run does."""
    if nginx_binary():
        return
    if os.geteuid() == 0:
        print("nginx missing: installing Debian's package (apt-get install -y nginx)", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "nginx"], check=False)
    if not nginx_binary():
        raise SystemExit("nginx is needed (apt-get install nginx)")


def run(
    procs: Processes, slow: int = SLOW, rate: float = RATE, seconds: float = SECONDS
) -> SlowClientsResult:
    """Behind the committed nginx config, then straight to gunicorn; both on a fresh gunicorn."""
    from importlib import metadata

    from bench.env import flush_redis, reset_tables

    require_nginx()
    measured_at = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    reset_tables()
    flush_redis()
    gunicorn = start_gunicorn(procs, name="gunicorn-slow-proxied")
    nginx = start_nginx(procs, gunicorn.port, RUN_DIR / "nginx")
    proxied = asyncio.run(attack(nginx.port, "nginx → gunicorn", slow, rate, seconds))
    print(proxied.line(), flush=True)
    procs.stop(nginx.proc)
    procs.stop(gunicorn.proc)
    reset_tables()
    flush_redis()
    gunicorn = start_gunicorn(procs, name="gunicorn-slow-direct")
    direct = asyncio.run(attack(gunicorn.port, "gunicorn directly", slow, rate, seconds))
    print(direct.line(), flush=True)
    procs.stop(gunicorn.proc, grace=2)  # its workers are stuck in slow reads; no need to wait
    reset_tables()
    flush_redis()
    return SlowClientsResult(
        measured_at=measured_at,
        versions={"nginx": nginx_version(), "gunicorn": metadata.version("gunicorn")},
        proxied=proxied,
        direct=direct,
    )


def section(result: SlowClientsResult) -> str:
    """The docs/PERFORMANCE.md section, between markers so a run of this part alone can replace
    it."""
    rows = []
    for a in (result.proxied, result.direct):
        if a is None:
            continue
        others = ", ".join(f"{k}: {v}" for k, v in sorted(a.statuses.items()) if k != "200")
        rows.append(
            "| "
            + " | ".join(
                [
                    a.path,
                    f"{a.sent}",
                    f"{a.within_limit}",
                    _ms(a.percentile_ms(50)),
                    _ms(a.percentile_ms(99)),
                    _ms(a.max_ms),
                    others or "–",
                    f"{a.slow_held_at_end}/{a.slow}",
                    f"{a.slow_cut}",
                    "PASS" if a.passed else "FAIL",
                ]
            )
            + " |"
        )
    header = (
        f"| path | sent | 200 within {LIMIT_S:g} s | p50 ms | p99 ms | max ms | other answers "
        "| slow held at end | slow cut by server | result |"
    )
    p = result.proxied
    versions = ", ".join(f"{k} {v}" for k, v in result.versions.items())
    return f"""{SECTION_START}
## Slow clients (`bench/slow_clients.py`)

Measured {result.measured_at} ({versions}). The Dockerfile's gunicorn (4 sync workers,
`--timeout 30`) with the bench settings, behind nginx running the committed
`deploy/nginx/default.conf.template` (filled in as the nginx image does, inside the image's
`http` block: `worker_processes auto`, 1024 connections per worker), then the same run straight
against a fresh gunicorn. {p.slow} slow clients send a webhook's headers
(`Content-Length: {SLOW_BODY_BYTES:,}`), then one body byte every {BYTE_INTERVAL_S:g} s, and open a
new connection whenever the server answers or cuts one. After {2 * BYTE_INTERVAL_S + 0.5:g} s,
signed `inventory_levels/update` deliveries leave at {p.rate:g}/s for {p.seconds:g} s, each on a new
connection, open loop; a delivery not answered within {ANSWER_CAP_S:g} s counts as ∞. Target:
every delivery answered 200 within {LIMIT_S:g} s behind the proxy.

{header}
|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Straight to gunicorn the slow clients take every worker until gunicorn's 30 s timeout kills it,
and the next slow connection in the listen queue takes the new one; behind nginx each slow client
costs one nginx connection and gunicorn only ever sees complete requests.
{SECTION_END}
"""


def write_section(result: SlowClientsResult, output: Path) -> None:
    """Replace this part's section (and its Targets rows) in an existing report, or add it."""
    text = output.read_text() if output.exists() else "# Performance\n"
    new = section(result)
    if SECTION_START in text and SECTION_END in text:
        before, rest = text.split(SECTION_START, 1)
        after = rest.split(SECTION_END, 1)[1].lstrip("\n")
        text = before + new + ("\n" + after if after else "")
    else:
        marker = "\n## Findings"
        if marker in text:
            at = text.index(marker)
            text = text[:at] + "\n" + new + text[at:]
        else:
            text = text.rstrip("\n") + "\n\n" + new
    lines = [line for line in text.splitlines() if not line.startswith("| slow clients")]
    rows = [f"| {t} | {m} | {word} |" for t, m, word in result.verdict_words()]
    if "## Targets" in text:
        at = lines.index("## Targets")
        end = at + 1
        while end < len(lines) and not lines[end].startswith("|"):
            end += 1
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        lines[end:end] = rows
    output.write_text("\n".join(lines).rstrip() + "\n")


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.slow_clients`: this part alone; its section of the report rewritten."""
    parser = argparse.ArgumentParser(prog="python -m bench.slow_clients", description=__doc__)
    parser.add_argument("--slow", type=int, default=SLOW, help="slow connections")
    parser.add_argument("--rate", type=float, default=RATE, help="webhooks per second")
    parser.add_argument("--seconds", type=float, default=SECONDS, help="seconds of webhooks")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "PERFORMANCE.md")
    args = parser.parse_args(argv)
    RUN_DIR.mkdir(parents=True, exist_ok=True)

    from bench import env, servers

    servers.install_signal_handlers()
    env.setup_django()
    with Processes(RUN_DIR) as procs:
        result = run(procs, args.slow, args.rate, args.seconds)
    (RUN_DIR / "slow_clients.json").write_text(json.dumps(result.as_dict(), indent=2))
    write_section(result, args.output)
    print(f"report: {args.output}")
    return 0 if result.proxied.passed else 1


if __name__ == "__main__":
    sys.exit(main())
