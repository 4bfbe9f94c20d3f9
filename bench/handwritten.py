"""Each hand-written hot-path statement against its ORM form: does it still pay?

Why: a written-out statement is kept only where correctness needs it or a measurement shows
it pays. Timings move with the machine's load, instruction counts do not, so each case
runs its hand-written form (`written`) and its ORM form (`orm`) in one process under valgrind's
callgrind, counting between markers: the client's instructions (this process) and, with
`--server-callgrind`, the PostgreSQL backend's (a server run under callgrind, as for
bench/per_job.py). Without `--instructions` it times alternating blocks instead: this
process's CPU time and, for a local server, the backend's (`/proc/<pid>/schedstat`).

Cases (each operation as the job or the intake runs it):
- `claim`: inbox.claim() (UPDATE … RETURNING, the row turned into a Delivery by rows.load)
  against the same statement through `Delivery.objects.raw()`;
- `finish`: outcomes.finish() against `Delivery.objects.filter(pk=…).update(…)`;
- `insert_action`: rows.insert(AdGroupAction) against `AdGroupAction.objects.create()`;
- `insert_delivery`: rows.insert(Delivery) as the intake calls it, against `objects.create()`;
- `execute`: the outcome's UPDATE through rows.execute() (psycopg's cursor, prepared) against
  Django's cursor (client-side binding, never prepared).

The stale guard's upsert (stock.levels) has no ORM form: the ORM has no conditional upsert,
and it returns only whether it wrote; the watched products are locked through the ORM
(stock.apply.lock_products). Neither has a case.

Run from the project root: `python bench/handwritten.py [--instructions] [--iterations N]`.
It uses bench/worker.py's database and Redis DB (or DATABASE_URL), and empties the tables.
"""

import argparse
import functools
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
WARM_UP = 20  # iterations before counting: psycopg prepares a statement on its 5th run
VARIANTS = ("written", "orm")
NOTE = "total available 3"


@dataclass(frozen=True)
class Case:
    """One statement: a setup making `n` rows to work on, and one operation per variant."""

    name: str
    setup: Callable[[int], Any]
    written: Callable[[Any, int], Any]
    orm: Callable[[Any, int], Any]


# --- the cases ---------------------------------------------------------------------------------


def _deliveries(n: int, status: str) -> list[Any]:
    from automation.models import Delivery
    from bench.worker import level_bodies

    now = datetime.now(UTC)
    rows = [
        Delivery(
            source="shopify",
            shop_domain="elbkerzen.myshopify.com",
            topic="inventory_levels/update",
            webhook_id=str(uuid.uuid4()),
            triggered_at=now,
            api_version="2025-10",
            body=body,
            status=status,
        )
        for body in level_bodies(n, 3, seed=7)
    ]
    return list(Delivery.objects.bulk_create(rows))


def _claim_written(rows: list[Any], i: int) -> Any:
    from automation.intake import inbox

    return inbox.claim(rows[i].pk)


def _claim_orm(rows: list[Any], i: int) -> Any:
    from django.db import connection
    from django.utils import timezone

    from automation.intake import inbox
    from automation.models import Delivery

    Status = Delivery.Status
    params = [
        Status.PROCESSING,
        connection.ops.adapt_datetimefield_value(timezone.now()),
        rows[i].pk,
        Status.RECEIVED,
        Status.FAILED,
    ]
    return next(iter(Delivery.objects.raw(inbox._claim_sql(), params)), None)


def _finish_written(rows: list[Any], i: int) -> Any:
    from automation.intake import outcomes
    from automation.intake.handling import Outcome

    return outcomes.finish(rows[i], Outcome("done", NOTE))


def _finish_orm(rows: list[Any], i: int) -> Any:
    from django.utils import timezone

    from automation.intake import outcomes
    from automation.models import Delivery

    return Delivery.objects.filter(pk=rows[i].pk).update(
        status="done", result=outcomes.storable(NOTE), last_error="", processed_at=timezone.now()
    )


def _action_fields(delivery: Any) -> dict[str, Any]:
    from django.utils import timezone

    return {
        "customer_id": "1234567890",
        "ad_group_id": "555",
        "desired_status": "PAUSED",
        "reason": "Winterzauber: 0 available ≤ 0",
        "source": "webhook",
        "delivery": delivery,
        "requested_at": timezone.now(),
        "result": "dry_run",
        "applied_at": timezone.now(),
    }


def _insert_action_written(rows: list[Any], i: int) -> Any:
    from automation.models import AdGroupAction
    from automation.platform import rows as hot_rows

    return hot_rows.insert(AdGroupAction, **_action_fields(rows[i]))


def _insert_action_orm(rows: list[Any], i: int) -> Any:
    from automation.models import AdGroupAction

    return AdGroupAction.objects.create(**_action_fields(rows[i])).pk


def _delivery_values(i: int) -> dict[str, Any]:
    from django.utils import timezone

    return {
        "source": "shopify",
        "shop_domain": "elbkerzen.myshopify.com",
        "topic": "inventory_levels/update",
        "webhook_id": str(uuid.uuid4()),
        "event_id": str(uuid.uuid4()),
        "triggered_at": timezone.now(),
        "api_version": "2025-10",
        "body": b'{"inventory_item_id":808950810,"location_id":24826418,"available":3}',
        "status": "received",
        "last_error": "",
        "processed_at": None,
    }


def _insert_delivery_written(state: None, i: int) -> Any:
    from automation.models import Delivery
    from automation.platform import rows

    return rows.insert(Delivery, **_delivery_values(i))


def _insert_delivery_orm(state: None, i: int) -> Any:
    from automation.models import Delivery

    return Delivery.objects.create(**_delivery_values(i)).pk


def _execute_params(rows: list[Any], i: int) -> list[Any]:
    from django.utils import timezone

    from automation.intake import outcomes
    from automation.intake.handling import Outcome

    return outcomes._finish_params(rows[i], Outcome("done", NOTE), timezone.now())


def _execute_written(rows: list[Any], i: int) -> Any:
    from automation.intake import outcomes
    from automation.platform import rows as hot_rows

    return hot_rows.execute(outcomes._finish_sql(), _execute_params(rows, i))


def _execute_orm(rows: list[Any], i: int) -> Any:
    from django.db import connection

    from automation.intake import outcomes

    with connection.cursor() as cursor:
        cursor.execute(outcomes._finish_sql(), _execute_params(rows, i))


CASES = [
    Case("claim", lambda n: _deliveries(n, "received"), _claim_written, _claim_orm),
    Case("finish", lambda n: _deliveries(n, "processing"), _finish_written, _finish_orm),
    Case(
        "insert_action",
        lambda n: _deliveries(n, "done"),
        _insert_action_written,
        _insert_action_orm,
    ),
    Case("insert_delivery", lambda n: None, _insert_delivery_written, _insert_delivery_orm),
    Case("execute", lambda n: _deliveries(n, "processing"), _execute_written, _execute_orm),
]


# --- running -----------------------------------------------------------------------------------


def setup() -> None:
    """bench/worker.py's environment and database, Django set up, the tables emptied."""
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    from bench import worker

    for key, value in worker.ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    import django

    django.setup()
    worker.quiet_console_logs()


def reset() -> None:
    from automation.models import AdGroupAction, Delivery

    for model in (AdGroupAction, Delivery):
        model.objects.all().delete()


def run_block(case: Case, variant: str, state: Any, start: int, count: int) -> None:
    operation = getattr(case, variant)
    for i in range(start, start + count):
        operation(state, i)


def counted(run: Callable[[], None]) -> None:
    """Between bench/per_job.py's client and server callgrind markers."""
    from bench.per_job import counted_block

    counted_block(run)


def child(names: list[str], iterations: int) -> None:
    """Under valgrind: per case and variant, a warm-up and a counted block; then an empty one.

    Dumps come in the order of `plan()`; prints the backend's pid last.
    """
    from django.db import connection

    setup()
    for name, variant in plan(names):
        if name == "(empty)":
            counted(lambda: None)
            continue
        case = next(c for c in CASES if c.name == name)
        reset()
        state = case.setup(WARM_UP + iterations)
        run_block(case, variant, state, 0, WARM_UP)
        counted(functools.partial(run_block, case, variant, state, WARM_UP, iterations))
    print(f"backend_pid={connection.connection.info.backend_pid}", flush=True)


def plan(names: list[str]) -> list[tuple[str, str]]:
    return [(name, variant) for name in names for variant in VARIANTS] + [("(empty)", "")]


def instructions(names: list[str], iterations: int, server_dir: Path | None) -> dict:
    """{(case, variant): {"client": per op, "server": per op}} from one valgrind run."""
    from bench.per_job import callgrind_dumps

    steps = plan(names)
    child = [str(HERE), "--child", ",".join(names), "--iterations", str(iterations)]
    client, server = callgrind_dumps(child, len(steps), server_dir)
    results = {}
    for index, step in enumerate(steps[:-1]):
        figures = {"client": (client[index] - client[-1]) / iterations}
        if server:
            figures["server"] = (server[index] - server[-1]) / iterations
        results[step] = figures
    return results


def backend_cpu_ns() -> int | None:
    """The backend's CPU time so far, when PostgreSQL runs on this machine."""
    from django.db import connection

    connection.ensure_connection()
    path = Path(f"/proc/{connection.connection.info.backend_pid}/schedstat")
    return int(path.read_text().split()[0]) if path.exists() else None


def timings(names: list[str], iterations: int, blocks: int) -> dict:
    """{(case, variant): {"client": µs per op, "server": µs per op}}: medians of alternating
    blocks (written, orm, orm, written, …), each on fresh rows after a warm-up."""
    setup()
    results = {}
    for name in names:
        case = next(c for c in CASES if c.name == name)
        samples: dict[str, list[tuple[float, float | None]]] = {v: [] for v in VARIANTS}
        for block in range(blocks):
            order = VARIANTS if block % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                reset()
                state = case.setup(WARM_UP + iterations)
                run_block(case, variant, state, 0, WARM_UP)
                server_before, before = backend_cpu_ns(), time.process_time()
                run_block(case, variant, state, WARM_UP, iterations)
                client = (time.process_time() - before) / iterations * 1e6
                server_after = backend_cpu_ns()
                server = (
                    (server_after - server_before) / iterations / 1e3
                    if server_before is not None
                    else None
                )
                samples[variant].append((client, server))
        for variant in VARIANTS:
            client = statistics.median(c for c, _ in samples[variant])
            servers = [s for _, s in samples[variant] if s is not None]
            results[(name, variant)] = {
                "client": client,
                "server": statistics.median(servers) if servers else None,
            }
    return results


def report(results: dict, unit: str) -> None:
    print(f"{'case':<17}{'side':<8}{'written':>12}{'orm':>12}{'orm ÷ written':>15}")
    names = list(dict.fromkeys(name for name, _ in results))
    for name in names:
        for side in ("client", "server", "total"):
            values = []
            for variant in VARIANTS:
                figures = results[(name, variant)]
                if side == "total":
                    parts = [figures.get("client"), figures.get("server")]
                    values.append(None if None in parts else sum(parts))
                else:
                    values.append(figures.get(side))
            if None in values:
                continue
            written, orm = values
            print(f"{name:<17}{side:<8}{written:>12,.0f}{orm:>12,.0f}{orm / written:>15.2f}")
    print(f"({unit} per operation)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(c.name for c in CASES))
    parser.add_argument("--iterations", type=int, default=200, help="operations per block")
    parser.add_argument("--blocks", type=int, default=6, help="timed blocks per variant")
    parser.add_argument("--instructions", action="store_true", help="callgrind counts")
    parser.add_argument("--server-callgrind", type=Path, help="see bench/per_job.py")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        child(args.child.split(","), args.iterations)
        return
    names = args.cases.split(",")
    unknown = set(names) - {c.name for c in CASES}
    if unknown:
        sys.exit(f"unknown cases: {', '.join(sorted(unknown))}")
    if args.instructions:
        sys.path.insert(0, str(ROOT))
        report(instructions(names, args.iterations, args.server_callgrind), "instructions")
    else:
        report(timings(names, args.iterations, args.blocks), "µs CPU")


if __name__ == "__main__":
    main()
