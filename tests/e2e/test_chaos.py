"""The short chaos day, end to end: `python -m chaos --short --seed 1` must match the truth.

It starts its own PostgreSQL database, Redis, gunicorn, RQ workers and rqcron, so it runs as a
subprocess (it never touches the test database or Redis DB 15) and is skipped where the local
PostgreSQL server or the `redis-server` binary is missing.
"""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from chaos.processes import postgres_available

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300  # seconds; the short day takes about 100 (RQ notices a killed worker after 66)

pytestmark = [
    pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server"),
    pytest.mark.skipif(not postgres_available(), reason="needs PostgreSQL on 127.0.0.1:5432"),
]


def test_the_short_chaos_day_matches_the_truth():
    env = {**os.environ, "SECRET_KEY": os.environ.get("SECRET_KEY") or "tests-only-not-secret"}
    process = subprocess.Popen(
        [sys.executable, "-m", "chaos", "--short", "--seed", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)  # the run then stops everything it started
        output, _ = process.communicate(timeout=60)
        pytest.fail(f"the short chaos day took over {TIMEOUT} s:\n{output[-6000:]}")

    assert "Result: PASS" in output, output[-6000:]
    assert process.returncode == 0, output[-6000:]
