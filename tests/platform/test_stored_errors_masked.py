"""Errors are stored masked: a vendor that echoes a token in its error never puts it on a page.

The delivery's `last_error` is shown in the admin, the API and the alert mail; the vendor's text
reaches it through the exception a handler raised.
"""

import pytest
from django.core import mail

from automation.intake import handling
from automation.models import Delivery
from tests.support.signing import post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

ECHOED = "shpat_0123456789abcdef0123456789abcdef"


@pytest.fixture
def echoing_handler():
    """A handler whose vendor call fails with the token in the error, as a careless API does."""

    def handle(event, delivery):
        raise RuntimeError(f"401 Unauthorized: invalid access token {ECHOED}")

    handling.HANDLERS[("shopify", "test/echo")] = handle
    yield
    handling.HANDLERS.pop(("shopify", "test/echo"), None)


def test_a_dead_deliverys_error_keeps_no_token(client, run_worker, echoing_handler, settings):
    post_shopify(client, {"id": 1}, topic="test/echo")
    run_worker()

    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DEAD
    assert "401 Unauthorized: invalid access token" in delivery.last_error
    assert ECHOED not in delivery.last_error
    (alert,) = mail.outbox
    assert ECHOED not in alert.body and ECHOED not in alert.subject
