"""A burst of stock levels is worked off in a few jobs: the job that claims one delivery takes
the waiting ones of its shop and topic along (the worker keeps up with a burst), with the same
outcomes, guards and retries as one job per delivery."""

import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.core import mail
from django.db import connection, connections, transaction
from django.utils import timezone

from automation.intake import backlog, handling, inbox, sweeper
from automation.models import AdGroupAction, Delivery, StockLevel
from automation.platform import queues
from automation.platform.exceptions import TransientAdsError
from tests.support.signing import post_shopify
from tests.support.watching import watch

pytestmark = pytest.mark.django_db(transaction=True)

ITEM = 808950810
OTHER_ITEM = 808950811
STORE = 24826418
WAREHOUSE = 24826419
TOPIC = "inventory_levels/update"
Status = Delivery.Status


@pytest.fixture
def winterzauber():
    return watch(ITEM, "555", customer_id="1234567890")


def send(client, available, minute: int, *, location=STORE, item=ITEM, **headers) -> Delivery:
    post_shopify(
        client,
        {
            "inventory_item_id": item,
            "location_id": location,
            "available": available,
            "updated_at": f"2026-11-26T16:{minute:02d}:00+01:00",
        },
        topic=TOPIC,
        **headers,
    )
    return Delivery.objects.order_by("-pk").first()


def actions() -> list[str]:
    return list(AdGroupAction.objects.order_by("pk").values_list("desired_status", flat=True))


def refreshed(*deliveries: Delivery) -> list[Delivery]:
    return [Delivery.objects.get(pk=d.pk) for d in deliveries]


def test_a_burst_is_worked_off_in_batches_of_the_configured_size(
    client, run_worker, winterzauber, settings
):
    """Seven levels, batches of three: three jobs do the work (one commit per batch: one
    processed_at each), the other four find theirs taken; each level claimed once."""
    settings.DELIVERY_BATCH_SIZE = 3
    sent = [send(client, available, minute) for minute, available in enumerate(range(9, 2, -1))]
    run_worker()

    done = refreshed(*sent)
    assert [d.status for d in done] == [Status.DONE] * 7
    assert [d.attempts for d in done] == [1] * 7
    assert sorted(Counter(d.processed_at for d in done).values()) == [1, 3, 3]
    assert StockLevel.objects.get().available == 3
    assert actions() == ["ENABLED"]  # the first batch's newest level; then unchanged


def test_only_the_newest_level_of_a_batch_sets_the_ad_groups(client, run_worker, winterzauber):
    """12 at 16:10, then sold out at 16:12, both waiting: one pause is sent, no enable first."""
    restocked = send(client, 12, 10)
    sold_out = send(client, 0, 12)
    run_worker()

    first, last = refreshed(restocked, sold_out)
    assert actions() == ["PAUSED"]
    assert AdGroupAction.objects.get().delivery_id == sold_out.pk
    assert first.status == Status.DONE
    # A follower names the product's stock the batch decided with (the stock path no longer
    # counts a total per stored level).
    assert first.result == (
        f"total available 0; ad groups set with delivery {sold_out.pk}, "
        "the last stock level of its batch"
    )
    assert last.status == Status.DONE
    assert last.result == "total available 0"


def test_an_older_level_in_the_same_batch_is_stale(client, run_worker, winterzauber):
    """Thursday's race inside one batch: 16:12 arrives before 16:10."""
    newer = send(client, 12, 12)
    older = send(client, 0, 10)
    run_worker()

    newer, older = refreshed(newer, older)
    assert newer.status == Status.DONE
    assert older.status == Status.STALE
    assert older.result.startswith("newer levels are stored")
    assert StockLevel.objects.get().available == 12
    assert actions() == ["ENABLED"]


def test_levels_of_several_locations_add_up_in_one_batch(client, run_worker, winterzauber):
    store = send(client, 0, 10, location=STORE)
    warehouse = send(client, 5, 11, location=WAREHOUSE)
    run_worker()

    store, warehouse = refreshed(store, warehouse)
    assert store.result == (
        f"total available 5; ad groups set with delivery {warehouse.pk}, "
        "the last stock level of its batch"
    )
    assert warehouse.result == "total available 5"
    assert actions() == ["ENABLED"]


def test_items_of_one_batch_are_decided_each_on_its_own(client, run_worker, winterzauber):
    watch(OTHER_ITEM, "556", label="Nordlicht", customer_id="1234567890")
    mine = send(client, 0, 10)
    other = send(client, 7, 10, item=OTHER_ITEM)
    unwatched = send(client, 3, 10, item=OTHER_ITEM + 1)
    run_worker()

    mine, other, unwatched = refreshed(mine, other, unwatched)
    assert (mine.status, other.status) == (Status.DONE, Status.DONE)
    assert unwatched.status == Status.IGNORED
    assert unwatched.result == f"inventory item {OTHER_ITEM + 1} not watched"
    assert dict(AdGroupAction.objects.values_list("ad_group_id", "desired_status")) == {
        "555": "PAUSED",
        "556": "ENABLED",
    }
    assert mine.processed_at != other.processed_at  # one transaction per item


def test_a_malformed_level_in_a_batch_is_invalid_and_the_rest_go_on(
    client, run_worker, winterzauber
):
    good = send(client, 0, 10)
    post_shopify(client, {"inventory_item_id": ITEM, "location_id": STORE}, topic=TOPIC)
    bad = Delivery.objects.order_by("-pk").first()
    run_worker()

    good, bad = refreshed(good, bad)
    assert good.status == Status.DONE
    assert bad.status == Status.INVALID
    assert "available" in bad.last_error
    assert actions() == ["PAUSED"]


def test_the_leaders_ads_error_is_retried_and_its_followers_stay_done(
    client, queue, winterzauber, google_ads
):
    """The leader's own level decides and its Ads call fails: it raises for RQ's retry, the
    earlier level (the follower) is done: its status would have been outdated anyway."""
    google_ads.script([], default="transient")
    follower = send(client, 5, 10)
    leader = send(client, 0, 12)
    with pytest.raises(TransientAdsError, match="TRANSIENT_ERROR"):
        inbox.process(leader.pk, final_attempt=False)

    follower, leader = refreshed(follower, leader)
    assert leader.status == Status.FAILED
    assert follower.status == Status.DONE
    assert f"set with delivery {leader.pk}" in follower.result
    assert StockLevel.objects.get().available == 0  # the levels committed
    assert actions() == ["PAUSED"]
    assert AdGroupAction.objects.get().result == AdGroupAction.Result.FAILED


def test_a_followers_ads_error_leaves_it_failed_for_its_own_job(
    client, queue, run_worker, winterzauber, google_ads
):
    """The follower's newer level decides and fails: it goes `failed` (one attempt counted);
    the leader is done. Its own job, still queued, retries it and the call then goes through."""
    google_ads.script(["transient"] * 8)
    leader = send(client, 5, 10)
    follower = send(client, 0, 12)
    assert inbox.process(leader.pk, final_attempt=False) == Status.DONE

    leader, follower = refreshed(leader, follower)
    assert leader.result.startswith(f"total available 0; ad groups set with delivery {follower.pk}")
    assert follower.status == Status.FAILED
    assert follower.attempts == 1
    assert "TransientAdsError" in follower.last_error

    run_worker()  # both jobs: the leader's finds its row finished, the follower's retries
    follower = Delivery.objects.get(pk=follower.pk)
    assert follower.status == Status.DONE
    assert follower.attempts == 2
    assert google_ads.statuses["555"] == "PAUSED"


def test_a_followers_failure_is_resumed_by_the_sweeper_when_its_job_has_run(
    client, queue, run_worker, winterzauber, google_ads, settings
):
    """Its own job already ran (found it taken): the sweeper resumes the `failed` row once its
    retry interval has passed, with the retries it has left."""
    settings.DELIVERY_SWEEP_AFTER = 0
    google_ads.script(["transient"] * (settings.ADS_RETRIES + 1))
    leader = send(client, 5, 10)
    follower = send(client, 0, 12)
    inbox.process(leader.pk, final_attempt=False)
    queue.empty()  # both jobs have run

    Delivery.objects.filter(pk=follower.pk).update(
        processed_at=timezone.now() - timedelta(seconds=settings.DELIVERY_RETRY_INTERVALS[0] + 1)
    )
    assert sweeper.sweep() == 1
    run_worker()
    follower = Delivery.objects.get(pk=follower.pk)
    assert (follower.status, follower.attempts) == (Status.DONE, 2)
    assert google_ads.statuses["555"] == "PAUSED"


def test_the_leaders_last_attempt_goes_dead_with_one_alert(client, queue, winterzauber, google_ads):
    google_ads.script([], default="transient")
    follower = send(client, 5, 10)
    leader = send(client, 0, 12)
    with pytest.raises(TransientAdsError):  # RQ records the last attempt as failed
        inbox.process(leader.pk, final_attempt=True)

    follower, leader = refreshed(follower, leader)
    assert (leader.status, follower.status) == (Status.DEAD, Status.DONE)
    assert len([m for m in mail.outbox if "Delivery gave up" in m.subject]) == 1


def test_a_failing_group_fails_its_followers_and_raises_the_leaders_error(client, queue):
    """A batch handler that raises: nothing of the group commits, the follower is `failed`
    (its retry comes from its own job or the sweeper), the leader's error goes to RQ."""
    seen = []

    def broken(batch):
        seen.append([delivery.pk for _, delivery in batch])
        StockLevel.objects.create(
            inventory_item_id=1, location_id=1, available=1, updated_at="2026-11-26T15:00Z"
        )
        raise RuntimeError("batch handler failed on purpose")

    handling.BATCH_HANDLERS[("shopify", "test/batch")] = handling.Batching(broken, key=lambda _: 0)
    try:
        post_shopify(client, {"id": 1}, topic="test/batch")
        post_shopify(client, {"id": 2}, topic="test/batch")
        leader, follower = Delivery.objects.order_by("pk")
        with pytest.raises(RuntimeError, match="on purpose"):
            inbox.process(leader.pk, final_attempt=False)
    finally:
        handling.BATCH_HANDLERS.pop(("shopify", "test/batch"))

    leader, follower = refreshed(leader, follower)
    assert seen == [[leader.pk, follower.pk]]
    assert (leader.status, follower.status) == (Status.FAILED, Status.FAILED)
    assert "batch handler failed on purpose" in follower.last_error
    assert not StockLevel.objects.exists()  # the group's transaction rolled back


def test_a_skipped_job_takes_no_backlog(client, queue, winterzauber):
    """A job whose own delivery is finished claims nothing: the waiting rows keep their jobs."""
    finished = send(client, 5, 10)
    waiting = send(client, 0, 12)
    Delivery.objects.filter(pk=finished.pk).update(status=Status.DONE)

    assert inbox.process(finished.pk, final_attempt=False) == "skipped"
    assert Delivery.objects.get(pk=waiting.pk).status == Status.RECEIVED


def test_other_topics_and_shops_are_not_taken_along(client, queue, winterzauber):
    leader = send(client, 5, 10)
    same = Delivery.objects.get(pk=leader.pk)
    other_shop = Delivery.objects.create(
        source=same.source,
        shop_domain="nordlicht.myshopify.com",
        topic=TOPIC,
        webhook_id="other-shop",
        body=bytes(same.body),
    )
    post_shopify(client, {"id": 1}, topic="products/update")
    other_topic = Delivery.objects.order_by("-pk").first()

    inbox.process(leader.pk, final_attempt=False)
    assert [d.status for d in refreshed(other_shop, other_topic)] == [Status.RECEIVED] * 2


def test_batch_size_one_processes_each_delivery_in_its_own_job(
    client, run_worker, winterzauber, settings
):
    settings.DELIVERY_BATCH_SIZE = 1
    restocked = send(client, 12, 10)
    sold_out = send(client, 0, 12)
    run_worker()

    assert actions() == ["ENABLED", "PAUSED"]
    restocked, sold_out = refreshed(restocked, sold_out)
    assert restocked.result == "total available 12"
    assert restocked.processed_at != sold_out.processed_at


@pytest.mark.postgres(reason="SKIP LOCKED and a second transaction holding a row")
def test_a_row_another_job_is_claiming_is_skipped_not_waited_for(
    client, queue, winterzauber, requires_postgres
):
    """SKIP LOCKED: while another transaction holds a waiting row, the backlog claim passes it
    by at once instead of waiting for that transaction."""
    leader = send(client, 5, 10)
    held = send(client, 4, 11)
    free = send(client, 3, 12)
    locked, release = threading.Event(), threading.Event()

    def hold_row() -> None:
        try:
            with transaction.atomic():
                Delivery.objects.select_for_update().get(pk=held.pk)
                locked.set()
                release.wait(10)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_row)
    holder.start()
    try:
        assert locked.wait(10)
        claimed = backlog.claim_backlog(inbox.claim(leader.pk))
    finally:
        release.set()
        holder.join()
    assert [d.pk for d in claimed] == [free.pk]
    assert Delivery.objects.get(pk=held.pk).status == Status.RECEIVED
    connection.close()


def test_an_untracked_level_in_a_batch_acts_on_nothing_as_it_would_alone(
    client, run_worker, winterzauber
):
    """10 in the store, then the store's tracking switched off (null, counts 0): alone, the
    first enables and the second is stored without action; in one batch the same."""
    tracked = send(client, 10, 10)
    untracked = send(client, None, 12)
    run_worker()

    tracked, untracked = refreshed(tracked, untracked)
    assert actions() == ["ENABLED"]
    assert AdGroupAction.objects.get().delivery_id == tracked.pk
    assert (tracked.status, tracked.result) == (Status.DONE, "total available 10")
    assert untracked.status == Status.IGNORED
    assert StockLevel.objects.get().available is None


def test_an_untracked_level_at_another_location_after_the_last_tracked_one_does_not_decide(
    client, run_worker, winterzauber
):
    """5 in the warehouse; then, waiting together, the store sold out (0) and the warehouse's
    tracking switched off (null): alone, the first keeps the ads running (0 + 5) and the
    second is stored without action; in one batch the same."""
    send(client, 5, 9, location=WAREHOUSE)
    run_worker()
    sold_out = send(client, 0, 10, location=STORE)
    untracked = send(client, None, 11, location=WAREHOUSE)
    run_worker()

    sold_out, untracked = refreshed(sold_out, untracked)
    assert actions() == ["ENABLED"]  # the first level's; the batch sent nothing
    assert (sold_out.status, sold_out.result) == (
        Status.DONE,
        "total available 5; ad group 555 ENABLED unchanged",
    )
    assert untracked.status == Status.IGNORED
    assert StockLevel.objects.get(location_id=WAREHOUSE).available is None


def test_a_follower_whose_body_cannot_be_read_fails_instead_of_staying_processing(
    client, queue, winterzauber
):
    """A replayed delivery whose body the retention already dropped (NULL): its parse raises
    TypeError, not InvalidPayload; it is recorded like any failure, the batch goes on."""
    leader = send(client, 5, 10)
    bodiless = send(client, 0, 12)
    Delivery.objects.filter(pk=bodiless.pk).update(body=None)

    assert inbox.process(leader.pk, final_attempt=False) == Status.DONE
    bodiless = Delivery.objects.get(pk=bodiless.pk)
    assert bodiless.status == Status.FAILED
    assert "TypeError" in bodiless.last_error


def test_a_followers_permanent_ads_error_goes_dead_with_one_alert(
    client, queue, winterzauber, google_ads
):
    google_ads.always("555", "permanent")
    leader = send(client, 5, 10)
    follower = send(client, 0, 12)
    assert inbox.process(leader.pk, final_attempt=False) == Status.DONE

    assert Delivery.objects.get(pk=follower.pk).status == Status.DEAD
    assert len([m for m in mail.outbox if "Delivery gave up" in m.subject]) == 1


def test_items_the_jobs_time_does_not_allow_go_back_counted(
    client, queue, winterzauber, monkeypatch
):
    """No time left for another Ads call: the job's own item is done, another item's delivery
    goes back to `received` for its own job, the claim counted as an attempt."""
    monkeypatch.setattr(queues, "job_deadline", lambda: time.monotonic())
    other = send(client, 3, 9, item=OTHER_ITEM)
    leader = send(client, 5, 10)
    same_item = send(client, 0, 12)

    assert inbox.process(leader.pk, final_attempt=False) == Status.DONE
    other, same_item = refreshed(other, same_item)
    assert (other.status, other.attempts, other.processing_started_at) == (Status.RECEIVED, 1, None)
    assert same_item.status == Status.DONE


def test_a_job_that_stops_on_an_error_hands_its_backlog_back(
    client, queue, winterzauber, monkeypatch
):
    """Whatever stops the job between claiming and finishing (here: reading its deadline),
    the rows it took along do not stay `processing` until the sweeper's timeout."""

    def broken_deadline():
        raise RuntimeError("job stopped on purpose")

    monkeypatch.setattr(queues, "job_deadline", broken_deadline)
    leader = send(client, 5, 10)
    follower = send(client, 0, 12)
    with pytest.raises(RuntimeError, match="on purpose"):
        inbox.process(leader.pk, final_attempt=False)

    follower = Delivery.objects.get(pk=follower.pk)
    assert (follower.status, follower.attempts) == (Status.RECEIVED, 1)
