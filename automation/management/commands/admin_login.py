"""Print the local admin login again once `make run`'s processes have started.

demo_setup prints it before honcho starts web, worker and cron, whose start-up output then
scrolls it away; the Procfile's `login` process waits until the web answers and a worker has
registered, prints var/admin-login.txt, and stays (honcho stops everything when one process ends).
"""

import signal
import sys
import time
import urllib.error
import urllib.request

from django.core.management.base import BaseCommand, CommandError
from redis.exceptions import RedisError
from rq import Worker

from automation.management.commands.demo_setup import ADMIN_URL, LOGIN_FILE, var_file
from automation.platform.queues import redis_client

POLL_SECONDS = 0.25


def web_answers(url: str) -> bool:
    """Any HTTP answer counts: the server is up, whatever the page says."""
    try:
        with urllib.request.urlopen(url, timeout=1):  # noqa: S310 (a local URL we configured)
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def worker_registered() -> bool:
    try:
        return bool(Worker.all(connection=redis_client()))
    except RedisError:
        return False


class Command(BaseCommand):
    help = (
        "Print the admin login (var/admin-login.txt, written by demo_setup) once the web "
        "answers and an RQ worker has registered, or after --timeout seconds."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", default=ADMIN_URL, help="the web process's admin page")
        parser.add_argument(
            "--timeout", type=float, default=60.0, help="print anyway after this many seconds"
        )
        parser.add_argument(
            "--stay", action="store_true", help="keep running after printing, until stopped"
        )

    def handle(self, *args, **options) -> None:
        path = var_file(LOGIN_FILE)
        deadline = time.monotonic() + options["timeout"]
        try:
            while time.monotonic() < deadline and not (
                web_answers(options["url"]) and worker_registered()
            ):
                time.sleep(POLL_SECONDS)
            if not path.exists():
                raise CommandError(f"no {path}: run `manage.py demo_setup` first")
            self.stdout.write(self.style.SUCCESS(path.read_text().strip()))
            self.stdout.flush()
            if options["stay"]:
                signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
                while True:
                    signal.pause()
        except KeyboardInterrupt:
            return  # Ctrl-C reaches every process of `make run`: no traceback for it
