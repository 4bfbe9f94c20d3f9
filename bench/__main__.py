"""`python -m bench` (`make bench`): every benchmark in one run, summary, docs/PERFORMANCE.md.

Why one command: the numbers only mean something side by side, measured on the same
machine in the same hour with the same versions; the report says which machine that was.
"""

import argparse
import json
import os
import shlex
import shutil
import sys
import traceback
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.env import ROOT, RUN_DIR

OUTPUT = ROOT / "docs" / "PERFORMANCE.md"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (a smoke test)")
    for part in ("intake", "reaction", "profile", "slow", "worker", "reconcile"):
        parser.add_argument(f"--skip-{part}", action="store_true", help=f"leave out {part}")
    parser.add_argument("--rounds", type=int, help="intake rounds (default 5, quick 1)")
    parser.add_argument("--seconds", type=float, help="seconds per wrk run (default 10, quick 3)")
    parser.add_argument(
        "--step-seconds", type=float, help="seconds per reaction rate step (default 20, quick 6)"
    )
    parser.add_argument("--rate-step", type=float, default=20, help="reaction step, per second")
    parser.add_argument(
        "--slow-seconds", type=float, help="slow-client webhooks, seconds (default 30, quick 10)"
    )
    parser.add_argument("--items", type=int, help="reconcile items (default 2000, quick 300)")
    parser.add_argument(
        "--deliveries", type=int, help="worker jobs per workload and round (default 500)"
    )
    parser.add_argument(
        "--candidate",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="another checkout (a product experiment) whose intake joins the intake rounds",
    )
    parser.add_argument("--output", type=Path, default=OUTPUT, help="report path")
    parser.add_argument("--wait-quiet", type=float, default=60, help="max seconds to wait")
    args = parser.parse_args(argv)
    quick = args.quick
    args.rounds = args.rounds or (1 if quick else 5)
    args.seconds = args.seconds or (3 if quick else 10)
    args.step_seconds = args.step_seconds or (6 if quick else 20)
    args.warmup = 1 if quick else 3
    args.items = args.items or (300 if quick else 2000)
    args.slow_seconds = args.slow_seconds or (10 if quick else 30)
    args.deliveries = args.deliveries or (200 if quick else 500)
    args.worker_rounds = 1 if quick else 5
    args.profile_seconds = 5 if quick else 10
    args.candidates = {}
    for n, spec in enumerate(args.candidate, start=1):
        name, _, path = spec.rpartition("=")
        args.candidates[name or f"candidate-{n}"] = Path(path).resolve()
    return args


def attempt(results: Any, part: str, step: Callable[[], Any]) -> Any:
    """Run one part; a failure is recorded for the report and the other parts still run."""
    print(f"\n== {part} ==", flush=True)
    try:
        return step()
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # SystemExit from a part's own checks included
        traceback.print_exc()
        results.errors[part] = f"{type(err).__name__}: {err}"
        return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    shutil.rmtree(RUN_DIR, ignore_errors=True)
    RUN_DIR.mkdir(parents=True)

    from bench import (
        collect,
        env,
        intake,
        machine,
        profiling,
        reaction,
        report,
        servers,
        slow_clients,
    )

    servers.install_signal_handlers()
    env.setup_django()
    command = "python -m bench" + (" " + shlex.join(argv if argv is not None else sys.argv[1:]))
    results = report.Results(command=command.strip(), started=datetime.now().astimezone())
    print(f"logs and raw data: {RUN_DIR}", flush=True)
    machine.wait_for_quiet(args.wait_quiet)
    results.machine = machine.describe()
    for key, value in results.machine.items():
        print(f"{key}: {value}")

    try:
        with servers.Processes(RUN_DIR) as procs:
            if not args.skip_intake:
                results.intake = attempt(
                    results,
                    "intake",
                    lambda: intake.run(procs, args.rounds, args.seconds, args.candidates),
                )
                procs.stop_all()  # a part that failed half-way leaves nothing running
            if not args.skip_profile:
                found = attempt(
                    results,
                    "profile intake",
                    lambda: profiling.profile_intake(procs, args.profile_seconds),
                )
                results.profiles += [found] if found else []
            if not args.skip_reaction:

                def reaction_run() -> reaction.ReactionResult:
                    found, server, workers = reaction.run(
                        procs, args.step_seconds, args.warmup, step=args.rate_step
                    )
                    for proc in [*workers, server.proc]:
                        procs.stop(proc)
                    return found

                results.reaction = attempt(results, "reaction", reaction_run)
                procs.stop_all()
            if not args.skip_profile:
                found = attempt(
                    results,
                    "profile worker",
                    lambda: profiling.profile_worker(procs, args.profile_seconds),
                )
                results.profiles += [found] if found else []
            if not args.skip_slow:
                results.slow_clients = attempt(
                    results,
                    "slow clients",
                    lambda: slow_clients.run(procs, seconds=args.slow_seconds),
                )
                procs.stop_all()
        env.reset_tables()
        env.flush_redis()
        if not args.skip_worker:
            worker_args = ["--deliveries", str(args.deliveries)]
            worker_args += ["--rounds", str(args.worker_rounds)]
            results.worker = attempt(
                results, "worker", lambda: collect.run_child("worker", worker_args, 3600)
            )
            if results.worker and "error" in results.worker:
                results.errors["worker"] = results.worker["error"]
            env.reset_tables()  # the worker bench leaves its last round's rows and keys
            env.flush_redis()
        if not args.skip_reconcile:
            results.reconcile = attempt(
                results,
                "reconcile",
                lambda: collect.run_child("reconcile", ["--items", str(args.items)], 3600),
            )
            if results.reconcile and "error" in results.reconcile:
                results.errors["reconcile"] = results.reconcile["error"]
    finally:
        results.finished = datetime.now().astimezone()
        results.load_at_end = ", ".join(f"{v:.2f}" for v in os.getloadavg())
        write(results, args.output)
    print("\n== summary ==")
    print(report.console_summary(results))
    print(f"report: {args.output}")
    return 1 if results.errors else 0


def write(results: Any, output: Path) -> None:
    """The Markdown report and, next to the logs, every raw number as JSON."""
    from bench import report

    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report.render(results))
    raw = {
        "command": results.command,
        "machine": results.machine,
        "intake": results.intake.as_dict() if results.intake else None,
        "reaction": results.reaction.as_dict() if results.reaction else None,
        "profiles": [p.as_dict() for p in results.profiles],
        "slow_clients": results.slow_clients.as_dict() if results.slow_clients else None,
        "worker": results.worker,
        "reconcile": results.reconcile,
        "errors": results.errors,
    }
    (RUN_DIR / "results.json").write_text(json.dumps(raw, indent=2, default=str))


if __name__ == "__main__":
    sys.exit(main())
