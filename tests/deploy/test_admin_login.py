"""`make run`'s admin login: written to var/admin-login.txt for the owner only, and printed again
by the Procfile's `login` process once the web answers and a worker has registered."""

import http.server
import io
import socket
import stat
import threading
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rq import SimpleWorker

from automation.management.commands.demo_setup import ADMIN_URL, LOGIN_FILE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(settings, tmp_path) -> Path:
    """A checkout of its own, so the test never rewrites this one's var/."""
    settings.BASE_DIR = tmp_path
    return tmp_path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def demo_setup() -> str:
    out = io.StringIO()
    call_command("demo_setup", "--no-history", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_demo_setup_writes_the_login_for_the_owner_only(checkout):
    printed = demo_setup()
    login = (checkout / "var" / LOGIN_FILE).read_text().strip()
    password = (checkout / "var" / "admin-password.txt").read_text().strip()
    assert login == f"Admin login: {ADMIN_URL}  user: admin  password: {password}"
    assert login in printed
    assert get_user_model().objects.get(username="admin").check_password(password)
    assert mode(checkout / "var" / LOGIN_FILE) == 0o600
    assert mode(checkout / "var" / "admin-password.txt") == 0o600


@pytest.mark.django_db
def test_a_login_file_others_could_read_is_made_owner_only(checkout):
    old = checkout / "var" / LOGIN_FILE
    old.parent.mkdir()
    old.write_text("Admin login: stale")
    old.chmod(0o644)
    demo_setup()
    assert mode(old) == 0o600
    assert "stale" not in old.read_text()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Answering(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", "/admin/login/")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.mark.django_db
def test_the_login_is_printed_only_once_the_web_answers_and_a_worker_registered(checkout, queue):
    login = demo_setup().strip().splitlines()[-1]
    port = free_port()
    out = io.StringIO()
    command = threading.Thread(
        target=call_command,
        args=["admin_login", "--url", f"http://127.0.0.1:{port}/admin/", "--timeout", "30"],
        kwargs={"stdout": out},
    )
    command.start()
    time.sleep(1)
    assert out.getvalue() == "", "printed before the web answered"

    web = http.server.HTTPServer(("127.0.0.1", port), Answering)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    worker = SimpleWorker([queue], connection=queue.connection)
    try:
        time.sleep(1)
        assert out.getvalue() == "", "printed before a worker registered"
        worker.register_birth()
        command.join(timeout=10)
        assert not command.is_alive()
        assert out.getvalue().strip() == login
    finally:
        worker.register_death()
        web.shutdown()
        web.server_close()


def test_without_demo_setup_there_is_no_login_to_print(checkout, redis):
    with pytest.raises(CommandError, match="run `manage.py demo_setup` first"):
        call_command("admin_login", "--url", "http://127.0.0.1:9/", "--timeout", "0")


def test_make_run_starts_the_login_printer_with_its_processes():
    processes = dict(
        line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line
    )
    assert processes["login"].split() == ["python", "manage.py", "admin_login", "--stay"]


def test_var_is_not_committed():
    assert "var/" in (ROOT / ".gitignore").read_text().splitlines()
