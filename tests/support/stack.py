"""The documented stack for tests: the Dockerfile's gunicorn on the test database, nginx in front.

Shared by the slow-client and the webhook-pool tests; both run the committed nginx config with
Debian's nginx, which CI installs (a missing nginx fails them under CI=true).
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection

from bench.servers import Processes, Server, nginx_binary, start_gunicorn, start_nginx
from tests.support.signing import SECRET, SHOP

ROOT = Path(__file__).resolve().parent.parent.parent


def require_nginx() -> None:
    """Skip without nginx, except under CI=true, where a missing nginx is a failure."""
    if nginx_binary():
        return
    if os.environ.get("CI") == "true":
        pytest.fail("nginx is missing under CI=true; .ci/run installs it (apt-get install nginx)")
    pytest.skip("needs nginx (apt-get install nginx); CI installs it and runs this test")


def database_url() -> str:
    """The test database as a DATABASE_URL gunicorn can open."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        if ":memory:" in db["NAME"]:
            pytest.skip("needs a database file or server shared with gunicorn")
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def start_pool(
    processes: Processes, tmp_path: Path, name: str = "gunicorn", **environment: str
) -> Server:
    """The Dockerfile's gunicorn command in production mode, on the test database and Redis DB."""
    metrics = tmp_path / "prometheus"
    metrics.mkdir(exist_ok=True)
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "elbkerzen.settings",
        "DATABASE_URL": database_url(),
        "REDIS_URL": django_settings.REDIS_URL,
        "DEBUG": "0",
        "SECURE_SSL_REDIRECT": "false",  # nginx listens on plain HTTP here
        "ALLOWED_HOSTS": "127.0.0.1",
        "SHOPIFY_WEBHOOK_SECRETS": SECRET,
        "SHOPIFY_SHOP_DOMAINS": SHOP,
        "PROMETHEUS_MULTIPROC_DIR": str(metrics),
        "PYTHONPATH": str(ROOT),
        **environment,
    }
    return start_gunicorn(
        processes, env=env, name=name, ready_path="/healthz", ready_statuses=(200, 503)
    )


def start_proxy(processes: Processes, port: int, tmp_path: Path, **options) -> Server:
    """The committed nginx config in front of the pool on `port`; up once /healthz answers,
    a 503 included (the stack is up, a dependency is not)."""
    return start_nginx(
        processes,
        port,
        tmp_path / "nginx",
        ready_path="/healthz",
        ready_statuses=(200, 503),
        **options,
    )


@pytest.fixture(scope="module")
def nginx_installed() -> None:
    """Skip (or fail under CI=true) a module's tests without nginx: use it in `pytestmark`."""
    require_nginx()


@pytest.fixture
def processes(tmp_path: Path, redis) -> Iterator[Processes]:
    """The servers a test starts, stopped (and their logs kept in tmp_path) when it ends."""
    with Processes(tmp_path) as procs:
        yield procs
