"""Who may scrape /metrics, and a topic label nobody can grow without bound."""

import random
import re
import string

import pytest
from prometheus_client.parser import text_string_to_metric_families

from automation.intake import inbox
from automation.platform import metrics
from automation.ui.health import FORWARDED_HEADERS
from tests.support.signing import post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "scrape-secret"


@pytest.fixture
def no_token(settings):
    settings.METRICS_TOKEN = ""
    settings.DEBUG = False


@pytest.fixture
def token(settings):
    settings.METRICS_TOKEN = TOKEN
    settings.DEBUG = False


def test_a_direct_loopback_caller_scrapes_without_a_token(client, no_token, queue):
    for address in ("127.0.0.1", "::1"):
        response = client.get("/metrics", REMOTE_ADDR=address)
        assert response.status_code == 200, address
        assert b"elbkerzen_dead_letters" in response.content, address


@pytest.mark.parametrize("header", FORWARDED_HEADERS)
def test_through_a_same_host_proxy_metrics_need_the_token(client, no_token, queue, header):
    # Given a proxy on this host: REMOTE_ADDR is loopback, the proxy names the real caller
    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1", **{header: "203.0.113.9"})
    # Then the loopback address does not count
    assert response.status_code == 403
    assert b"METRICS_TOKEN" in response.content


def test_through_the_proxy_the_token_opens_metrics(client, token, queue):
    proxied = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.9"}
    missing = client.get("/metrics", **proxied)
    assert missing.status_code == 401
    assert missing["WWW-Authenticate"].startswith("Bearer")
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-secret", **proxied)
    assert wrong.status_code == 401
    ok = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", **proxied)
    assert ok.status_code == 200
    assert b"elbkerzen_dead_letters" in ok.content
    # RFC 9110 section 11.1: the scheme name is case-insensitive
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"bearer {TOKEN}").status_code == 200


def assert_refused_asking_for_the_token(response) -> None:
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"elbkerzen_" not in response.content  # not one metric


def test_the_token_needs_the_bearer_scheme(client, token, queue):
    assert_refused_asking_for_the_token(client.get("/metrics", HTTP_AUTHORIZATION=TOKEN))
    assert_refused_asking_for_the_token(client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}"))


def test_with_a_token_set_loopback_alone_is_not_enough(client, token, queue):
    assert_refused_asking_for_the_token(client.get("/metrics", REMOTE_ADDR="127.0.0.1"))


def _topic_values(text: str) -> set[str]:
    return {
        sample.labels["topic"]
        for family in text_string_to_metric_families(text)
        if family.name == "elbkerzen_deliveries"
        for sample in family.samples
    }


def test_random_topic_headers_make_at_most_the_known_topics_plus_other(client, no_token, queue):
    # Given 50 signed deliveries of one body, each under a topic a replayer made up
    rng = random.Random(14)
    for _ in range(50):
        topic = "".join(rng.choices(string.ascii_lowercase, k=8)) + "/" + str(rng.randrange(999))
        assert post_shopify(client, {"x": 1}, topic=topic).status_code == 200
    # And one under a topic we handle
    post_shopify(client, {"x": 1}, topic="orders/create")

    text = client.get("/metrics").content.decode()

    # Then the topic label holds handled topics and `other`, nothing made up
    shopify_known = {topic for source, topic in inbox.HANDLERS if source == "shopify"}
    values = _topic_values(text)
    assert values == {"orders/create", metrics.OTHER_TOPIC}
    assert len(values) <= len(shopify_known) + 1
    # And `other` counts all 50
    other = re.search(r'elbkerzen_deliveries\{[^}]*topic="other"[^}]*\} (\S+)', text)
    assert other is not None and float(other.group(1)) == 50.0


def test_topic_label_keeps_handled_topics_per_source():
    known = {("shopify", "orders/create"), ("stripe", "checkout.session.expired")}
    assert metrics.topic_label("shopify", "orders/create", known) == "orders/create"
    assert metrics.topic_label("stripe", "checkout.session.expired", known) == (
        "checkout.session.expired"
    )
    # A Stripe type replayed as a Shopify topic is not a Shopify topic we handle
    assert metrics.topic_label("shopify", "checkout.session.expired", known) == "other"
