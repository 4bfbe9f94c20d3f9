"""`make test` with nothing set runs pytest beside a throwaway redis-server of its own
(`python -m tests.support.private_redis`), which is gone afterwards; a REDIS_URL that is set
wins."""

import sys

import pytest
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from tests.support.private_redis import needs_redis_server, run_with_private_redis

# Uses the Redis it is given, says where it was, and ends with its own exit code.
COMMAND = [
    sys.executable,
    "-c",
    "import os, sys, redis; url = os.environ['REDIS_URL']; "
    "redis.Redis.from_url(url).set('seen', 1); print('URL', url); sys.exit(3)",
]


def printed_url(capfd) -> str:
    out = capfd.readouterr().out
    return next(line.split()[1] for line in out.splitlines() if line.startswith("URL "))


@needs_redis_server
def test_without_redis_url_the_command_gets_a_private_server_that_is_gone_afterwards(
    monkeypatch, capfd
):
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert run_with_private_redis(COMMAND) == 3
    url = printed_url(capfd)
    assert url.startswith("redis://127.0.0.1:") and url.endswith("/15")
    assert ":6379/" not in url
    with pytest.raises(RedisConnectionError):
        Redis.from_url(url, socket_connect_timeout=0.5).ping()


def test_a_redis_url_that_is_set_is_used_as_given(monkeypatch, capfd, redis, settings):
    monkeypatch.setenv("REDIS_URL", settings.REDIS_URL)
    assert run_with_private_redis(COMMAND) == 3
    assert printed_url(capfd) == settings.REDIS_URL
    assert redis.get("seen") == b"1"
