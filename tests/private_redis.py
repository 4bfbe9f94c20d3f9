"""A throwaway redis-server on its own port that a test can kill and start again empty."""

import shutil
import socket
import subprocess
import time

import pytest
from redis import Redis

needs_redis_server = pytest.mark.skipif(
    not shutil.which("redis-server"), reason="needs redis-server"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """No persistence (`--save ""`, no AOF): a restart comes back empty, as after data loss."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        # DB 1, not 0: the shared fixtures refuse to flush a DB 0 (tests/conftest.py).
        return f"redis://127.0.0.1:{self.port}/1"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
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
                time.sleep(0.05)
        raise RuntimeError("private redis-server did not start")

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
