"""Plain-text mails show text as it is: no HTML entities; the HTML part stays escaped.

Given a dead delivery whose error quoted `"`, `<`, `>`, `&` and `'`, the alert (text/plain)
showed `&quot;`, `&lt;` and `&#x27;` instead.
"""

from decimal import Decimal

import pytest
from django.core import mail
from django.utils import timezone

from automation.intake import inbox
from automation.models import CheckoutState, Delivery, ReminderSettings
from automation.platform import alerts
from automation.platform.exceptions import PermanentError
from automation.reminders import mail as reminder_mail
from tests.support.signing import post_shopify

pytestmark = pytest.mark.django_db(transaction=True)

MARKUP = """title "Kerze" <b>rot</b> & 'Zimt'"""
ENTITIES = ("&quot;", "&lt;", "&gt;", "&amp;", "&#x27;", "&#39;")


def _assert_literal(text: str, expected: str) -> None:
    assert expected in text
    for entity in ENTITIES:
        assert entity not in text


def test_dead_delivery_alert_shows_the_error_and_topic_as_written(client, run_worker):
    def permanent(_event, delivery):
        raise PermanentError(MARKUP)

    topic = """test/<"dead">&'"""
    inbox.HANDLERS[("shopify", topic)] = permanent
    try:
        post_shopify(client, {"id": 1}, topic=topic)
        run_worker()
    finally:
        del inbox.HANDLERS[("shopify", topic)]

    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.DEAD
    (alert,) = mail.outbox
    _assert_literal(alert.body, f"Error:       PermanentError: {MARKUP}\n")
    _assert_literal(alert.body, f"Topic:       {topic}\n")
    assert alert.content_subtype == "plain"
    assert not getattr(alert, "alternatives", None)


def test_dead_delivery_alert_keeps_the_admin_link_and_ends_with_a_newline(client):
    post_shopify(client, {"id": 1}, topic="test/anything")
    delivery = Delivery.objects.get()
    Delivery.objects.filter(pk=delivery.pk).update(
        status=Delivery.Status.DEAD, last_error="a & b", processed_at=timezone.now()
    )
    delivery.refresh_from_db()

    alerts.delivery_dead(delivery)

    (alert,) = mail.outbox
    assert alert.body.endswith(f"{alerts.admin_url(delivery)}\n")
    _assert_literal(alert.body, "Error:       a & b\n")


def test_reminder_text_part_is_plain_and_html_part_stays_escaped(settings):
    settings.SHOP_NAME = "Kerzen & Co"
    config = ReminderSettings(discount_code="ELBE10", discount_rate=Decimal("0.10"))
    checkout = CheckoutState(
        email="kundin@example.com",
        first_name="""Kim & "Jo" <i>O'Neil</i>""",
        line_items=[{"title": """Duft "Zimt & Nelke" <gross>""", "quantity": 1, "price": "9.90"}],
        total_price=Decimal("9.90"),
        currency="EUR",
        recovery_url="https://elbkerzen.example/checkouts/c1/recover?key=a&b=c",
    )

    message = reminder_mail.build(checkout, "discount", config)

    _assert_literal(message.body, """Hallo Kim & "Jo" <i>O'Neil</i>,""")
    _assert_literal(message.body, """1 × Duft "Zimt & Nelke" <gross>""")
    _assert_literal(message.body, "https://elbkerzen.example/checkouts/c1/recover?key=a&b=c\n")
    _assert_literal(message.body, "Dein Kerzen & Co-Team")
    assert message.subject == "Dein Warenkorb bei Kerzen & Co wartet auf dich"
    html = message.alternatives[0][0]
    assert "Hallo Kim &amp; &quot;Jo&quot; &lt;i&gt;O&#x27;Neil&lt;/i&gt;," in html
    assert "Duft &quot;Zimt &amp; Nelke&quot; &lt;gross&gt;" in html
    assert "<i>" not in html
