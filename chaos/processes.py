"""Child processes of a run: a private Redis, gunicorn, RQ workers, rqcron, and a supervisor.

Every child runs in a process group of its own, so stopping it also stops what it forked (RQ's
scheduler process); nothing is ever stopped by name. The supervisor restarts a child that
exits, as systemd or Docker would in production, and counts every restart for the report.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql
from redis import Redis

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
STOP_GRACE = 5.0


@dataclass
class Child:
    """One supervised command and its current process."""

    name: str
    argv: list[str]
    log: Path
    restart: bool
    process: subprocess.Popen | None = None
    starts: int = 0
    exits: list[int] = field(default_factory=list)
    next_start: float = 0.0


class Supervisor:
    """Starts children, restarts the ones that exit, stops them all at the end."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.children: dict[str, Child] = {}
        self.restarts: Counter[str] = Counter()
        self._lock = threading.RLock()
        self._stopping = False
        self._thread = threading.Thread(target=self._watch, name="supervisor", daemon=True)

    def start(self, name: str, argv: list[str], *, restart: bool = True) -> Child:
        """Start `argv` as `name` (output to a log file) and keep it running if `restart`."""
        with self._lock:
            child = Child(name, argv, self.log_dir / f"{name}.log", restart)
            self.children[name] = child
            self._spawn(child)
        if not self._thread.is_alive():
            self._thread.start()
        return child

    def _spawn(self, child: Child) -> None:
        with child.log.open("ab") as log:
            child.process = subprocess.Popen(
                child.argv,
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        child.starts += 1

    def _watch(self) -> None:
        while not self._stopping:
            time.sleep(0.2)
            with self._lock:
                for child in self.children.values():
                    process = child.process
                    if self._stopping or process is None or process.poll() is None:
                        continue
                    if not child.restart:
                        continue
                    if child.next_start == 0.0:
                        child.exits.append(process.returncode)
                        backoff = min(0.5 * 2 ** min(len(child.exits) - 1, 3), 4.0)
                        child.next_start = time.monotonic() + backoff
                        logger.info("%s exited with %s", child.name, process.returncode)
                    elif time.monotonic() >= child.next_start:
                        child.next_start = 0.0
                        self.restarts[child.name.rstrip("0123456789")] += 1
                        self._spawn(child)

    def pid(self, name: str) -> int | None:
        with self._lock:
            process = self.children[name].process
            return process.pid if process and process.poll() is None else None

    def names_of_pid(self, pid: int) -> str | None:
        with self._lock:
            for child in self.children.values():
                if child.process is not None and child.process.pid == pid:
                    return child.name
        return None

    def stop(self, name: str) -> None:
        """Stop one child and its process group, gently then firmly; it is not restarted."""
        with self._lock:
            child = self.children[name]
            child.restart = False
            process = child.process
        if process is not None:
            _stop_group(process)

    def stop_all(self) -> None:
        self._stopping = True
        with self._lock:
            children = list(self.children.values())
        for child in children:
            child.restart = False
            if child.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.process.pid, signal.SIGTERM)
        for child in children:
            if child.process is not None:
                _stop_group(child.process)


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM the group the child leads, SIGKILL it after a grace period."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(STOP_GRACE)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # leftovers such as an orphaned scheduler
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(STOP_GRACE)


class PrivateRedis:
    """A redis-server of our own, with an append-only file so a restart keeps the queue."""

    def __init__(self, port: int, data_dir: Path) -> None:
        self.port = port
        self.data_dir = data_dir
        self.process: subprocess.Popen | None = None
        self.log = data_dir / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    "redis-server",
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    str(self.data_dir),
                    "--save",
                    "",
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "everysec",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        client = Redis(port=self.port, socket_connect_timeout=0.2)
        for _ in range(200):
            with contextlib.suppress(Exception):
                if client.ping():
                    return
            time.sleep(0.05)
        raise RuntimeError(f"private redis-server did not answer on port {self.port}")

    def stop(self) -> None:
        """SIGTERM: Redis writes its append-only file and exits, like a planned restart."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


class ChaosDatabase:
    """A PostgreSQL database of the run's own on the local server, dropped at the end."""

    def __init__(self, name: str, host: str = "127.0.0.1", port: int = 5432) -> None:
        self.name = name
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        return f"postgres://postgres@{self.host}:{self.port}/{quote(self.name)}"

    def _admin(self) -> psycopg.Connection:
        return psycopg.connect(
            host=self.host, port=self.port, user="postgres", dbname="postgres", autocommit=True
        )

    def create(self) -> None:
        with self._admin() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name))
            )
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))

    def drop(self) -> None:
        with self._admin() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name))
            )


def postgres_available(host: str = "127.0.0.1", port: int = 5432) -> bool:
    """Whether the local server takes our connections."""
    try:
        with psycopg.connect(
            host=host, port=port, user="postgres", dbname="postgres", connect_timeout=2
        ):
            return True
    except psycopg.Error:
        return False
