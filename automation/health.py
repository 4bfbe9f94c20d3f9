"""Liveness of what the intake depends on: the database and Redis."""

from django.db import connection
from redis.exceptions import RedisError

from .queues import redis_client


def check() -> dict[str, str]:
    """Each dependency's state as "ok" or a short error."""
    results: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        results["database"] = "ok"
    except Exception as err:  # any driver error means "not answering"
        results["database"] = f"error: {type(err).__name__}"
    try:
        redis_client().ping()
        results["redis"] = "ok"
    except RedisError as err:
        results["redis"] = f"error: {type(err).__name__}"
    return results
