"""The intake and the workers never wait forever on a database lock, statement or connection.

A second connection holds an ACCESS EXCLUSIVE lock on the deliveries table, as a migration or a
long job would: a signed webhook is answered 503 within INTAKE_DB_LOCK_TIMEOUT_MS plus a margin
and nothing is stored; once the lock is gone the same delivery is accepted.
"""

import time
from collections.abc import Iterator

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.db.utils import ConnectionHandler, OperationalError
from rq import Queue

from automation.models import Delivery
from automation.platform import db_timeouts
from automation.platform.workers import Worker
from tests.support.hanging import hanging_server
from tests.support.signing import post_shopify

pytestmark = pytest.mark.postgres

LOCKED_ANSWER_S = 1.0
BODY = {
    "inventory_item_id": 271878346598000001,
    "location_id": 24826418,
    "available": 0,
    "updated_at": "2026-11-26T15:10:00.000000+00:00",
}


def second_connection() -> psycopg.Connection:
    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        dbname=db["NAME"],
        connect_timeout=5,
    )


def show(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        return cursor.fetchone()[0]


@pytest.fixture
def webhook_pool(settings) -> Iterator[None]:
    """This process as the webhook pool: its connections carry the intake's limits (settings)."""
    options = connection.settings_dict["OPTIONS"]
    settings.WEBHOOK_POOL = True
    options["options"] = (
        f"-c lock_timeout={settings.INTAKE_DB_LOCK_TIMEOUT_MS}ms"
        f" -c statement_timeout={settings.INTAKE_DB_STATEMENT_TIMEOUT_MS}ms"
    )
    connection.close()
    try:
        yield
    finally:
        options.pop("options", None)
        connection.close()


@pytest.fixture(params=["one process", "webhook pool"])
def intake_mode(request) -> str:
    """Both ways the intake gets its limits: a transaction's SET LOCAL, or the connection's."""
    if request.param == "webhook pool":
        request.getfixturevalue("webhook_pool")
    return request.param


@pytest.mark.django_db(transaction=True)
def test_a_locked_deliveries_table_gets_a_fast_503_and_the_retry_is_stored(
    requires_postgres, intake_mode, client, redis, caplog
):
    # Given another connection holding the deliveries table for itself
    holder = second_connection()
    holder.execute(f'LOCK TABLE "{Delivery._meta.db_table}" IN ACCESS EXCLUSIVE MODE')
    webhook_id = "locked-table-1"
    try:
        # When Shopify delivers a stock change
        started = time.monotonic()
        response = post_shopify(
            client, BODY, "inventory_levels/update", HTTP_X_SHOPIFY_WEBHOOK_ID=webhook_id
        )
        took = time.monotonic() - started
    finally:
        holder.rollback()  # the lock ends
        holder.close()

    # Then it is refused at once with a retry hint, logged, and nothing is stored
    assert response.status_code == 503
    assert response["Retry-After"].isdigit()
    assert took < LOCKED_ANSWER_S
    assert took >= settings.INTAKE_DB_LOCK_TIMEOUT_MS / 1000
    [warning] = [r for r in caplog.records if "answered 503" in r.getMessage()]
    assert warning.levelname == "WARNING" and "lock timeout" in warning.getMessage()
    assert not Delivery.objects.exists()

    # And Shopify's retry of the same delivery is accepted: nothing lost
    response = post_shopify(
        client, BODY, "inventory_levels/update", HTTP_X_SHOPIFY_WEBHOOK_ID=webhook_id
    )
    assert response.status_code == 200
    assert Delivery.objects.get().webhook_id == webhook_id


@pytest.mark.django_db(transaction=True)
def test_a_duplicate_while_the_table_is_locked_gets_a_fast_503_too(
    requires_postgres, intake_mode, client
):
    post_shopify(client, BODY, "inventory_levels/update", HTTP_X_SHOPIFY_WEBHOOK_ID="dup-1")
    holder = second_connection()
    # Row lock on the stored delivery: the INSERT conflicts, the duplicate count must wait
    holder.execute(f'SELECT 1 FROM "{Delivery._meta.db_table}" FOR UPDATE')  # noqa: S608
    try:
        started = time.monotonic()
        response = post_shopify(
            client, BODY, "inventory_levels/update", HTTP_X_SHOPIFY_WEBHOOK_ID="dup-1"
        )
        took = time.monotonic() - started
    finally:
        holder.rollback()
        holder.close()
    assert response.status_code == 503
    assert took < LOCKED_ANSWER_S
    assert Delivery.objects.get().duplicate_count == 0


@pytest.mark.django_db(transaction=True)
def test_the_intakes_limits_end_with_its_transaction(requires_postgres):
    """SET LOCAL: the admin's requests on the same persistent connection keep the defaults."""
    before = (show("lock_timeout"), show("statement_timeout"))
    with db_timeouts.intake_transaction():
        inside = (show("lock_timeout"), show("statement_timeout"))
    assert inside == (
        f"{settings.INTAKE_DB_LOCK_TIMEOUT_MS}ms",
        f"{settings.INTAKE_DB_STATEMENT_TIMEOUT_MS // 1000}s",
    )
    assert (show("lock_timeout"), show("statement_timeout")) == before == ("0", "0")


@pytest.mark.django_db(transaction=True)
def test_the_webhook_pools_connections_carry_the_limits_and_store_in_one_statement(
    requires_postgres, webhook_pool, client, redis
):
    # Given a connection of the webhook pool: it has the intake's limits from the start
    assert (show("lock_timeout"), show("statement_timeout")) == (
        f"{settings.INTAKE_DB_LOCK_TIMEOUT_MS}ms",
        f"{settings.INTAKE_DB_STATEMENT_TIMEOUT_MS // 1000}s",
    )
    seen: list[tuple[str, bool]] = []

    def record(execute, sql, params, many, context):
        seen.append((sql.split()[0].upper(), connection.get_autocommit()))
        return execute(sql, params, many, context)

    # When a delivery is stored
    with connection.execute_wrapper(record):
        response = post_shopify(client, BODY, "inventory_levels/update")

    # Then that was one INSERT that committed by itself: no BEGIN, SET LOCAL or COMMIT
    assert response.status_code == 200
    assert seen == [("INSERT", True)]
    assert Delivery.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_outside_the_webhook_pool_the_limits_come_with_the_write_transaction(
    requires_postgres, client, redis
):
    seen: list[str] = []

    def record(execute, sql, params, many, context):
        seen.append(sql.split()[0].upper())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        response = post_shopify(client, BODY, "inventory_levels/update")

    assert response.status_code == 200
    assert seen == ["SELECT", "INSERT"]  # set_config(…, is_local) inside the transaction
    assert (show("lock_timeout"), show("statement_timeout")) == ("0", "0")


@pytest.mark.django_db(transaction=True)
def test_a_slow_statement_of_the_intake_is_cut_off(requires_postgres, settings):
    settings.INTAKE_DB_STATEMENT_TIMEOUT_MS = 200
    started = time.monotonic()
    with (
        pytest.raises(OperationalError, match="statement timeout"),
        db_timeouts.intake_transaction(),
        connection.cursor() as cursor,
    ):
        cursor.execute("SELECT pg_sleep(5)")
    assert time.monotonic() - started < 1.0


def timeouts_in_a_job() -> dict[str, str]:
    """What a job sees, on the worker's open connection and on one it opens anew."""
    first = (show("lock_timeout"), show("statement_timeout"))
    connection.close()
    fresh = (show("lock_timeout"), show("statement_timeout"))
    return {"open": list(first), "fresh": list(fresh)}


@pytest.mark.django_db(transaction=True)
def test_the_rq_worker_gets_its_own_longer_limits(requires_postgres, redis):
    # Given the service's worker class, and a connection this process already had open
    connection.ensure_connection()
    queue = Queue("default", connection=redis)
    job = queue.enqueue(timeouts_in_a_job)

    # When it works off the queue
    Worker([queue], connection=redis).work(burst=True)

    # Then its job's connections, open or new, wait the workers' limits, not forever
    expected = [
        f"{settings.WORKER_DB_LOCK_TIMEOUT_MS // 1000}s",
        f"{settings.WORKER_DB_STATEMENT_TIMEOUT_MS // 60_000}min",
    ]
    assert job.latest_result().return_value == {"open": expected, "fresh": expected}
    # and this process's connections have PostgreSQL's defaults again afterwards
    assert (show("lock_timeout"), show("statement_timeout")) == ("0", "0")


def test_connecting_to_a_postgres_that_never_answers_gives_up(requires_postgres):
    assert settings.DATABASES["default"]["OPTIONS"]["connect_timeout"] == (
        settings.DATABASE_CONNECT_TIMEOUT
    )
    with hanging_server() as (url, _held):
        port = int(url.rsplit(":", 1)[1])
        db = dict(settings.DATABASES["default"])
        db.update(HOST="127.0.0.1", PORT=port, OPTIONS={**db["OPTIONS"], "connect_timeout": 2})
        handler = ConnectionHandler({"default": db})
        started = time.monotonic()
        with pytest.raises(OperationalError):
            handler["default"].ensure_connection()
        assert time.monotonic() - started < 4


def test_rq_clients_built_from_the_settings_have_socket_timeouts():
    import django_rq

    kwargs = django_rq.get_connection("default").connection_pool.connection_kwargs
    assert kwargs["socket_connect_timeout"] == settings.REDIS_CONNECT_TIMEOUT
    assert kwargs["socket_timeout"] == settings.REDIS_SOCKET_TIMEOUT
    assert settings.RQ_QUEUES["default"]["URL"].startswith(settings.REDIS_URL)


def test_timeouts_written_into_redis_url_are_kept(settings):
    from elbkerzen.settings import _with_timeouts

    url = "redis://h:6379/0?socket_timeout=9"
    assert _with_timeouts(url) == url + f"&socket_connect_timeout={settings.REDIS_CONNECT_TIMEOUT}"
