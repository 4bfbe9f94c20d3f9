"""Guessing is slowed down: admin passwords by django-axes, API tokens by their failures in Redis.

Given a caller that keeps sending wrong credentials from one address, when it passes the limit,
then that address is refused with 429 for a while, a correct secret included, while callers
from other addresses carry on.
"""

import logging
import time

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import Client, RequestFactory
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from automation.models import WatchedProduct
from automation.ui.api.authentication import client_ip

pytestmark = pytest.mark.django_db

ATTACKER = "203.0.113.66"
MERCHANT = "198.51.100.7"
PROXY = "172.18.0.2"
URL = "/api/watched-products/"
PASSWORD = "korrektes-Pferd-Batterie-42"


@pytest.fixture(autouse=True)
def _clean_redis(redis):
    """Failure counters live in the test Redis DB, emptied around each test."""


@pytest.fixture
def token() -> str:
    """A token that may list watched products, and one product for it to see."""
    WatchedProduct.objects.create(label="Winterzauber", product_id=7001)
    user = User.objects.create_user("api", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="view_watchedproduct"))
    return Token.objects.create(user=user).key


def api_get(key: str, address: str, **headers: str) -> int:
    client = APIClient(REMOTE_ADDR=address, **headers)
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get(URL)


def guess_until_blocked(address: str = ATTACKER, **headers: str) -> list[int]:
    """As many wrong tokens as the limit allows, each answered 401."""
    return [
        api_get(f"guess-{n}", address, **headers).status_code
        for n in range(settings.API_AUTH_FAILURE_LIMIT)
    ]


def assert_listed(response) -> None:
    assert response.status_code == 200
    assert [row["label"] for row in response.data["results"]] == ["Winterzauber"]


def assert_blocked(response) -> None:
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    assert b"Winterzauber" not in response.content


# --- API tokens --------------------------------------------------------------------------------


def test_wrong_tokens_past_the_limit_get_429_with_retry_after(token):
    assert guess_until_blocked() == [401] * settings.API_AUTH_FAILURE_LIMIT

    refused = api_get("one-more-guess", ATTACKER)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= settings.API_AUTH_FAILURE_WINDOW


def test_a_blocked_address_gets_429_even_with_a_correct_token(token):
    """Answering a correct token from a guessing address would tell the guesser it hit."""
    guess_until_blocked()
    assert_blocked(api_get(token, ATTACKER))


def test_other_addresses_are_not_affected(token):
    guess_until_blocked()
    assert_listed(api_get(token, MERCHANT))
    assert api_get("typo", MERCHANT).status_code == 401


def test_the_block_ends_with_the_window(token, settings):
    settings.API_AUTH_FAILURE_WINDOW = 2  # seconds, from the first failure
    guess_until_blocked()
    assert_blocked(api_get(token, ATTACKER))
    time.sleep(2.1)
    assert_listed(api_get(token, ATTACKER))


def test_a_correct_token_is_never_counted(token):
    for _ in range(settings.API_AUTH_FAILURE_LIMIT + 1):
        assert_listed(api_get(token, ATTACKER))


def test_a_forged_forwarded_for_does_not_escape_the_count_without_a_proxy(token):
    """TRUSTED_PROXY_COUNT = 0: X-Forwarded-For is the caller's own word and is ignored."""
    for n in range(settings.API_AUTH_FAILURE_LIMIT):
        forged = {"HTTP_X_FORWARDED_FOR": f"192.0.2.{n}"}
        assert api_get(f"guess-{n}", ATTACKER, **forged).status_code == 401
    assert_blocked(api_get(token, ATTACKER, HTTP_X_FORWARDED_FOR="192.0.2.200"))


def test_behind_a_proxy_each_caller_is_counted_by_the_address_the_proxy_saw(token, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    # The attacker forges a left-hand entry; the proxy appends the address it really saw.
    guess_until_blocked(PROXY, HTTP_X_FORWARDED_FOR=f"{MERCHANT}, {ATTACKER}")
    assert_blocked(api_get(token, PROXY, HTTP_X_FORWARDED_FOR=ATTACKER))
    assert_listed(api_get(token, PROXY, HTTP_X_FORWARDED_FOR=MERCHANT))


def test_without_redis_tokens_are_still_checked_and_the_gap_is_logged(token, settings, caplog):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    with caplog.at_level(logging.WARNING, logger="automation.ui.api.authentication"):
        assert api_get("guess", ATTACKER).status_code == 401
        assert_listed(api_get(token, ATTACKER))
    assert "Redis unreachable" in caplog.text


@pytest.mark.parametrize(
    ("proxies", "remote", "forwarded", "expected"),
    [
        (0, ATTACKER, f"{MERCHANT}", ATTACKER),  # no proxy: the header is ignored
        (1, PROXY, f"{MERCHANT}, {ATTACKER}", ATTACKER),  # the entry our proxy appended
        (2, PROXY, f"{MERCHANT}, {ATTACKER}, 10.0.0.9", ATTACKER),
        (1, PROXY, "", PROXY),  # fewer entries than proxies: the direct peer
        (1, PROXY, "not-an-address", PROXY),
    ],
)
def test_client_ip(settings, proxies, remote, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    request = RequestFactory().get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_ip(request) == expected


# --- admin login (django-axes) -----------------------------------------------------------------


@pytest.fixture
def merchant(settings) -> User:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast tests
    return User.objects.create_superuser("merchant", password=PASSWORD)


def log_in(address: str, password: str, username: str = "merchant") -> int:
    response = Client(REMOTE_ADDR=address).post(
        "/admin/login/?next=/admin/", {"username": username, "password": password}
    )
    return response.status_code


def test_wrong_admin_passwords_lock_the_username_at_that_address(merchant):
    limit = settings.AXES_FAILURE_LIMIT
    answers = [log_in(ATTACKER, f"guess-{n}") for n in range(limit)]
    assert answers[: limit - 1] == [200] * (limit - 1)  # the form again, with its error
    assert log_in(ATTACKER, PASSWORD) == 429  # locked: the right password does not help
    assert log_in(ATTACKER, PASSWORD, username="someone-else") == 200  # not that username


def test_the_merchant_logs_in_from_elsewhere_while_an_attacker_is_locked_out(merchant):
    for n in range(settings.AXES_FAILURE_LIMIT):
        log_in(ATTACKER, f"guess-{n}")
    assert log_in(MERCHANT, PASSWORD) == 302


def test_axes_reset_lifts_the_lockout(merchant):
    for n in range(settings.AXES_FAILURE_LIMIT):
        log_in(ATTACKER, f"guess-{n}")
    assert log_in(ATTACKER, PASSWORD) == 429
    call_command("axes_reset")
    assert log_in(ATTACKER, PASSWORD) == 302
