"""What reminders really do, on PostgreSQL: the holdout in the evaluation, orders attributed to
decisions (once, however often they arrive), measured rates deciding once there are enough, and
the numbers on the dashboard and in the API."""

import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.core import mail
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from automation.intake.sources.checkout_version import CheckoutVersion
from automation.models import (
    CheckoutState,
    DashboardSettings,
    ReminderDecision,
    ReminderSettings,
    SuppressedAddress,
)
from automation.models.dashboard import DEFAULT_MANUAL_CHECK_HOURS
from automation.reminders import attribution, checkouts, handlers
from automation.reminders.rules import (
    DEFAULT_ATTRIBUTION_WINDOW_DAYS,
    DEFAULT_HOLDOUT_SHARE,
    DEFAULT_MIN_DECISIONS_PER_ARM,
    holdout_draw,
    in_holdout,
)
from automation.ui.dashboard import format as fmt
from automation.ui.dashboard import selectors
from tests.support import people
from tests.support.reminder_shop import reminder_shop  # noqa: F401 (the `shop` fixture)
from tests.support.signing import post_shopify, post_stripe

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]

SAMPLES = Path(checkouts.__file__).parents[1] / "samples"
EMAIL = "kundin@example.com"
RECOVERY_URL = "https://elbkerzen.myshopify.com/60673655038/checkouts/ac/x/recover"
WINDOW = timedelta(days=DEFAULT_ATTRIBUTION_WINDOW_DAYS)
LINES = [
    {
        "title": "Winterzauber",
        "product_id": 632910392,
        "variant_id": 808950810,
        "sku": "WZ-24",
        "vendor": "Elbkerzen",
        "quantity": 1,
        "price": "40.00",
    }
]


def token_drawn(held: bool, prefix: str = "t") -> str:
    """The first token `prefix-n` the default draw holds out (or not)."""
    return next(
        token
        for n in range(1000)
        if in_holdout("shopify", token := f"{prefix}-{n}", "", DEFAULT_HOLDOUT_SHARE) == held
    )


def checkout(token: str, *, email: str = EMAIL, consent: bool = True, hours_ago: float = 2):
    version = CheckoutVersion(
        source="shopify",
        token=token,
        updated_at=timezone.now() - timedelta(hours=hours_ago),
        shop_domain="elbkerzen.myshopify.com",
        email=email,
        accepts_marketing=consent,
        recovery_url=RECOVERY_URL,
        total_price=Decimal("40.00"),
        currency="EUR",
        line_items=LINES,
    )
    return handlers.store_checkout(version)


def evaluate(state: CheckoutState) -> str:
    return checkouts.evaluate(state.pk, state.updated_at)


def order_body(*, order_id: int, token: str | None, email: str = EMAIL, total="40.00") -> dict:
    body = json.loads((SAMPLES / "shopify/orders_create.json").read_text())
    body.update(id=order_id, admin_graphql_api_id=f"gid://shopify/Order/{order_id}")
    body.update(email=email, total_price=total, created_at=timezone.now().isoformat())
    body["customer"]["email"] = email
    body["checkout_token"] = token
    return body


# --- the holdout in the evaluation --------------------------------------------------------


def test_a_held_out_checkout_gets_no_mail_and_says_why(shop):
    # given a consenting checkout the draw holds out
    state = checkout(token_drawn(True))

    # when it is evaluated (twice: a retry draws the same)
    assert evaluate(state) == "holdout"
    assert evaluate(state) == "skipped: claim for this checkout already taken"

    # then no mail, one holdout decision with what it would have sent and the numbers used
    assert not mail.outbox
    decision = ReminderDecision.objects.get(arm="holdout")
    assert decision.reason == (
        "holdout: drawn for the control group (10 %); would have sent reminder with discount"
    )
    assert decision.reason_note["code"] == "holdout_drawn"
    assert decision.inputs["would_send"] == "discount"
    assert decision.inputs["p0"] == "0.0400"
    assert decision.inputs["probabilities_from"] == "configured"
    assert decision.sent_at is None


def test_a_checkout_the_draw_keeps_gets_its_reminder(shop):
    state = checkout(token_drawn(False))

    assert evaluate(state) == "sent discount"
    assert len(mail.outbox) == 1


def test_without_a_holdout_share_nobody_is_held_out(shop):
    shop.holdout_share = Decimal(0)
    shop.save()

    assert evaluate(checkout(token_drawn(True))) == "sent discount"


@pytest.mark.parametrize(
    ("why", "reason"),
    [("no consent", "no marketing consent (UWG §7)"), ("unsubscribed", "address unsubscribed")],
)
def test_the_holdout_never_overrides_consent_or_suppression(shop, why, reason):
    # given checkouts the draw would hold out, but one without consent, one unsubscribed
    if why == "unsubscribed":
        SuppressedAddress.objects.create(email=EMAIL)
    state = checkout(token_drawn(True), consent=why != "no consent")

    evaluate(state)

    # then they are no holdout decision: they are not in the experiment at all
    (decision,) = ReminderDecision.objects.all()
    assert decision.arm == "none"
    assert decision.reason == reason


def test_a_salt_draws_a_new_group(shop):
    token = token_drawn(True)
    salt = next(
        s
        for s in ("a", "b", "c", "d", "e")
        if holdout_draw("shopify", token, s) >= DEFAULT_HOLDOUT_SHARE
    )
    shop.holdout_salt = salt
    shop.save()

    assert evaluate(checkout(token)) == "sent discount"


# --- attribution --------------------------------------------------------------------------


def test_an_order_for_the_checkout_converts_its_decision_once(client, run_worker, shop):
    # given a holdout decision for one checkout and a reminder sent for a later one, same
    # address (a holdout takes no address claim: no mail went out)
    held = checkout(token_drawn(True), hours_ago=3)
    mailed = checkout(token_drawn(False))
    assert evaluate(held) == "holdout"
    assert evaluate(mailed) == "sent discount"

    # when the order for the mailed checkout arrives, and again (at least once, new webhook id)
    body = order_body(order_id=9001, token=mailed.token, total="36.00")
    post_shopify(client, body, topic="orders/create")
    run_worker()
    post_shopify(client, body, topic="orders/create")
    run_worker()

    # then exactly that decision converted, by checkout, with the order's value
    converted = ReminderDecision.objects.exclude(converted_at=None)
    (decision,) = converted
    assert decision.checkout_id == mailed.pk
    assert decision.order_value == Decimal("36.00")
    assert decision.attributed_by == "checkout"
    assert decision.order_ref == "shopify:order:9001"
    assert ReminderDecision.objects.get(checkout=held).converted_at is None


def test_an_order_without_the_checkout_is_attributed_by_address(client, run_worker, shop):
    state = checkout(token_drawn(True))
    evaluate(state)

    post_shopify(
        client,
        order_body(order_id=9002, token=None, email="Kundin@Example.com"),
        topic="orders/create",
    )
    run_worker()

    decision = ReminderDecision.objects.get()
    assert (decision.arm, decision.attributed_by) == ("holdout", "address")
    assert decision.order_value == Decimal("40.00")


def test_an_order_after_the_window_is_not_attributed(shop):
    state = checkout(token_drawn(False))
    evaluate(state)
    ReminderDecision.objects.update(decided_at=timezone.now() - WINDOW - timedelta(hours=1))

    note = attribution.attribute_order(
        attribution.Order(
            ref="shopify:order:9003",
            source="shopify",
            token="",
            email=EMAIL,
            placed_at=timezone.now(),
            value=Decimal("40.00"),
        ),
        shop,
    )

    assert note == ""
    assert ReminderDecision.objects.get().converted_at is None


def test_an_order_placed_before_the_decision_is_not_its_result(shop):
    state = checkout(token_drawn(False))
    evaluate(state)

    note = attribution.attribute_order(
        attribution.Order(
            ref="shopify:order:9004",
            source="shopify",
            token=state.token,
            email=EMAIL,
            placed_at=timezone.now() - timedelta(minutes=5),
            value=Decimal("40.00"),
        ),
        shop,
    )

    assert note == ""


def test_a_paid_stripe_session_converts_its_decision(client, run_worker, shop):
    from tests.reminders.test_checkouts import stripe_event, stripe_session

    version = CheckoutVersion(
        source="stripe",
        token="cs_test_results",
        updated_at=timezone.now() - timedelta(hours=2),
        email=EMAIL,
        accepts_marketing=True,
        recovery_url="https://buy.stripe.com/r/test_demo0001",
        total_price=Decimal("40.00"),
        currency="EUR",
    )
    state = handlers.store_checkout(version)
    shop.holdout_share = Decimal(0)
    shop.save()
    assert evaluate(state) == "sent discount"  # no lines: 40 € at the default 40 % margin
    # Stripe's `created` has whole seconds: let the mail be a minute old when the buyer pays
    ReminderDecision.objects.update(decided_at=timezone.now() - timedelta(minutes=1))

    session = stripe_session(id="cs_test_results", status="complete", amount_total=4000)
    post_stripe(client, stripe_event(session, event_type="checkout.session.completed"))
    run_worker()

    decision = ReminderDecision.objects.get()
    assert decision.attributed_by == "checkout"
    assert decision.order_value == Decimal("40.00")


# --- measured rates decide once there are enough ------------------------------------------


def seed_decisions(per_arm: dict[str, tuple[int, int]], *, days_ago: float = 10) -> None:
    """`n` closed decisions per arm (mails sent), `k` of them converted within the window."""
    decided = timezone.now() - timedelta(days=days_ago)
    state = CheckoutState.objects.create(
        source="shopify", token=f"history-{CheckoutState.objects.count()}", updated_at=decided
    )
    rows = []
    for arm, (n, k) in per_arm.items():
        for i in range(n):
            rows.append(
                ReminderDecision(
                    checkout=state,
                    checkout_version=decided + timedelta(seconds=len(rows)),
                    arm=arm,
                    reason="history",
                    sent_at=None if arm == "holdout" else decided,
                    converted_at=decided + timedelta(days=1) if i < k else None,
                    order_value=Decimal("40.00") if i < k else None,
                )
            )
    ReminderDecision.objects.bulk_create(rows)
    ReminderDecision.objects.filter(checkout=state).update(decided_at=decided)


def use_measured(config: ReminderSettings) -> None:
    config.probabilities_from = ReminderSettings.ProbabilitySource.MEASURED
    config.save()


def test_measured_rates_decide_once_every_arm_has_the_minimum(shop):
    # given 100 closed decisions per arm: 2 % without mail, 10 % after plain, 3 % after a
    # discount (the discount does not pay here), and the merchant asks for measured rates
    n = DEFAULT_MIN_DECISIONS_PER_ARM
    seed_decisions({"holdout": (n, 2), "plain": (n, 10), "discount": (n, 3)})
    use_measured(shop)

    # when a 40 € basket of own candles is evaluated
    evaluate(checkout(token_drawn(False)))

    # then plain is sent (with the configured 4/8/11 % it would have been the discount) and
    # the decision keeps the measured probabilities and why
    decision = ReminderDecision.objects.get(sent_at__isnull=False, checkout__token__startswith="t")
    assert decision.arm == "plain"
    assert decision.inputs["probabilities_from"] == "measured"
    assert (decision.inputs["p0"], decision.inputs["p_plain"], decision.inputs["p_discount"]) == (
        "0.0200",
        "0.1000",
        "0.0300",
    )
    assert decision.inputs["probabilities_reason"] == (
        "measured: every arm has at least 100 decisions"
    )


def test_configured_until_every_arm_has_the_minimum_and_open_windows_do_not_count(shop):
    n = DEFAULT_MIN_DECISIONS_PER_ARM
    seed_decisions({"holdout": (n - 1, 2), "plain": (n, 10), "discount": (n, 3)})
    seed_decisions({"holdout": (5, 0)}, days_ago=1)  # still within the window
    use_measured(shop)

    evaluate(checkout(token_drawn(False)))

    decision = ReminderDecision.objects.get(sent_at__isnull=False, checkout__token__startswith="t")
    assert decision.arm == "discount"
    assert decision.inputs["probabilities_from"] == "configured"
    assert decision.inputs["probabilities_reason"] == (
        "configured: too few decisions yet (holdout 99 of 100)"
    )


def test_a_conversion_after_the_window_does_not_count(db):
    seed_decisions({"holdout": (10, 0)})
    ReminderDecision.objects.filter(pk__in=ReminderDecision.objects.values("pk")[:3]).update(
        converted_at=timezone.now() - timedelta(days=10) + WINDOW + timedelta(hours=1)
    )

    counts = checkouts.arm_counts(DEFAULT_ATTRIBUTION_WINDOW_DAYS)

    assert (counts["holdout"].decisions, counts["holdout"].conversions) == (10, 0)


# --- the dashboard and the API ------------------------------------------------------------


@pytest.fixture
def history(db):
    seed_decisions({"holdout": (200, 8), "plain": (400, 32), "discount": (500, 55)})


def test_the_dashboard_shows_rates_intervals_uplift_and_which_probabilities_decide(
    client, django_user_model, history
):
    client.force_login(people.staff("view_reminderdecision"))

    html = client.get(reverse("dashboard")).content.decode()

    # 8 of 200 = 4 %; 32 of 400 = 8 %; 55 of 500 = 11 %, beside the configured values
    for text in ("8 of 200", "32 of 400", "55 of 500", "4 %", "8 %", "11 %"):
        assert text in html
    # uplift: 32 − 400·0.04 + 55 − 500·0.04 = 16 + 35 = 51 orders
    assert "+51 orders (90 %:" in html
    # 32 + 55 orders after a mail at 40 € each, counted naively beside the uplift
    assert f"orders after a reminder ({fmt.format_euros(Decimal('3480'))})" in html
    assert "Decisions use the configured probabilities, as chosen in the reminder settings." in (
        html
    )


def test_the_dashboard_says_why_measured_rates_are_not_used_yet(client, django_user_model, db):
    seed_decisions({"holdout": (40, 1), "plain": (150, 12), "discount": (150, 16)})
    use_measured(ReminderSettings.load())
    client.force_login(people.staff("view_reminderdecision"))

    html = client.get(reverse("dashboard")).content.decode()

    assert "until every arm has 100 decisions with a closed window" in html
    assert "Holdout (no mail): 40" in html


def test_ad_spend_avoided_uses_the_merchant_s_manual_check_time(db):

    assert DashboardSettings.load().manual_check_hours == DEFAULT_MANUAL_CHECK_HOURS
    # the seed's 43 h at 40 clicks × 0.60 € = 43.00 € per sell-out expected
    assert selectors.reaction_summary(selectors.SellOuts([])).expected_avoided == pytest.approx(
        Decimal("43.00")
    )
    DashboardSettings.objects.filter(pk=1).update(manual_check_hours=12)

    summary = selectors.reaction_summary(selectors.SellOuts([]))

    assert summary.by_hand == timedelta(hours=12)
    assert summary.expected_avoided == pytest.approx(Decimal("12.00"))


def test_the_api_serves_the_same_numbers_read_only(history):
    user = User.objects.create_user("reader", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_reminderdecision"))
    api = APIClient()
    api.force_authenticate(user)

    response = api.get("/api/reminder-results/")

    assert response.status_code == 200
    body = response.json()
    assert body["probabilities_from"] == "configured"
    holdout, plain, discount = body["arms"]
    assert (holdout["arm"], holdout["decisions"], holdout["conversions"]) == ("holdout", 200, 8)
    assert (plain["rate"], plain["configured"]) == ("0.0800", "0.0800")
    assert discount["interval_low"] < 0.11 < discount["interval_high"]
    assert discount["revenue"] == "2200.00"
    assert round(body["uplift"]["orders"]) == 51
    api.force_authenticate(User.objects.create_superuser("boss"))
    assert api.post("/api/reminder-results/", {}).status_code == 405


def test_the_api_asks_for_the_view_permission(history):
    user = User.objects.create_user("nobody", is_staff=True)
    api = APIClient()
    api.force_authenticate(user)

    response = api.get("/api/reminder-results/")
    assert response.status_code == 403
    assert response.json() == {"detail": "You do not have permission to perform this action."}
