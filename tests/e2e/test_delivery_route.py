"""One delivery's route through the house: each leg (the request, each job) passes every
station once, from the webhook view to the Google Ads call and to the sent mail.

The route is recorded while the delivery runs (tests/support/route.py says what counts as a
station); a module at two places of a leg is one the delivery came back to after leaving it.
"""

from email import message_from_bytes
from email.policy import default as default_policy

import pytest

from automation.models import AdGroupAction, Delivery, ReminderDecision
from tests.google_ads.test_inventory_end_to_end import SOLD_OUT
from tests.reminders.test_checkouts import checkout_body
from tests.support.route import Stay, route
from tests.support.signing import post_shopify
from tests.support.watching import watch

pytestmark = pytest.mark.django_db(transaction=True)

INTAKE = ["automation.intake.views", "automation.intake.sources.shopify", "automation.intake.inbox"]


def _worked(legs: list[Stay]) -> list[Stay]:
    """The legs that did something with the delivery (a job entry point that only looked)."""
    return [leg for leg in legs if leg.children]


def _in_order(leg: Stay, stations: list[str]) -> bool:
    visited = iter(leg.modules())
    return all(station in visited for station in stations)


def _followed(client, run_worker, body: dict, topic: str) -> tuple[Stay, list[Stay]]:
    """The intake's leg and the jobs' legs of one signed delivery, each passing a station once."""
    with route() as legs:
        post_shopify(client, body, topic=topic)
        run_worker()
    intake, *jobs = _worked(legs)
    assert intake.modules() == INTAKE, "\n".join(intake.lines())
    for leg in jobs:
        assert leg.returns() == set(), "\n".join(leg.lines())
    # The request and the first job meet in the inbox only: it stores the delivery, then claims it.
    assert set(intake.modules()) & set(jobs[0].modules()) == {"automation.intake.inbox"}
    return intake, jobs


def test_an_inventory_delivery_goes_from_the_view_to_the_ads_call_without_coming_back(
    client, run_worker, google_ads
):
    watch(808950810, "555", customer_id="1234567890")
    _, (job,) = _followed(client, run_worker, SOLD_OUT, "inventory_levels/update")

    assert Delivery.objects.get().status == Delivery.Status.DONE
    assert AdGroupAction.objects.get().result == "applied"
    assert len(google_ads.requests) == 1
    assert _in_order(
        job,
        [
            "automation.jobs",
            "automation.intake.inbox",
            "automation.intake.sources.events",
            "automation.intake.sources.shopify_inventory",
            "automation.stock.handlers",
            "automation.stock.apply",
            "automation.stock.rule",
            "automation.google_ads.statuses",
            "automation.google_ads.adapter",
        ],
    ), "\n".join(job.lines())


@pytest.mark.usefixtures("not_bought")
def test_a_checkout_goes_from_the_view_to_the_sent_mail_without_coming_back(
    client, run_worker, smtp_server
):
    _, (delivery_job, evaluation_job) = _followed(
        client, run_worker, checkout_body(), "checkouts/update"
    )

    (raw,) = smtp_server.messages
    assert message_from_bytes(raw, policy=default_policy)["To"] == "kundin@example.com"
    assert ReminderDecision.objects.get().sent_at is not None
    assert _in_order(
        delivery_job,
        [
            "automation.jobs",
            "automation.intake.inbox",
            "automation.intake.sources.events",
            "automation.intake.sources.shopify_checkouts",
            "automation.reminders.handlers",
        ],
    ), "\n".join(delivery_job.lines())
    evaluation = evaluation_job.children["automation.reminders.checkouts"]
    assert {
        "automation.reminders.rules",
        "automation.reminders.paid_check",
        "automation.reminders.mail",
    } <= set(evaluation.children), "\n".join(evaluation_job.lines())
    assert any(
        module.startswith("automation.shopify.")
        for module in evaluation.children["automation.reminders.paid_check"].children
    ), "\n".join(evaluation_job.lines())


def test_a_module_reached_from_two_stations_is_reported():
    leg = Stay("automation.jobs")
    leg.children["automation.a"] = Stay("automation.a", {"automation.c": Stay("automation.c")})
    leg.children["automation.b"] = Stay("automation.b", {"automation.c": Stay("automation.c")})

    assert leg.returns() == {"automation.c"}
