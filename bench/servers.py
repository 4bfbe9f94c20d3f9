"""Start gunicorn and RQ workers as the product runs them, and always stop them again.

Why: every number is only comparable when it comes from the Dockerfile's server setup (four sync
workers) and the Procfile's worker (SimpleWorker with the scheduler); and a bench that leaves
servers behind skews the next measurement on a shared, noisy machine.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from bench.env import ROOT, child_env

GUNICORN_WORKERS = 4


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Processes:
    """Children started by the bench, each in its own process group, stopped on every exit."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.children: list[subprocess.Popen] = []

    def __enter__(self) -> "Processes":
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_all()

    def start(self, name: str, argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
        """Run `argv` with its output in `<log_dir>/<name>.log`."""
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 (closed with the child)
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self.children.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen, grace: float = 15.0) -> None:
        """SIGTERM the child's own process group, SIGKILL it after `grace` seconds."""
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        with contextlib.suppress(ProcessLookupError):  # leftovers of the group (gunicorn workers)
            os.killpg(proc.pid, signal.SIGKILL)
        if proc in self.children:
            self.children.remove(proc)

    def stop_all(self) -> None:
        """Stop every child still running, newest first."""
        for proc in reversed(list(self.children)):
            self.stop(proc)


def children_of(pid: int) -> list[int]:
    """Direct children of a process (gunicorn's workers), from /proc."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def start_gunicorn(procs: Processes, root: Path = ROOT, name: str = "gunicorn") -> "Server":
    """The Dockerfile's command on a free local port, with the bench settings; waits until up."""
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "elbkerzen.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(GUNICORN_WORKERS),
        "--access-logfile",
        "/dev/null",  # the Dockerfile logs each request to stdout: keep the cost, not the file
        "--timeout",
        "30",
    ]
    proc = procs.start(name, argv, root, child_env(root))
    server = Server(proc, port)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}; see {name}.log")
        if len(children_of(proc.pid)) >= GUNICORN_WORKERS and server.answers("/bench/bare/"):
            return server
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not come up within 60 s; see {name}.log")


class Server:
    """A running gunicorn: its master process and port."""

    def __init__(self, proc: subprocess.Popen, port: int) -> None:
        self.proc = proc
        self.port = port

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def answers(self, path: str) -> bool:
        """True when GET `path` answers 200."""
        try:
            with urllib.request.urlopen(self.url(path), timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def worker_pids(self) -> list[int]:
        return children_of(self.proc.pid)


def start_rq_workers(procs: Processes, count: int, root: Path = ROOT) -> list[subprocess.Popen]:
    """The Procfile's worker command, `count` times; waits until all registered in Redis."""
    from rq import Worker

    from bench.env import redis

    argv = [
        sys.executable,
        "manage.py",
        "rqworker",
        "default",
        "--with-scheduler",
        "--worker-class",
        "rq.worker.SimpleWorker",
    ]
    workers = [procs.start(f"rqworker-{n}", argv, root, child_env(root)) for n in range(count)]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(proc.poll() is not None for proc in workers):
            raise RuntimeError("an RQ worker exited at start; see rqworker-*.log")
        if Worker.count(connection=redis()) >= count:
            return workers
        time.sleep(0.2)
    raise RuntimeError("RQ workers did not register within 60 s; see rqworker-*.log")


def install_signal_handlers() -> None:
    """SIGTERM/SIGHUP end the bench like Ctrl-C does, so every `finally` stops the children."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
