"""Alerts nobody would otherwise see, at most one mail per kind and hour, with the count.

Given 5 deliveries given up within an hour, the merchant gets one mail at once (the first) and
one more when the hour is over, saying 4 more were given up. A reminder evaluation and a
promotion end that fail until RQ's retries are spent each send one alert.
"""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.db import connection
from django.utils import timezone, translation
from rq.registry import FailedJobRegistry

from automation import jobs
from automation.models import AlertSlot, BrakeEpisode, Delivery, Promotion, ReminderDecision
from automation.platform import alerts
from tests.promotions.test_edges import make_promotion
from tests.reminders.test_checkouts import checkout_body
from tests.support.signing import post_shopify

pytestmark = pytest.mark.django_db(transaction=True)


def _backdate_last_mail(kind: str, by: timedelta = alerts.ALERT_WINDOW) -> None:
    AlertSlot.objects.filter(kind=kind).update(mailed_at=timezone.now() - by)


def test_five_dead_deliveries_in_an_hour_mail_once_then_once_with_the_other_four(
    client, run_worker, handler
):
    handler.behaviour = "fail"
    for n in range(5):
        post_shopify(client, {"id": n})
    run_worker()

    assert Delivery.objects.filter(status=Delivery.Status.DEAD).count() == 5
    (first,) = mail.outbox
    assert "Delivery gave up" in first.subject
    assert AlertSlot.objects.get(kind=alerts.DELIVERY_DEAD).held == 4

    assert alerts.send_held() == 0, "within the hour nothing more is mailed"
    assert len(mail.outbox) == 1

    _backdate_last_mail(alerts.DELIVERY_DEAD)
    assert jobs.send_held_alerts() == 1
    second = mail.outbox[1]
    assert second.subject == "[Elbkerzen] 4 × deliveries given up"
    assert "4 × deliveries given up" in second.body
    assert "/admin/automation/delivery/" in second.body
    assert alerts.send_held() == 0, "the held ones are mailed once"

    _backdate_last_mail(alerts.DELIVERY_DEAD)
    handler.behaviour = "fail"
    post_shopify(client, {"id": 6})
    run_worker()
    assert len(mail.outbox) == 3
    assert "more" not in mail.outbox[2].body, "a fresh hour: this one alone"


def test_a_new_alert_after_the_hour_counts_the_ones_held_back(client, run_worker, handler):
    handler.behaviour = "fail"
    for n in range(3):
        post_shopify(client, {"id": n})
    run_worker()
    _backdate_last_mail(alerts.DELIVERY_DEAD)
    post_shopify(client, {"id": 3})
    run_worker()

    assert len(mail.outbox) == 2
    assert "2 more (deliveries given up) happened since the last mail" in mail.outbox[1].body
    assert AlertSlot.objects.get(kind=alerts.DELIVERY_DEAD).held == 0


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_of_workers_deciding_at_once_exactly_one_mails():
    racers = 8
    barrier = threading.Barrier(racers)
    results: list[int] = []

    def race() -> None:
        try:
            barrier.wait()
            results.append(alerts.claim_mail("race"))
        finally:
            connection.close()

    threads = [threading.Thread(target=race) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(results) == [0] * (racers - 1) + [1]
    assert AlertSlot.objects.get(kind="race").held == racers - 1


def test_a_reminder_whose_retries_are_spent_sends_one_alert(
    client, run_worker, settings, not_bought
):
    settings.EMAIL_BACKEND = "tests.support.mail_backends.AlertsOnlyBackend"
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()

    decision = ReminderDecision.objects.get()
    assert decision.sent_at is None
    assert "ConnectionRefusedError" in decision.error
    (alert,) = mail.outbox
    assert alert.to == settings.ALERT_EMAILS
    assert alert.subject == f"[Elbkerzen] Reminder not sent: checkout {decision.checkout_id}"
    assert "ConnectionRefusedError" in alert.body


def test_a_promotion_end_failing_transiently_until_its_retries_are_spent_alerts_once(
    queue, run_worker, google_ads
):
    google_ads.always("777", "rate_limited")
    promotion = make_promotion()  # its end is in the past: due at once
    run_worker()

    promotion.refresh_from_db()
    assert promotion.ended_at is None
    assert FailedJobRegistry(queue=queue).count == 1, "RQ gave up"
    (alert,) = mail.outbox
    assert alert.subject == "[Elbkerzen] Promotion Pfingsten has not ended yet"
    assert "TransientAdsError" in alert.body
    assert f"/admin/automation/promotion/{promotion.pk}/" in alert.body

    assert jobs.catch_up_promotions()[0].startswith("retry end")  # it keeps trying, quietly
    assert len(mail.outbox) == 1


def test_no_promotion_alert_once_the_minute_check_switched_it(queue, run_worker, google_ads):
    promotion = make_promotion()
    Promotion.objects.filter(pk=promotion.pk).update(ended_at=timezone.now())

    alerts.promotion_failed(promotion.pk, "end", "TransientAdsError: try later")

    assert not mail.outbox


def test_the_brake_alert_is_german_whatever_language_caused_it(settings):
    settings.LANGUAGE_CODE = "de"
    episode = BrakeEpisode.objects.create(
        started_at=datetime(2026, 12, 1, 14, 5, tzinfo=UTC), reason="7 von 20 Pausen in 10 Minuten"
    )
    with translation.override("en"):  # an English admin page engaged it
        alerts.brake_engaged(episode.pk)

    (alert,) = mail.outbox
    assert alert.subject == "[Elbkerzen] Notbremse: Pausen zurückgehalten"
    assert alert.body.startswith(
        "Die Notbremse hat am 01.12.2026 15:05 gegriffen: 7 von 20 Pausen in 10 Minuten.\n"
    )
    assert "Ihre Anzeigen laufen weiter" in alert.body
    assert "/admin/automation/heldchange/" in alert.body
    for english in ("safety brake", "Further pauses", "ads keep running"):
        assert english not in alert.body


def test_a_dead_delivery_alert_is_german_in_a_german_shop(client, run_worker, handler, settings):
    settings.LANGUAGE_CODE = "de"
    handler.behaviour = "fail"
    post_shopify(client, {"id": 1})
    run_worker()

    (alert,) = mail.outbox
    delivery = Delivery.objects.get()
    assert alert.subject == f"[Elbkerzen] Zustellung aufgegeben: shopify test/topic #{delivery.pk}"
    assert "wurde nach 6 Versuchen aufgegeben." in alert.body
    assert "Fehler:      RuntimeError: handler failed on purpose" in alert.body


def test_an_alert_that_could_not_be_mailed_is_counted_into_the_next_mail(settings):
    settings.ALERT_EMAILS = []  # nobody to mail: the alert is not lost, it waits
    alerts.reminder_failed(41, "ConnectionRefusedError: SMTP server refused the recipient")
    assert not mail.outbox
    assert AlertSlot.objects.get(kind=alerts.REMINDER_FAILED).held == 1

    settings.ALERT_EMAILS = ["merchant@elbkerzen.example"]
    _backdate_last_mail(alerts.REMINDER_FAILED)
    assert alerts.send_held() == 1
    (held,) = mail.outbox
    assert held.subject == "[Elbkerzen] 1 × reminder not sent"
