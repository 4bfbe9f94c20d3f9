"""Promotions end at local midnight in Hamburg, summer or winter; moved times are honoured."""

from datetime import UTC, date, datetime, time, timedelta

import pytest
from django.utils import timezone

from automation import jobs
from automation.models import AdGroupAction, Promotion, PromotionAdGroup
from automation.platform.exceptions import TransientAdsError
from automation.promotions import edges as promotions

pytestmark = pytest.mark.django_db(transaction=True)

BERLIN = "Europe/Berlin"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@pytest.mark.parametrize(
    ("local", "instant"),
    [
        ((date(2026, 6, 1), time(0, 0)), "2026-05-31T22:00:00+00:00"),  # summer time, UTC+2
        ((date(2027, 1, 1), time(0, 0)), "2026-12-31T23:00:00+00:00"),  # winter time, UTC+1
        ((date(2026, 3, 29), time(3, 0)), "2026-03-29T01:00:00+00:00"),  # just after the gap
    ],
)
def test_local_wall_time_becomes_the_right_instant(local, instant):
    assert promotions.local_to_instant(*local, BERLIN) == utc(instant)


def test_a_time_in_the_spring_gap_is_refused_saying_why():
    with pytest.raises(promotions.LocalTimeError, match="does not exist.*jump forward"):
        promotions.local_to_instant(date(2026, 3, 29), time(2, 30), BERLIN)


def test_a_time_in_the_autumn_overlap_is_refused_saying_why():
    with pytest.raises(promotions.LocalTimeError, match="happens twice.*00:30 and 01:30 UTC"):
        promotions.local_to_instant(date(2026, 10, 25), time(2, 30), BERLIN)


def test_unknown_time_zone_is_refused():
    with pytest.raises(promotions.LocalTimeError, match="unknown time zone"):
        promotions.local_to_instant(date(2026, 6, 1), time(0, 0), "Europe/Hamborg")


def test_description_shows_local_and_utc_and_how_far():
    now = utc("2026-05-29T08:00:00+00:00")
    text = promotions.describe_instant("ends", date(2026, 6, 1), time(0, 0), BERLIN, now)
    assert text == "ends 2026-06-01 00:00 Europe/Berlin = 2026-05-31 22:00 UTC, in 2 days"


def make_promotion(end_day=date(2026, 6, 1), end_clock=time(0, 0), **fields) -> Promotion:
    promotion = Promotion(
        name="Pfingsten", time_zone=BERLIN, end_date=end_day, end_time=end_clock, **fields
    )
    promotions.save_and_schedule(promotion)
    PromotionAdGroup.objects.create(
        promotion=promotion, customer_id="1234567890", ad_group_id="777"
    )
    return promotion


def scheduled_at(queue, job_id: str) -> datetime | None:
    score = queue.connection.zscore(queue.scheduled_job_registry.key, job_id)
    return None if score is None else datetime.fromtimestamp(score, tz=UTC)


def test_spring_promotion_end_is_scheduled_for_22_utc_not_midnight_utc(queue):
    promotion = make_promotion()
    assert promotion.end_at == utc("2026-05-31T22:00:00+00:00")
    assert scheduled_at(queue, f"promotion-{promotion.pk}-end") == utc("2026-05-31T22:00:00+00:00")


def test_december_end_is_scheduled_for_23_utc(queue):
    promotion = make_promotion(end_day=date(2027, 1, 1))
    assert scheduled_at(queue, f"promotion-{promotion.pk}-end") == utc("2026-12-31T23:00:00+00:00")


def test_a_moved_end_is_honoured_and_the_old_schedule_does_nothing(queue):
    promotion = make_promotion()
    old_instant = promotion.end_at
    promotion.end_date = date(2026, 6, 2)
    promotions.save_and_schedule(promotion)

    new_instant = utc("2026-06-01T22:00:00+00:00")
    assert scheduled_at(queue, f"promotion-{promotion.pk}-end") == new_instant
    assert queue.scheduled_job_registry.count == 1
    # the old job, had it fired anyway, re-reads the promotion and does nothing
    assert promotions.run_edge(promotion.pk, "end", old_instant) == "moved"
    assert not AdGroupAction.objects.exists()
    promotion.refresh_from_db()
    assert promotion.ended_at is None


def test_the_end_pauses_its_ad_groups_once_and_records_lateness(queue):
    promotion = make_promotion()
    result = promotions.run_edge(promotion.pk, "end", promotion.end_at)
    assert result.startswith("ran end")
    assert promotions.run_edge(promotion.pk, "end", promotion.end_at) == "already ran"

    action = AdGroupAction.objects.get()
    assert (action.ad_group_id, action.desired_status, action.source) == (
        "777",
        "PAUSED",
        "promotion",
    )
    promotion.refresh_from_db()
    assert promotion.status == Promotion.Status.ENDED
    assert promotion.end_late_seconds == pytest.approx(
        (promotion.ended_at - promotion.end_at).total_seconds()
    )


def test_a_due_end_runs_in_a_real_worker_with_the_scheduler(queue, run_worker):
    now = timezone.localtime()
    past = now - timedelta(minutes=1)
    promotion = make_promotion(end_day=past.date(), end_clock=past.time().replace(microsecond=0))
    run_worker()
    promotion.refresh_from_db()
    assert promotion.status == Promotion.Status.ENDED
    assert AdGroupAction.objects.get().desired_status == "PAUSED"


def test_minute_check_catches_up_a_missed_end_and_records_how_late(queue):
    promotion = make_promotion()
    queue.scheduled_job_registry.remove(f"promotion-{promotion.pk}-end")  # the scheduler was down
    jobs.catch_up_promotions()
    promotion.refresh_from_db()
    assert promotion.ended_at is not None
    assert promotion.end_late_seconds > 0
    assert AdGroupAction.objects.get().desired_status == "PAUSED"
    assert jobs.catch_up_promotions() == []


def test_a_wholly_missed_promotion_only_ends(queue):
    promotion = make_promotion(start_date=date(2026, 5, 20), start_time=time(9, 0))
    jobs.catch_up_promotions()
    assert list(AdGroupAction.objects.values_list("desired_status", flat=True)) == ["PAUSED"]
    promotion.refresh_from_db()
    assert promotion.started_at is not None


def test_deleting_cancels_the_schedule(queue):
    far = timezone.localtime() + timedelta(days=30)
    promotion = make_promotion(end_day=far.date())
    assert queue.scheduled_job_registry.count == 1
    promotions.delete_and_cancel(promotion)
    assert queue.scheduled_job_registry.count == 0


def test_admin_shows_both_times_and_refuses_a_gap(admin_client, queue):
    form = {
        "name": "Ostern",
        "time_zone": BERLIN,
        "start_date": "2026-03-29",
        "start_time": "02:30",
        "end_date": "2026-06-01",
        "end_time": "00:00",
        "ad_groups-TOTAL_FORMS": "1",
        "ad_groups-INITIAL_FORMS": "0",
        "ad_groups-0-customer_id": "1234567890",
        "ad_groups-0-ad_group_id": "777",
    }
    refused = admin_client.post("/admin/automation/promotion/add/", form)
    assert refused.status_code == 200
    assert "does not exist in Europe/Berlin" in refused.content.decode()
    assert not Promotion.objects.exists()

    form["start_time"] = "03:00"
    saved = admin_client.post("/admin/automation/promotion/add/", form, follow=True)
    page = saved.content.decode()
    assert "ends 2026-06-01 00:00 Europe/Berlin = 2026-05-31 22:00 UTC" in page
    promotion = Promotion.objects.get()
    assert promotion.ad_groups.count() == 1
    assert scheduled_at(queue, f"promotion-{promotion.pk}-end") == utc("2026-05-31T22:00:00+00:00")


def test_admin_refuses_an_overlap_and_an_end_before_the_start(admin_client, queue):
    base = {
        "name": "Herbst",
        "time_zone": BERLIN,
        "ad_groups-TOTAL_FORMS": "0",
        "ad_groups-INITIAL_FORMS": "0",
    }
    overlap = admin_client.post(
        "/admin/automation/promotion/add/", base | {"end_date": "2026-10-25", "end_time": "02:30"}
    )
    assert "happens twice in Europe/Berlin" in overlap.content.decode()
    backwards = admin_client.post(
        "/admin/automation/promotion/add/",
        base
        | {
            "start_date": "2026-11-02",
            "start_time": "10:00",
            "end_date": "2026-11-01",
            "end_time": "10:00",
        },
    )
    assert "The end must come after the start." in backwards.content.decode()
    assert not Promotion.objects.exists()


def test_a_transient_ads_failure_leaves_the_end_to_be_retried(queue, google_ads):
    google_ads.always("777", "rate_limited")  # asks for a longer pause than the in-job cap
    promotion = make_promotion()
    with pytest.raises(TransientAdsError):
        promotions.run_edge(promotion.pk, "end", promotion.end_at)
    promotion.refresh_from_db()
    assert promotion.ended_at is None
    assert jobs.catch_up_promotions()[0].startswith("retry end")  # the minute check tries again

    google_ads._per_ad_group.clear()
    jobs.catch_up_promotions()
    promotion.refresh_from_db()
    assert promotion.ended_at is not None
    assert AdGroupAction.objects.filter(result="applied").get().desired_status == "PAUSED"


def test_a_permanent_ads_failure_ends_the_promotion_with_one_alert(queue, google_ads):
    from django.core import mail

    google_ads.always("777", "permanent")
    promotion = make_promotion()
    promotions.run_edge(promotion.pk, "end", promotion.end_at)
    promotion.refresh_from_db()
    assert promotion.ended_at is not None
    assert "777" in promotion.last_error
    assert len(mail.outbox) == 1


def test_the_start_enables_and_the_end_pauses_its_ad_groups_through_the_rule(queue):
    """Each edge runs at its instant (as the scheduler runs it), and the rule decides then."""
    start = timezone.localdate() + timedelta(days=10)
    promotion = make_promotion(
        start_date=start, start_time=time(9, 0), end_day=start + timedelta(days=7)
    )

    assert promotions.run_edge(promotion.pk, "start", promotion.start_at).startswith("ran start")
    assert promotions.run_edge(promotion.pk, "end", promotion.end_at).startswith("ran end")

    actions = AdGroupAction.objects.order_by("pk").values_list(
        "ad_group_id", "desired_status", "source", "reason"
    )
    assert list(actions) == [
        ("777", "ENABLED", "promotion", "promotion “Pfingsten” is running"),
        ("777", "PAUSED", "promotion", "promotion “Pfingsten” ended"),
    ]


def test_an_ad_group_removed_in_google_ads_is_marked_once_and_the_end_is_done(
    queue, google_ads, settings
):
    """Not a failure to retry: Google Ads refuses every change of a removed ad group, so it
    is marked (one alert) and skipped from then on."""
    from django.core import mail

    from automation.models import AdGroup

    settings.ALERT_EMAILS = ["inhaber@elbkerzen.example"]
    google_ads.always("777", "removed")
    promotion = make_promotion(start_date=date(2026, 5, 20), start_time=time(9, 0))
    promotions.run_edge(promotion.pk, "start", promotion.start_at)
    promotions.run_edge(promotion.pk, "end", promotion.end_at)

    promotion.refresh_from_db()
    assert (promotion.status, promotion.last_error) == (Promotion.Status.ENDED, "")
    assert AdGroup.objects.get(ad_group_id="777").missing == AdGroup.Missing.REMOVED
    assert len(google_ads.requests) == 1  # the start's; the end skipped the marked ad group
    assert [m.subject for m in mail.outbox] == [
        "[Elbkerzen] Ad group ad group 777: removed in Google Ads"
    ]
