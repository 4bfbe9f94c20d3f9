"""How long a database lock or statement may keep the intake or a worker waiting.

PostgreSQL's `lock_timeout` and `statement_timeout` default to 0: wait forever. A table lock held
by a migration or a long job would then hold every webhook past Shopify's 5 s and, with sync
workers, the whole intake. The intake's write gets short limits and answers 503 when one is
hit: Shopify and Stripe send again, nothing is lost. In the webhook pool (`WEBHOOK_POOL`) every
connection carries them from the moment it connects (settings: the connection's `options`), so
the write is one autocommit statement; elsewhere (one process serving the admin too, as `make
run` does) the write runs in a transaction that sets them with `SET LOCAL`, so they end with it
and the admin's requests on the same persistent connection keep PostgreSQL's defaults. An RQ
worker's connections get longer limits for the whole session, set when each connects. SQLite
has its own busy timeout (settings: OPTIONS["timeout"]).
https://www.postgresql.org/docs/current/runtime-config-client.html#GUC-LOCK-TIMEOUT
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.conf import settings
from django.db import connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

# One round trip: set_config(name, value, is_local=true) is SET LOCAL as a function.
_SET_LOCAL = (
    "SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true)"
)
_SET_SESSION = (
    "SELECT set_config('lock_timeout', %s, false), set_config('statement_timeout', %s, false)"
)


def _values(lock_ms: int, statement_ms: int) -> list[str]:
    return [f"{int(lock_ms)}ms", f"{int(statement_ms)}ms"]


@contextlib.contextmanager
def intake_transaction() -> Iterator[None]:
    """Statements whose locks and statements wait at most the intake's limits: one autocommit
    statement each where the connection carries them (the webhook pool), else a transaction.

    Inside a caller's transaction it is a savepoint and leaves the caller's limits alone.
    """
    if connection.in_atomic_block:
        with transaction.atomic():
            yield
        return
    if settings.WEBHOOK_POOL and connection.vendor == "postgresql":
        yield  # the connection's own limits; each statement commits by itself
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    _SET_LOCAL,
                    _values(
                        settings.INTAKE_DB_LOCK_TIMEOUT_MS, settings.INTAKE_DB_STATEMENT_TIMEOUT_MS
                    ),
                )
        yield


def set_worker_timeouts(db: BaseDatabaseWrapper) -> None:
    """Give one open PostgreSQL connection the workers' session limits."""
    if db.vendor != "postgresql" or db.connection is None:
        return
    with db.connection.cursor() as cursor:  # the driver's own: no Django wrapping, no atomic
        cursor.execute(
            _SET_SESSION,
            _values(settings.WORKER_DB_LOCK_TIMEOUT_MS, settings.WORKER_DB_STATEMENT_TIMEOUT_MS),
        )


def _on_connect(sender: object, connection: BaseDatabaseWrapper, **kwargs: object) -> None:
    set_worker_timeouts(connection)


@contextlib.contextmanager
def worker_timeouts() -> Iterator[None]:
    """While it lasts, every database connection of this process gets the workers' limits."""
    connection_created.connect(_on_connect, dispatch_uid=__name__)
    for db in connections.all(initialized_only=True):
        set_worker_timeouts(db)
    try:
        yield
    finally:
        connection_created.disconnect(dispatch_uid=__name__)
        for db in connections.all(initialized_only=True):
            _reset(db)


def _reset(db: BaseDatabaseWrapper) -> None:
    """PostgreSQL's own limits again on a connection that outlives the worker (tests)."""
    if db.vendor != "postgresql" or db.connection is None:
        return
    with contextlib.suppress(db.Database.Error), db.connection.cursor() as cursor:
        cursor.execute("RESET lock_timeout")
        cursor.execute("RESET statement_timeout")
