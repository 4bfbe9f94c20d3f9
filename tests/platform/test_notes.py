"""Delivery results kept as a code with its values and shown in the reader's language.

The German wording of every code is checked in tests/ui/test_german_catalogue.py; here the words
taken from model choices ("plain reminder", "same checkout") show that a stored note is rendered
when read, not when written.
"""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import translation
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from automation.intake import inbox, outcomes
from automation.intake.handling import Outcome
from automation.intake.sources.mail_service import Kind
from automation.models import Delivery, ReminderDecision
from automation.platform import notes
from tests.support.signing import post_shopify

pytestmark = pytest.mark.django_db

ATTRIBUTED = notes.note(
    "attributed_to_decision",
    decision=41,
    arm=notes.note("arm_plain"),
    by=notes.note("attributed_by_checkout"),
)


def test_a_result_is_stored_as_its_code_and_values_beside_the_english_text(client):
    # Given a delivery of a topic no handler takes, processed by a German worker
    post_shopify(client, {"id": 1}, topic="nobody/handles")
    delivery = Delivery.objects.get()
    with translation.override("de"):
        assert inbox.process(delivery.pk, final_attempt=False) == Delivery.Status.IGNORED
    # Then the row keeps the code and its values, and the text column stays English
    delivery.refresh_from_db()
    assert delivery.result_note == {"code": "no_handler", "params": {"topic": "nobody/handles"}}
    assert delivery.result == "no handler for nobody/handles"


def test_a_note_is_rendered_in_the_language_active_when_it_is_shown():
    stored = notes.join(ATTRIBUTED, notes.note("checkout_marked_completed")).stored()
    with translation.override("en"):
        english = notes.render(stored)
    with translation.override("de"):
        german = notes.render(stored)
    assert english == (
        "attributed to reminder decision 41 (plain reminder, same checkout); "
        "checkout marked completed"
    )
    assert "einfache Erinnerung, derselbe Checkout" in german
    assert "plain reminder" not in german


def test_a_time_in_a_note_is_shown_in_berlin_time_in_the_readers_format():
    stored = notes.note("evaluation_scheduled", at=datetime(2026, 12, 1, 18, tzinfo=UTC)).stored()
    assert stored["params"]["at"] == {"$time": "2026-12-01T18:00:00+00:00"}
    with translation.override("en"):
        assert notes.render(stored) == "reminder evaluation scheduled for Dec. 1, 2026, 7 p.m."
    with translation.override("de"):
        assert "1. Dezember 2026 19:00" in notes.render(stored)


def test_a_decimal_stays_a_number_until_it_is_shown():
    gain = notes.note("choice_plain", plain=Decimal("1.25"), discount=Decimal("-0.50"))
    assert gain.stored()["params"]["plain"] == {"$decimal": "1.25"}
    assert notes.text_of(gain) == "plain: ΔE 1.25 ≥ discount -0.50"
    with translation.override("de"):
        assert "1,25" in str(gain) and "-0,50" in str(gain)


def test_a_stored_note_wraps_into_another_unchanged():
    inner = notes.note("rule_sold_out", label="Winterzauber", stock=0, level=0)
    held = notes.note("held_by_brake", reason=notes.restored(inner.stored()))
    assert held.stored()["params"]["reason"] == {"$note": inner.stored()}
    assert notes.text_of(held) == "Winterzauber: 0 available ≤ 0 (held: safety brake)"


def test_a_row_written_before_codes_is_shown_as_stored():
    assert notes.shown(None, "total available 3") == "total available 3"
    # a code this version does not know (written by a newer one): its stored text
    assert notes.shown({"code": "from_the_future", "params": {}}, "as written") == "as written"
    # values that do not fit the template: the stored text, never an error on the page
    assert notes.shown({"code": "no_handler", "params": {}}, "no handler for x") == (
        "no handler for x"
    )


def test_an_unregistered_code_is_refused_when_written():
    with pytest.raises(KeyError):
        notes.note("no_such_code")


def test_text_jsonb_cannot_hold_is_replaced_so_the_note_is_stored(client):
    # Given a note quoting a hostile value with a NUL and a lone surrogate
    post_shopify(client, {"id": 1}, topic="nobody/handles")
    delivery = Delivery.objects.get()
    outcome = Outcome(Delivery.Status.DONE, notes.note("no_handler", topic="a\x00b\ud800c"))
    # When it is recorded
    outcomes.finish(delivery, outcome)
    # Then both columns are stored
    delivery.refresh_from_db()
    assert delivery.result_note["params"]["topic"] == "a\\u0000b\\ud800c"
    assert delivery.result == "no handler for a\\u0000b\\ud800c"


def test_one_part_joins_to_itself_and_empty_parts_are_left_out():
    total = notes.note("total_available", total=3)
    assert notes.join("", total, None) is total
    assert notes.join("", None) == ""
    assert notes.text_of(notes.join(total, "")) == "total available 3"


@pytest.fixture
def delivery_with_note() -> Delivery:
    return Delivery.objects.create(
        source=Delivery.Source.SHOPIFY,
        topic="orders/create",
        status=Delivery.Status.DONE,
        result=ATTRIBUTED.english(),
        result_note=ATTRIBUTED.stored(),
    )


@pytest.mark.parametrize(("language", "shown", "hidden"), [
    ("de", "einfache Erinnerung", "plain reminder"),
    ("en", "plain reminder", "einfache Erinnerung"),
])  # fmt: skip
def test_the_admin_shows_the_result_in_the_readers_language(
    client, delivery_with_note, language, shown, hidden
):
    client.force_login(User.objects.create_superuser("chefin", "c@elbkerzen.example", "x"))
    for url in (
        "/admin/automation/delivery/",
        f"/admin/automation/delivery/{delivery_with_note.pk}/change/",
    ):
        html = client.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()
        assert shown in html, url
        assert hidden not in html, url


def test_the_api_keeps_the_english_text_and_adds_the_shown_result(delivery_with_note):
    user = User.objects.create_user("operator", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="automation"))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    row = api.get("/api/deliveries/", HTTP_ACCEPT_LANGUAGE="de").data["results"][0]
    assert row["result"] == ("attributed to reminder decision 41 (plain reminder, same checkout)")
    assert "einfache Erinnerung, derselbe Checkout" in row["result_shown"]


def test_every_value_a_note_names_by_code_has_one():
    """A handler names an arm, an attribution, an event kind or an identifier by its code; a
    new value without one would fail the handler instead of showing its result."""
    named = [f"arm_{arm}" for arm in ReminderDecision.Arm.values]
    named += [f"attributed_by_{by}" for by in ReminderDecision.AttributedBy.values]
    named += [f"kind_{kind.name.lower()}" for kind in Kind]
    named += [f"identifier_{name}" for name in ("id", "email", "phone")]
    assert [code for code in named if code not in notes.TEMPLATES] == []
