"""The bench's own world: a PostgreSQL database and a Redis DB nobody else uses.

Why: the bench truncates tables and flushes Redis between runs, so it must never point at the
app's data (Redis DB 0) or the test suite's (DB 15), whatever the caller's environment says.
"""

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from redis import Redis

ROOT = Path(__file__).resolve().parent.parent
DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/elbkerzen_bench"
)
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
FORBIDDEN_REDIS_DBS = {0: "the app's own DB", 15: "the test suite's DB"}
SECRET = "bench_webhook_secret"
SHOP = "elbkerzen.myshopify.com"
RUN_DIR = Path(os.environ.get("BENCH_RUN_DIR", "/tmp/elbkerzen-bench"))
TABLES = (
    "automation_adgroupaction",
    "automation_stocklevel",
    "automation_delivery",
    # The confirmed status per ad group and the safety brake's state, so every run starts
    # from "unknown" (the first status is sent) with no brake episode open.
    "automation_adgroupstate",
    "automation_heldchange",
    "automation_brakeepisode",
)


def redis_db(url: str) -> int:
    """The DB number of a redis:// URL (path or `db=` query), refusing the forbidden ones."""
    parts = urlsplit(url)
    db = int(parts.path.lstrip("/") or 0)
    for pair in parts.query.split("&"):
        key, _, value = pair.partition("=")
        if key == "db" and value:
            db = int(value)
    if db in FORBIDDEN_REDIS_DBS:
        sys.exit(f"refusing Redis DB {db} ({FORBIDDEN_REDIS_DBS[db]}); set BENCH_REDIS_URL")
    return db


def child_env(root: Path = ROOT, settings_module: str = "bench.settings") -> dict[str, str]:
    """Environment for every process the bench starts (servers, workers, earlier benches)."""
    redis_db(REDIS_URL)
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": settings_module,
            "DATABASE_URL": DATABASE_URL,
            "REDIS_URL": REDIS_URL,
            "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-only-not-secret",
            "DEBUG": "0",
            "SECURE_SSL_REDIRECT": "false",
            "ALLOWED_HOSTS": "127.0.0.1",
            "SHOPIFY_WEBHOOK_SECRETS": SECRET,
            "SHOPIFY_SHOP_DOMAINS": SHOP,
            "ADS_BACKEND": "dryrun",
            "PYTHONPATH": str(root),
            # As the Dockerfile: metrics go through prometheus_client's multiprocess files.
            "PROMETHEUS_MULTIPROC_DIR": str(RUN_DIR / "prometheus"),
        }
    )
    return env


def setup_django() -> None:
    """Point this process at the bench database, create it if missing, migrate, quiet logs."""
    (RUN_DIR / "prometheus").mkdir(parents=True, exist_ok=True)
    os.environ.update(child_env())
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    from bench.worker import ensure_database, quiet_console_logs, require_migrations_for_models

    ensure_database(DATABASE_URL)
    django.setup()
    require_migrations_for_models()
    call_command("migrate", verbosity=0)
    quiet_console_logs()


def reset_tables() -> None:
    """Empty what the intake and the jobs write; watched products and settings stay.

    An ANALYZE follows, so the planner knows the watched products, variants and ad groups
    the set-up just made, as a shop's tables are known (autovacuum gathers the statistics of a
    table that changed within a minute; a run must not measure that minute: docs/PERFORMANCE.md,
    "The stock path written out"). A CHECKPOINT follows, so every run starts from the same
    flushed state: the emptied files' removal and the last run's dirty pages are written now,
    not by a checkpoint that lands in the middle of whichever run comes next
    (docs/PERFORMANCE.md, "Checkpoint after each reset").
    """
    from django.db import DatabaseError, connection, transaction

    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")  # noqa: S608
        cursor.execute("ANALYZE")
        try:
            with transaction.atomic():  # a refused CHECKPOINT must not break the connection
                cursor.execute("CHECKPOINT")
        except DatabaseError:
            pass  # not superuser nor pg_checkpoint: the runs are noisier, not wrong


def redis() -> "Redis":
    """The product's process-wide client, on the bench DB."""
    from automation.platform.queues import redis_client

    return redis_client()


def flush_redis() -> None:
    """Drop every queued job (the intake runs have no worker) so Redis memory stays flat."""
    redis().flushdb()
