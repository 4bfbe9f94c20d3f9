"""The summary printed at the end of `python -m bench` and the docs/PERFORMANCE.md it writes.

Why: one place turns the measurements into the tables the targets ask for (ratios, PASS/FAIL
against each target, the machine they ran on), so the console and the document never disagree.
"""

import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bench.intake import TARGET_P99_MS, IntakeResult
from bench.profiling import Breakdown
from bench.reaction import STEADY_P99_MS, TARGET_RATE, WORKERS, ReactionResult
from bench.slow_clients import SlowClientsResult
from bench.slow_clients import section as slow_clients_section

FINDINGS = Path(__file__).with_name("findings.md")


@dataclass
class Results:
    """Everything one `python -m bench` run measured; parts it skipped or lost stay None."""

    command: str
    started: datetime
    machine: dict[str, str] = field(default_factory=dict)
    intake: IntakeResult | None = None
    reaction: ReactionResult | None = None
    profiles: list[Breakdown] = field(default_factory=list)
    slow_clients: SlowClientsResult | None = None
    worker: dict | None = None
    reconcile: dict | None = None
    errors: dict[str, str] = field(default_factory=dict)
    finished: datetime | None = None
    load_at_end: str = ""

    def verdicts(self) -> list[tuple[str, str, str]]:
        """(target, measured, PASS/FAIL/info) for every target of the run's parts."""
        rows: list[tuple[str, str, str]] = []
        if self.intake:
            rows += [(t, m, _word(ok)) for t, m, ok in self.intake.verdicts()]
        if self.reaction:
            verdicts = self.reaction.verdicts()
            rows.append((*verdicts[0][:2], _word(verdicts[0][2])))
            rows.append((*verdicts[1][:2], "info"))
        if self.slow_clients:
            rows += self.slow_clients.verdict_words()
        if self.worker and "error" not in self.worker:
            rows.append(
                (
                    f"worker: inventory ≥ {self.worker['target']}× RQ no-op (SimpleWorker)",
                    f"{self.worker['ratio']:.2f}×",
                    _word(self.worker["passed"]),
                )
            )
        if self.reconcile and "error" not in self.reconcile:
            ratio = self.reconcile["ratio"]
            rows.append(
                (
                    f"reconcile: {self.reconcile['items']:,} items ≤ "
                    f"{self.reconcile['target']}× throttle floor",
                    f"{ratio:.3f}×" if ratio is not None else "n/a",
                    _word(self.reconcile["passed"]),
                )
            )
        for part, message in self.errors.items():
            rows.append((f"{part} (did not complete)", message.splitlines()[0][:80], "ERROR"))
        return rows


def _word(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _ms(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def summary_table(results: Results) -> str:
    return table(["target", "measured", "result"], [list(row) for row in results.verdicts()])


def intake_section(result: IntakeResult) -> str:
    rows = []
    for s in result.summaries:
        rows.append(
            [
                str(s.connections),
                s.target,
                f"{s.rate:,.0f}",
                f"{s.ratio:.2f}×",
                _ms(s.p50_ms),
                _ms(s.p99_ms),
                str(s.errors),
            ]
        )
    runs = [
        [
            str(r.round),
            str(r.connections),
            r.target,
            f"{r.rate:,.0f}",
            _ms(r.p50_ms),
            _ms(r.p99_ms),
            str(r.errors),
            "–" if r.stored < 0 else f"{r.stored:,}",
        ]
        for r in result.runs
    ]
    background = ", ".join(f"{b:.0%}" for b in result.background)
    targets = ", ".join(f"≤ {v:g} ms at {k}" for k, v in TARGET_P99_MS.items())
    return f"""## Intake

`wrk -t2 -c{{32,4}} -d{result.seconds:g}s --latency` against one gunicorn (the Dockerfile's
command: 4 sync workers, `elbkerzen.wsgi`, here with `DJANGO_SETTINGS_MODULE=bench.settings`,
DEBUG off, access log to /dev/null) on PostgreSQL and Redis DB 14. Targets on the same server:
`bare` (`bench/views.py`: 200, nothing else), `verify+enqueue` (the product's `shopify.verify`,
then the product's own `scheduling.enqueue_delivery` for a job number no row has, no database) and
`intake` (the product's `POST /webhooks/shopify/`).
The Lua script signs one `inventory_levels/update` body once and sends a new
`X-Shopify-Webhook-Id` with every
request, so every request stores a new row (no duplicate shortcut). {result.rounds} rounds, the
targets' order rotated each round; the tables are emptied and Redis flushed before each run.
Ratios are taken per round against that round's `bare`, then the median. Every answered
request's row (intake) or job (verify+enqueue) was counted afterwards (`stored`).
Targets: intake ≥ 0.3× bare, p99 {targets}. Background CPU (other work, measured idle before
each round): {background}.

{table(["conns", "target", "req/s", "× bare", "p50 ms", "p99 ms", "errors"], rows)}

<details><summary>every run</summary>

{table(["round", "conns", "target", "req/s", "p50 ms", "p99 ms", "errors", "stored"], runs)}

</details>
"""


def reaction_section(result: ReactionResult) -> str:
    rows = [
        [
            f"{s.rate:g}",
            f"{s.achieved_rate:.1f}",
            f"{s.measured:,}",
            _ms(s.p50_ms),
            _ms(s.p99_ms),
            _ms(s.max_ms),
            _ms(s.http_p99_ms),
            f"{s.missing}/{s.stale}/{s.http_errors}",
            f"{s.background_cpu:.0%}",
            "steady" if s.steady else "**not steady**",
        ]
        for s in result.steps
    ]
    best = result.highest_steady
    header = [
        "rate/s",
        "sent/s",
        "measured",
        "p50 ms",
        "p99 ms",
        "max ms",
        "HTTP p99 ms",
        "missing/stale/HTTP err",
        "bg CPU",
        "",
    ]
    return f"""## Reaction

gunicorn as above plus {WORKERS} workers as in the Procfile (`manage.py rqworker default
--with-scheduler --worker-class rq.worker.SimpleWorker`, `ADS_BACKEND=dryrun`). An asyncio driver
sends signed `inventory_levels/update` deliveries for 200 watched items at a fixed rate, open
loop (the n-th request leaves at start + n/rate on a new connection, whatever the answers do),
with `X-Shopify-Triggered-At` = the send time. Reaction = `AdGroupAction.requested_at` (set just
before the Ads backend call) − `Delivery.triggered_at`; for a delivery that needed no call (the
status Google Ads already has, or the one set with the last level of its batch) its
`processed_at` instead; read from PostgreSQL after the workers finished; a delivery never
processed counts as ∞. Each step runs {result.seconds:g} s; the first
{result.warmup:g} s are sent but not counted. Steps go up from {TARGET_RATE}/s until one is not
steady (p99 ≥ {STEADY_P99_MS:g} ms, a delivery missing, an HTTP error, or the driver behind), then
one step halfway back. Highest steady rate: **{f"{best:g}/s" if best else "none"}**.

{table(header, rows)}
"""


def profile_section(profiles: list[Breakdown]) -> str:
    parts = ["## Profiles\n"]
    for p in profiles:
        ops = [[label, f"{share:.1%}"] for label, share in p.operations if share >= 0.005]
        hot = [[f"`{frame}`", f"{share:.1%}"] for frame, share in p.hottest]
        parts.append(
            f"""### {p.title}

{p.samples:,} samples; {p.busy_share:.0%} of them busy. Share of busy wall time by operation
(a sample belongs to the nearest frame naming an operation):

{table(["operation", "share"], ops)}

<details><summary>hottest leaf frames</summary>

{table(["frame", "share"], hot)}

</details>
"""
        )
    return "\n".join(parts)


def worker_section(worker: dict) -> str:
    rows = [
        [
            str(r["number"]),
            r["first"],
            str(r["locations"]),
            f"{r['inventory_rate']:.1f}",
            f"{r['noop_rate']:.1f}",
            f"{r['ratio']:.2f}",
        ]
        for r in worker["rounds"]
    ]
    rows.append(
        [
            "median",
            "",
            "",
            f"{worker['inventory_rate']:.1f}",
            f"{worker['noop_rate']:.1f}",
            f"{worker['ratio']:.2f}",
        ]
    )
    return f"""## Worker (`bench/worker.py`)

One `SimpleWorker` drains {worker["deliveries"]} stored `inventory_levels/update` deliveries
(the real job: claim, stale guard, stock sum, the Ads status only on change (dry run), outcome;
a job takes up to `DELIVERY_BATCH_SIZE` waiting deliveries along, the others' jobs find theirs
taken) and as many RQ no-op jobs, back to back, in burst mode; jobs/s excludes the worker's
start-up. Target: inventory ≥ {worker["target"]}× no-op.

{table(["round", "first", "locations", "inventory/s", "no-op/s", "ratio"], rows)}
"""


def reconcile_section(rec: dict) -> str:
    ratio = f"{rec['ratio']:.3f}" if rec["ratio"] is not None else "n/a"
    rows = [
        ["items × locations", f"{rec['items']:,} × {rec['locations']}"],
        ["levels returned", f"{rec['levels']:,} (expected {rec['expected']:,})"],
        ["queries (throttled)", f"{rec['queries']} ({rec['throttled']})"],
        ["total actual cost", f"{rec['total_cost']:,} points"],
        ["throttle floor", f"{rec['floor']:.2f} s"],
        ["adapter waited", f"{rec['waited']:.2f} s"],
        ["elapsed", f"{rec['elapsed']:.2f} s"],
        ["elapsed ÷ floor", f"{ratio} (target ≤ {rec['target']})"],
    ]
    return f"""## Reconciliation (`bench/reconcile.py`)

`ShopifyAdmin.fetch_levels` over real HTTP against the local Shopify stand-in with a Standard-plan
bucket (1,000 points, 100/s). The floor is (total actual cost − bucket) ÷ restore rate.

{table(["", ""], rows)}
"""


def render(results: Results) -> str:
    """The whole docs/PERFORMANCE.md."""
    machine = table(["", ""], [[k, v] for k, v in results.machine.items()])
    finished = results.finished or datetime.now().astimezone()
    parts = [
        f"""# Performance

Measured {results.started:%Y-%m-%d %H:%M %Z} – {finished:%H:%M %Z} by `{results.command}`
(`make bench`, `ARGS=...` passes options; `python -m bench --help`). Written by the bench; edit
`bench/report.py` or `bench/findings.md`, not this file. These machines are shared and noisy:
compare the ratios, which come from runs interleaved in the same minute, not the absolute numbers.

## Machine

{machine}
| load average at end | {results.load_at_end} |

## Targets

{summary_table(results)}
"""
    ]
    if results.intake:
        parts.append(intake_section(results.intake))
    if results.reaction:
        parts.append(reaction_section(results.reaction))
    if results.slow_clients:
        parts.append(slow_clients_section(results.slow_clients))
    if results.worker and "error" not in results.worker:
        parts.append(worker_section(results.worker))
    if results.reconcile and "error" not in results.reconcile:
        parts.append(reconcile_section(results.reconcile))
    if results.profiles:
        parts.append(profile_section(results.profiles))
    if FINDINGS.exists():
        parts.append(FINDINGS.read_text())
    return "\n".join(parts).rstrip() + "\n"


def console_summary(results: Results) -> str:
    """The verdict lines printed at the end of the run."""
    width = max((len(t) for t, _, _ in results.verdicts()), default=10)
    return "\n".join(f"{w:<5} {t:<{width}}  {m}" for t, m, w in results.verdicts())
