"""A real `manage.py rqworker` in a subprocess, as the Procfile runs it, and jobs to give it."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from rq import get_current_job

ROOT = Path(__file__).resolve().parents[2]
WORKER_COMMAND = (
    "manage.py",
    "rqworker",
    "default",
    "--worker-class",
    "automation.platform.workers.Worker",
)


@contextlib.contextmanager
def worker_process(*extra: str) -> Iterator[subprocess.Popen]:
    """Start the service's worker with this test's settings; stop it (by pid) at the end."""
    # WORKER_LOG=/path keeps the worker's log lines for debugging a test.
    with open(os.environ.get("WORKER_LOG", os.devnull), "a") as log:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and manage.py)
            [sys.executable, *WORKER_COMMAND, *extra],
            cwd=ROOT,
            env=os.environ.copy(),
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_for(condition, timeout: float, what: str):
    """Poll `condition` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"{what} not within {timeout} s")


def hold_until_gone(key: str, done_key: str) -> str:
    """A job that keeps its worker busy until `key` exists and is deleted again, then marks
    `done_key`."""
    connection = get_current_job().connection
    while not connection.exists(key):
        time.sleep(0.005)
    while connection.exists(key):
        time.sleep(0.005)
    connection.set(done_key, "1")
    return "released"


def nothing() -> None:
    """A job that does nothing."""
