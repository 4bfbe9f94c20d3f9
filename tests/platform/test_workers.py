"""The worker's scheduler process ends with its worker, and frees the lock for the next one.

Given the service's worker started as the Procfile starts it (`--with-scheduler`), when the
worker is killed with SIGKILL, then its scheduler child is gone within a few seconds and the
next worker's scheduler takes the lock.
"""

import os
import signal
from pathlib import Path

import pytest
from rq.scheduler import RQScheduler

from tests.support.worker_process import wait_for, worker_process

LOCK = RQScheduler.get_locking_key("default")
GONE_WITHIN = 5  # seconds: the scheduler checks its parent on each one-second beat


def _scheduler_pid(redis, name: bytes) -> int | None:
    pid = redis.hget(f"rq:scheduler:{name.decode()}", "pid")
    return int(pid) if pid else None


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for init to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.django_db
def test_the_scheduler_child_ends_soon_after_its_worker_is_killed(redis):
    child = None
    try:
        with worker_process("--with-scheduler") as worker:
            name = wait_for(lambda: redis.get(LOCK), timeout=60, what="the scheduler lock")
            child = wait_for(lambda: _scheduler_pid(redis, name), timeout=10, what="its pid")
            assert child != worker.pid

            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()

            wait_for(lambda: not _running(child), GONE_WITHIN, "the scheduler's end")
            assert redis.get(LOCK) is None, "the lock was released, not left to expire"

        with worker_process("--with-scheduler"):
            taken = wait_for(lambda: redis.get(LOCK), timeout=60, what="the next worker's lock")
            assert taken != name
    finally:
        if child is not None and _running(child):
            os.kill(child, signal.SIGTERM)  # the scheduler, had it outlived its worker
