"""Fixtures the intake's Redis-loss tests share."""

import pytest

from tests.support.private_redis import PrivateRedis


@pytest.fixture
def private_redis(settings):
    """A private redis-server that the test's REDIS_URL points at; stopped afterwards."""
    server = PrivateRedis()
    server.start()
    settings.REDIS_URL = server.url
    yield server
    server.stop()
