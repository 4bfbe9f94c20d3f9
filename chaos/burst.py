"""The mass sell-out burst: after the day, every watched item reports zero within seconds.

A bad CSV import as the safety brake must catch it: first every item is restocked, so every ad
group is enabled (the one removed in Google Ads stays skipped, neither sent nor held); then each
location of each item reports zero, all within a second or two. The brake must let the allowed
pauses through, hold the rest (nothing lost: every delivery ends done) and send exactly one
alert; applying all held changes then pauses what the stock says. The day's 10-minute window
would span the whole compressed day, so the brake is off during the day and on, with a
one-minute window, for the burst; the burst waits until the day's last pause has left that
window.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import requests
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext

from chaos import observe, payloads
from chaos.generator import LevelChange, Send

BRAKE_WINDOW_MINUTES = 1


def _brake_subject() -> str:
    """alerts.brake_engaged's subject, in the language alerts are written in."""
    with translation.override(settings.LANGUAGE_CODE):
        return gettext("[Elbkerzen] Safety brake: pauses held")


@dataclass(frozen=True)
class BurstFacts:
    """What the burst did, for the report."""

    items: int
    ad_groups: int
    allowed: int
    pauses_sent: int
    held: int
    alerts: int
    deliveries: int
    done: int
    open_after_apply: int
    wrong_after_apply: int


def configure_brake(enabled: bool) -> None:
    """Off for the compressed day, on with a one-minute window for the burst."""
    from automation.models import BrakeSettings

    BrakeSettings.objects.update_or_create(
        pk=1, defaults={"enabled": enabled, "window_minutes": BRAKE_WINDOW_MINUTES}
    )


def _send_all(base_url: str, sends: list[Send], t0: float) -> list[str]:
    def post(send: Send) -> str:
        raw = payloads.body(send, t0)
        for _ in range(5):
            try:
                answer = requests.post(
                    base_url + payloads.path(send),
                    data=raw,
                    headers=payloads.headers(send, raw),
                    timeout=10,
                )
            except requests.RequestException:
                time.sleep(0.5)
                continue
            if answer.status_code < 500:
                return send.key
            time.sleep(0.5)
        return send.key

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(post, sends))


def _levels(items: list[int], locations: tuple[int, ...], available: int, at: float) -> list[Send]:
    return [
        Send(
            key=f"burst-{uuid.uuid4()}",
            event_id=f"burst-{uuid.uuid4()}",
            topic="inventory_levels/update",
            event=LevelChange(item, location, available, at),
            at=at,
        )
        for item in items
        for location in locations
    ]


def _wait_window() -> None:
    """Until the day's last sent pause is older than the burst's window."""
    from django.db.models import Max
    from django.utils import timezone

    from automation.models import AdGroupAction

    with observe.db():
        last = AdGroupAction.objects.filter(
            desired_status="PAUSED", result__in=["applied", "dry_run"]
        ).aggregate(last=Max("requested_at"))["last"]
    if last is not None:
        left = BRAKE_WINDOW_MINUTES * 60 + 1 - (timezone.now() - last).total_seconds()
        if left > 0:
            time.sleep(left)


def run(harness: Any, scenario: Any, redis: Any, t0: float, settle_timeout: float) -> BurstFacts:
    """Restock, wait for the window, burst, count, apply all; see the module docstring."""
    from django.test.utils import override_settings

    from automation.google_ads import statuses as ads
    from automation.models import BrakeSettings, Delivery, HeldChange
    from automation.stock import brake, held_changes
    from tests.support.ads_standin import make_test_client

    # Every item, the removed ad group's too: it is skipped, so it is neither paused nor held.
    items = sorted({g.item for g in scenario.watched})
    ad_groups = [g.ad_group_id for g in scenario.watched if not g.broken]
    # Dated when sent, as Shopify dates them: later than every level of the day (whose stream
    # has ended), and not ahead of the clock, which the intake refuses (WEBHOOK_MAX_FUTURE_SECONDS).
    restocked = time.time() - t0
    _send_all(harness.base_url, _levels(items, scenario.locations[:1], 1000, restocked), t0)
    observe.wait_until_idle(redis, settle_timeout)
    _wait_window()
    with observe.db():
        configure_brake(True)
        allowed = min(
            len(ad_groups),
            BrakeSettings.load().allowed_pauses(brake.watched_ad_groups()),
        )
    calls_before = harness.ads.applied_calls
    mails_before = len(harness.mail.snapshot())
    sold_out = max(time.time() - t0, restocked + 0.001)
    keys = _send_all(harness.base_url, _levels(items, scenario.locations, 0, sold_out), t0)
    observe.wait_until_idle(redis, settle_timeout)
    time.sleep(1.0)  # the alert goes out after its commit
    pauses_sent = harness.ads.applied_calls - calls_before
    subject = _brake_subject()
    alerts = sum(subject in mail.subject for mail in harness.mail.snapshot()[mails_before:])
    with observe.db():
        burst_rows = Delivery.objects.filter(webhook_id__in=keys)
        statuses = list(burst_rows.values_list("status", flat=True))
        held = HeldChange.objects.filter(resolution="open").count()
        # The merchant applies all, as the admin's button does (Ads client aimed at the stand-in).
        original = ads.google_client
        ads.google_client = lambda: make_test_client(harness.ads)
        try:
            with override_settings(ADS_BACKEND="google"):
                for _ in range(3):  # a transient failure leaves its change open: again
                    if not held_changes.apply(held_changes.open_changes(), None).failures:
                        break
        finally:
            ads.google_client = original
        open_after = HeldChange.objects.filter(resolution="open").count()
    google = harness.ads.real_statuses()
    wrong = sum(google.get(ad_group) != "PAUSED" for ad_group in ad_groups)
    return BurstFacts(
        items=len(items),
        ad_groups=len(ad_groups),
        allowed=allowed,
        pauses_sent=pauses_sent,
        held=held,
        alerts=alerts,
        deliveries=len(keys),
        done=sum(status == "done" for status in statuses),
        open_after_apply=open_after,
        wrong_after_apply=wrong,
    )
