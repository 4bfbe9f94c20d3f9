"""PostgreSQL faults for tests: what a server restart does to one connection."""

import psycopg
from django.db import connection


def kill_django_connection() -> None:
    """Terminate the server side of Django's connection from a second one, as a restart would."""
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    dsn = connection.settings_dict
    with psycopg.connect(
        host=dsn["HOST"] or "127.0.0.1",
        port=dsn["PORT"] or 5432,
        user=dsn["USER"],
        dbname="postgres",
        autocommit=True,
    ) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
