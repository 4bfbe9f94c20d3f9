"""Reasons are stored as a code with its values, so every reader sees them in their language.

A reason (why an ad group was paused, why a checkout got no reminder) is written once, by the
worker, whose language is not the reader's: the row keeps English text (logs, the API's
`reason`) and a note (`reason_note`) that the admin and the API's `reason_shown` render in the
reader's language. Tests run in English (pyproject's LANGUAGE_CODE=en); these switch the shop
to German as production has it.
"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone, translation

from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import (
    AdGroup,
    AdGroupAction,
    BrakeEpisode,
    CheckoutState,
    ReminderDecision,
    ReminderSettings,
)
from automation.platform import notes
from automation.reminders import checkouts
from automation.reminders.rules import (
    NO_DISCOUNT_CODE,
    Basket,
    Line,
    Probabilities,
    choose_reminder,
)
from automation.stock import manual
from tests.support.brake import sell_out_burst
from tests.support.levels import apply_level
from tests.support.watching import watch

pytestmark = pytest.mark.django_db


@pytest.fixture
def german_shop(settings):
    """The worker of a German shop: no request, so the shop's LANGUAGE_CODE is active."""
    settings.LANGUAGE_CODE = "de"
    with translation.override("de"):
        yield


def test_a_sell_out_is_logged_in_german(german_shop):
    # Given Winterzauber watched with "pause at 0"
    watch(808950810, "555", customer_id="1234567890")
    # When the last candle is sold
    sold_out = LevelUpdate(808950810, 24826418, 0, datetime(2026, 11, 26, 10, tzinfo=UTC))
    apply_level(sold_out, source=AdGroupAction.Source.WEBHOOK)
    # Then the action log keeps why as a code with its values, and shows it in German
    logged = AdGroupAction.objects.get()
    assert logged.reason_note == {
        "code": "rule_sold_out",
        "params": {"label": "Winterzauber", "stock": 0, "level": 0},
    }
    assert logged.reason == "Winterzauber: 0 available ≤ 0"
    assert notes.reason_shown(logged) == "Winterzauber: Bestand 0 ≤ 0"
    # And so does the restock
    restocked = LevelUpdate(808950810, 24826418, 12, datetime(2026, 11, 26, 11, tzinfo=UTC))
    apply_level(restocked, source=AdGroupAction.Source.WEBHOOK)
    assert AdGroupAction.objects.first().reason_note["code"] == "rule_in_stock"
    assert notes.reason_shown(AdGroupAction.objects.first()) == "Winterzauber: Bestand 12 > 0"


def test_a_reminder_decision_is_explained_in_german(german_shop):
    basket = Basket(total=Decimal("40.00"), lines=[Line(price=Decimal("40.00"), quantity=1)])
    choice = choose_reminder(
        basket,
        [],
        Probabilities(p0=Decimal("0.04"), p_plain=Decimal("0.08")),
        default_rate=Decimal("0.40"),
        discount_available=False,
        discount_unavailable_reason=NO_DISCOUNT_CODE,
    )
    german = "einfache Erinnerung: ΔE 0,64; Rabatt nicht möglich (kein Rabattcode eingetragen)"
    assert choice.reason == german
    # The decimals stay numbers in the note; German commas come only when shown
    stored = notes.stored_of(choice.reason_note)
    assert stored == {
        "code": "choice_plain_no_discount",
        "params": {
            "plain": {"$decimal": "0.64"},
            "why": {"$note": {"code": "no_discount_code", "params": {}}},
        },
    }
    assert notes.render(stored) == german
    with translation.override("en"):
        assert notes.render(stored) == (
            "plain: ΔE 0.64; discount unavailable (no discount code configured)"
        )


def test_a_skipped_checkout_says_why_in_german(german_shop):
    checkout = CheckoutState.objects.create(
        source=CheckoutState.Source.SHOPIFY,
        token="b7d1c0a9",
        email="kundin@example.com",
        updated_at=timezone.now() - timedelta(hours=2),
        completed_at=timezone.now(),
        total_price=Decimal("40.00"),
    )
    reason = checkouts.skip_reason(checkout, ReminderSettings.load())
    assert notes.stored_of(reason) == {"code": "checkout_completed_skip", "params": {}}
    assert str(reason) == "Checkout abgeschlossen"
    assert notes.text_of(reason) == "checkout completed"


def _checkout(**changes) -> CheckoutState:
    fields = {
        "source": CheckoutState.Source.SHOPIFY,
        "token": "b7d1c0a9",
        "email": "kundin@example.com",
        "accepts_marketing": True,
        "updated_at": timezone.now() - timedelta(hours=2),
        "total_price": Decimal("40.00"),
        "recovery_url": "https://elbkerzen.myshopify.com/1/checkouts/b7d1c0a9/recover",
    }
    return CheckoutState.objects.create(**{**fields, **changes})


def test_a_reminder_decision_stores_its_code_and_the_german_admin_shows_german(admin_client):
    # Given a checkout without marketing consent, evaluated by an English worker
    checkout = _checkout(accepts_marketing=False)
    assert checkouts.evaluate(checkout.pk, checkout.updated_at).startswith("skipped")
    # Then the decision keeps the code, with English text for the logs
    decision = ReminderDecision.objects.get()
    assert decision.reason_note == {"code": "no_marketing_consent", "params": {}}
    assert decision.reason == "no marketing consent (UWG §7)"
    # And the German admin's list and page show German, no English
    for url in (
        "/admin/automation/reminderdecision/",
        f"/admin/automation/reminderdecision/{decision.pk}/change/",
    ):
        page = admin_client.get(url, HTTP_ACCEPT_LANGUAGE="de").content.decode()
        assert "keine Marketing-Einwilligung (UWG §7)" in page
        assert "no marketing consent" not in page


def test_the_frequency_cap_is_counted_in_the_readers_language():
    capped = notes.note("frequency_capped", days=1)
    with translation.override("en"):
        assert str(capped) == "address got a reminder within 1 day"
    assert notes.stored_of(capped) == {"code": "frequency_capped", "params": {"days": 1}}
    with translation.override("de"):
        assert str(capped) != "address got a reminder within 1 day"
        assert "1" in str(capped)


def test_an_ad_group_action_shows_german_in_the_german_admin(admin_client):
    watch(808950810, "555", customer_id="1234567890")
    sold_out = LevelUpdate(808950810, 24826418, 0, datetime(2026, 11, 26, 10, tzinfo=UTC))
    apply_level(sold_out, source=AdGroupAction.Source.WEBHOOK)
    assert AdGroupAction.objects.get().reason == "Winterzauber: 0 available ≤ 0"

    page = admin_client.get(
        "/admin/automation/adgroupaction/", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()

    assert "Winterzauber: Bestand 0 ≤ 0" in page
    assert "available" not in page


def test_a_held_change_stores_its_code_and_shows_german(admin_client):
    # Given the brake holds pauses of a sell-out burst
    held = sell_out_burst()
    change = held[0]
    # Then the held change and its logged action keep the rule's code
    assert change.reason_note["code"] == "rule_sold_out"
    action = AdGroupAction.objects.get(result="held", ad_group_id=change.ad_group_id)
    assert action.reason_note["code"] == "held_by_brake"
    assert action.reason_note["params"]["reason"] == {"$note": change.reason_note}
    assert action.reason.endswith("(held: safety brake)")
    episode = BrakeEpisode.objects.get()
    assert episode.reason_note["code"] == "brake_engaged"
    assert "ad groups paused within" in episode.reason
    # And the German admin lists shows them in German
    page = admin_client.get("/admin/automation/heldchange/", HTTP_ACCEPT_LANGUAGE="de").content
    assert "Bestand 0 ≤ 0" in page.decode() and "available" not in page.decode()
    page = admin_client.get(
        "/admin/automation/adgroupaction/?result__exact=held", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert "(zurückgehalten: Notbremse)" in page and "held: safety brake" not in page
    # And so does the page that asks before applying them
    page = admin_client.get(
        "/admin/automation/heldchange/apply-all/", HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert f": {held[0].reason_note['params']['label']}: Bestand 0 ≤ 0" in page
    assert "available" not in page


def test_the_api_keeps_english_reasons_beside_the_shown_ones(admin_client):
    checkout = _checkout(accepts_marketing=False)
    checkouts.evaluate(checkout.pk, checkout.updated_at)
    body = admin_client.get("/api/reminder-decisions/", HTTP_ACCEPT_LANGUAGE="de").json()
    (row,) = body["results"] if isinstance(body, dict) else body
    assert row["reason"] == "no marketing consent (UWG §7)"
    assert row["reason_shown"] != row["reason"] and "§7" in row["reason_shown"]


def test_a_manual_pause_and_its_release_store_who_and_why(admin_user):
    # Given Winterzauber in stock, paused by hand with the merchant's reason
    watch(808950810, "555", customer_id="1234567890")
    in_stock = LevelUpdate(808950810, 24826418, 12, datetime(2026, 11, 26, 10, tzinfo=UTC))
    apply_level(in_stock, source=AdGroupAction.Source.WEBHOOK)
    group = AdGroup.objects.get(ad_group_id="555")
    manual.set_manual(group, "PAUSED", "Fotoshooting", admin_user)
    paused = AdGroupAction.objects.get(source="manual")
    # Then the action keeps the code, who and the merchant's own words
    assert paused.reason_note == {
        "code": "rule_manual_paused",
        "params": {"who": admin_user.get_username(), "why": "Fotoshooting"},
    }
    with translation.override("de"):
        assert notes.reason_shown(paused).endswith(": Fotoshooting")
        assert "manually" not in notes.reason_shown(paused)
    # And the release names who released it, around the rule's own reason
    group.refresh_from_db()
    manual.release_manual(group, admin_user)
    released = AdGroupAction.objects.order_by("-pk").first()
    assert released.reason_note["code"] == "manual_released"
    assert released.reason_note["params"]["who"] == admin_user.get_username()
    assert released.reason_note["params"]["reason"]["$note"]["code"] == "rule_in_stock"
    assert released.reason.startswith(f"manual control released by {admin_user.get_username()}.")
