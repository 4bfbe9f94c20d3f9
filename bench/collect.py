"""The standalone benches (worker, reconcile), run as they are and collected for the report.

Why: each keeps its own entry point and output (`python bench/worker.py`, `bench/reconcile.py`);
running them in child processes keeps their Django setup and clean-ups away from this process,
and their table still scrolls by while `python -m bench` collects the numbers.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.env import ROOT, RUN_DIR, child_env

BENCHES = ("worker", "reconcile")


def run_child(name: str, argv: list[str], timeout: float) -> dict:
    """Run `bench.<name>.collect(argv)` in a child; echo its output; return its numbers."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = Path(handle.name)
    command = [sys.executable, "-m", "bench.collect", name, str(out), *argv]
    env = child_env(settings_module="elbkerzen.settings")
    log = (RUN_DIR / f"{name}.log").open("w")
    try:
        with subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        ) as proc:
            assert proc.stdout is not None
            try:
                for line in proc.stdout:
                    print(f"  | {line}", end="", flush=True)
                    log.write(line)
                proc.wait(timeout)
            except BaseException:
                proc.kill()
                raise
        if proc.returncode != 0 or not out.stat().st_size:
            return {"error": f"exit {proc.returncode}; see {RUN_DIR / (name + '.log')}"}
        return json.loads(out.read_text())
    finally:
        log.close()
        out.unlink(missing_ok=True)


def child_main(argv: list[str]) -> None:
    """`python -m bench.collect NAME OUT [ARGS...]`: run one bench, write its numbers to OUT."""
    name, out, rest = argv[0], Path(argv[1]), argv[2:]
    if name not in BENCHES:
        sys.exit(f"unknown bench {name!r}")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if name == "worker":
        from bench.worker import collect
    else:
        from bench.reconcile import collect
    out.write_text(json.dumps(collect(rest)))


if __name__ == "__main__":
    child_main(sys.argv[1:])
