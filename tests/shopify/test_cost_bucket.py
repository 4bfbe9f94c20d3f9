"""The Shopify cost bucket on its own: what it learns from throttleStatus and how long it waits.

Pure arithmetic on a fake clock (no HTTP): Shopify's numbers for the Standard plan are a
1,000-point bucket refilled at 100 points per second.
"""

import pytest

from automation.shopify.transport import CostBucket


class FakeClock:
    """Monotonic time that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def status(maximum: float = 1000, available: float = 1000, rate: float = 100) -> dict:
    return {"maximumAvailable": maximum, "currentlyAvailable": available, "restoreRate": rate}


def test_an_unknown_bucket_never_waits_and_limits_by_the_cap_alone(clock):
    bucket = CostBucket(clock)
    assert bucket.wait_for(10_000) == 0.0
    assert bucket.limit(1000) == 1000


def test_it_waits_exactly_until_the_refill_covers_the_cost(clock):
    bucket = CostBucket(clock)
    bucket.observe(status(available=200))
    # 500 requested, 200 there, 100 per second: 3 s
    assert bucket.wait_for(500) == pytest.approx(3.0)
    clock.now += 1.0
    assert bucket.wait_for(500) == pytest.approx(2.0)
    clock.now += 2.0
    assert bucket.wait_for(500) == 0.0


def test_enough_now_is_no_wait(clock):
    bucket = CostBucket(clock)
    bucket.observe(status(available=600))
    assert bucket.wait_for(600) == 0.0
    assert bucket.wait_for(0) == 0.0


def test_the_refill_stops_at_the_bucket_size_and_a_cost_above_it_waits_for_a_full_bucket(clock):
    bucket = CostBucket(clock)
    bucket.observe(status(maximum=200, available=0, rate=50))
    clock.now += 100.0  # long enough to overflow, were there no maximum
    assert bucket.wait_for(200) == 0.0
    bucket.observe(status(maximum=200, available=0, rate=50))
    # a query larger than the bucket can never fit: wait for a full bucket, not forever
    assert bucket.wait_for(1000) == pytest.approx(4.0)


def test_the_limit_is_the_smaller_of_the_cap_and_the_bucket(clock):
    bucket = CostBucket(clock)
    bucket.observe(status(maximum=400.0))
    assert bucket.limit(1000) == 400
    assert bucket.limit(250) == 250


def test_each_report_replaces_the_last_and_restarts_the_refill(clock):
    bucket = CostBucket(clock)
    bucket.observe(status(available=1000))
    clock.now += 5.0
    bucket.observe(status(available=100))  # another worker spent it meanwhile
    assert bucket.wait_for(300) == pytest.approx(2.0)


@pytest.mark.parametrize(
    "reported",
    [
        None,
        "THROTTLED",
        {"maximumAvailable": 1000, "currentlyAvailable": 10},  # no restoreRate
        {"maximumAvailable": "many", "currentlyAvailable": 10, "restoreRate": 100},
        {"maximumAvailable": None, "currentlyAvailable": 10, "restoreRate": 100},
    ],
)
def test_a_malformed_status_is_ignored_and_the_last_good_one_kept(clock, reported):
    bucket = CostBucket(clock)
    bucket.observe(status(available=0))
    bucket.observe(reported)
    assert bucket.wait_for(100) == pytest.approx(1.0)


def test_a_bucket_that_does_not_refill_never_waits(clock):
    # restoreRate 0 would mean waiting forever; the THROTTLED path handles that case instead
    bucket = CostBucket(clock)
    bucket.observe(status(available=0, rate=0))
    assert bucket.wait_for(100) == 0.0
