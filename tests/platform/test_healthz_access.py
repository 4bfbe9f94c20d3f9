"""/healthz: the status for everyone, the parts for those who may monitor."""

import pytest
from django.contrib.auth import get_user_model

from automation.ui import health

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "scrape-secret"
FROM_OUTSIDE = {"REMOTE_ADDR": "203.0.113.9"}
THROUGH_THE_PROXY = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.9"}


@pytest.fixture
def production(settings):
    settings.DEBUG = False
    settings.METRICS_TOKEN = ""


def _has_detail(body: dict) -> bool:
    return set(health.CHECKS) <= body.keys() and "failing" in body


@pytest.mark.parametrize("caller", [FROM_OUTSIDE, THROUGH_THE_PROXY], ids=["remote", "proxied"])
def test_anonymous_callers_get_the_status_only(client, alive_service, production, caller):
    response = client.get("/healthz", **caller)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.parametrize("caller", [FROM_OUTSIDE, THROUGH_THE_PROXY], ids=["remote", "proxied"])
def test_anonymous_callers_still_see_a_failure_by_its_code(client, queue, production, caller):
    # Given no worker alive and no reconciliation ever: the service is not healthy
    response = client.get("/healthz", **caller)
    assert response.status_code == 503
    assert response.json() == {"status": "fail"}


def test_a_direct_loopback_caller_gets_the_parts(client, alive_service, production):
    body = client.get("/healthz", REMOTE_ADDR="127.0.0.1").json()
    assert _has_detail(body)
    assert body["workers"] == "ok (1 alive)"


def test_the_metrics_token_shows_the_parts_through_the_proxy(
    client, alive_service, production, settings
):
    settings.METRICS_TOKEN = TOKEN
    with_token = client.get("/healthz", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", **THROUGH_THE_PROXY)
    assert with_token.status_code == 200
    assert _has_detail(with_token.json())
    wrong = client.get("/healthz", HTTP_AUTHORIZATION="Bearer guessed", **THROUGH_THE_PROXY)
    # A wrong token is no reason to hide the status: the code stays, the parts go
    assert wrong.status_code == 200
    assert wrong.json() == {"status": "ok"}


def test_staff_see_the_parts_from_anywhere(client, queue, production):
    staff = get_user_model().objects.create_user("ops", password="x", is_staff=True)
    client.force_login(staff)
    response = client.get("/healthz", **THROUGH_THE_PROXY)
    assert response.status_code == 503
    body = response.json()
    assert _has_detail(body)
    assert "workers" in body["failing"]


def test_a_signed_in_non_staff_user_gets_the_status_only(client, alive_service, production):
    user = get_user_model().objects.create_user("customer", password="x")
    client.force_login(user)
    assert client.get("/healthz", **FROM_OUTSIDE).json() == {"status": "ok"}
