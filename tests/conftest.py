"""Shared fixtures: a clean test Redis DB, a real RQ worker in burst mode, a test handler."""

import os
import time

import pytest
from django.conf import settings
from django.db import connection
from django.utils import translation
from redis import Redis
from rq import Queue, SimpleWorker

from automation.google_ads import statuses as ads
from automation.intake import handling
from automation.platform import connections
from automation.platform.queues import default_queue, redis_client
from tests.support.ads_standin import AdsStandIn, make_test_client, trust_standin_cert
from tests.support.imprint import give_imprint

# `not_bought`: the vendors a reminder asks whether the buyer paid meanwhile; `processes` and
# `nginx_installed`: the documented stack (gunicorn behind the committed nginx); `smtp_server`:
# a real SMTP server on 127.0.0.1.
pytest_plugins = ["tests.support.vendors", "tests.support.stack", "tests.support.smtp"]

# gRPC reads its TLS trust roots once, at the first channel: trust the stand-in's cert first.
trust_standin_cert()


def _assert_test_redis(client: Redis) -> None:
    db = client.connection_pool.connection_kwargs.get("db", 0)
    if db == 0:
        pytest.exit(f"refusing to flush Redis DB 0 ({settings.REDIS_URL}); use a test DB number")


@pytest.fixture(autouse=True)
def _test_outbox_counts_as_mail_server(settings):
    """Django's test runner swaps in the in-memory mail backend, which production refuses
    (EMAIL_REQUIRE_SERVER); tests/reminders/test_deploy_checks.py turns the refusal back on."""
    settings.EMAIL_REQUIRE_SERVER = False


@pytest.fixture(autouse=True)
def _connection_settings_read_afresh():
    """The stored connection settings are cached per process for seconds; each test's rows
    are rolled back, so each test reads its own."""
    connections.forget()
    yield
    connections.forget()


@pytest.fixture(autouse=True)
def _each_test_starts_in_the_default_language():
    """A German request (LocaleMiddleware) leaves German active in its thread; a later test
    that reads reason texts would see them in German."""
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _shop_has_an_imprint(request):
    """Reminders need the merchant's imprint; tests/reminders/test_mail_text.py takes it away."""
    give_imprint(request)


@pytest.fixture
def redis() -> Redis:
    """The test Redis DB, emptied before and after the test."""
    client = redis_client()
    _assert_test_redis(client)
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture
def queue(redis):
    return default_queue()


@pytest.fixture
def run_worker(queue):
    """Drain the queue with a real RQ worker in burst mode (scheduler included)."""

    def run() -> None:
        # A burst worker's scheduler moves due jobs once, at start: jobs that a job schedules
        # for "now" need another round.
        # The worker gets its own client: RQ raises its socket timeout for blocking dequeues.
        connection = Redis.from_url(settings.REDIS_URL)
        worker_queue = Queue(queue.name, connection=connection)
        for _ in range(10):
            worker = SimpleWorker([worker_queue], connection=connection)
            worker.work(burst=True, with_scheduler=True)
            due = queue.scheduled_job_registry.get_jobs_to_schedule(int(time.time()))
            if not queue.count and not due:
                return
        raise AssertionError("the queue did not drain")

    return run


@pytest.fixture
def handler():
    """Register a handler for the test-only topic `test/topic`; its behaviour is settable."""

    class Recorder:
        calls: list[int]
        behaviour = "done"

        def __init__(self) -> None:
            self.calls = []

        def __call__(self, event, delivery):
            self.calls.append(delivery.pk)
            if self.behaviour == "fail":
                raise RuntimeError("handler failed on purpose")
            return handling.Outcome(self.behaviour, "test handler")

    recorder = Recorder()
    handling.HANDLERS[("shopify", "test/topic")] = recorder
    yield recorder
    handling.HANDLERS.pop(("shopify", "test/topic"), None)


POSTGRES_SKIP = "needs PostgreSQL (set DATABASE_URL)"


def on_postgres() -> bool:
    """Whether the tests' database is PostgreSQL (DATABASE_URL), not the SQLite default."""
    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def pytest_collection_modifyitems(config, items):
    """On SQLite, skip tests marked `postgres(reason=...)`, saying what they need it for; skip
    the slow `servers` tests where SERVER_TESTS_RUN_BY names the run that has them instead
    (.ci/run's SQLite pass: its PostgreSQL pass runs them)."""
    run_by = os.environ.get("SERVER_TESTS_RUN_BY", "").strip()
    for item in items:
        marker = item.get_closest_marker("postgres")
        if marker is not None and not on_postgres():
            why = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(
                pytest.mark.skip(reason=f"{POSTGRES_SKIP}: {why}" if why else POSTGRES_SKIP)
            )
        if run_by and item.get_closest_marker("servers") is not None:
            item.add_marker(pytest.mark.skip(reason=f"drives real servers; run by {run_by}"))


@pytest.fixture
def requires_postgres(db):
    if connection.vendor != "postgresql":
        pytest.skip(POSTGRES_SKIP)


@pytest.fixture(scope="session")
def ads_standin():
    """A local gRPC server speaking Google Ads' AdGroupService, one per test session."""
    with AdsStandIn() as standin:
        yield standin


@pytest.fixture
def google_ads(ads_standin, settings, monkeypatch):
    """The `google` Ads backend with the real GoogleAdsClient aimed at the stand-in."""
    ads_standin.requests.clear()
    ads_standin.script([])
    ads_standin._per_ad_group.clear()
    ads_standin.statuses.clear()
    ads_standin.searches.clear()
    ads_standin.ad_groups.clear()
    settings.ADS_BACKEND = "google"
    settings.ADS_BACKOFF_BASE = 0.001
    settings.ADS_BACKOFF_CAP = 0.01
    client = make_test_client(ads_standin, use_proto_plus=settings.GOOGLE_ADS_USE_PROTO_PLUS)
    monkeypatch.setattr(ads, "google_client", lambda: client)
    return ads_standin


@pytest.fixture
def alive_service(queue, db):
    """A registered RQ worker holding the scheduler lock, and a fresh reconciliation run."""
    from django.utils import timezone
    from rq.scheduler import RQScheduler

    from automation.models import ReconcileRun

    worker = SimpleWorker([queue], connection=queue.connection)
    worker.register_birth()
    scheduler = RQScheduler([queue], connection=queue.connection)
    scheduler.acquire_locks()
    now = timezone.now()
    ReconcileRun.objects.create(
        local_date=timezone.localdate(now),
        started_at=now,
        finished_at=now,
        status=ReconcileRun.Status.OK,
    )
    yield worker
    scheduler.release_locks()
    worker.register_death()
