"""Every spelling of an address is one address for the unsubscribe list and the frequency cap.

Given kundin@example.com unsubscribed, checkouts from `"Kim" <kundin@example.com>`,
`<kundin@example.com>` and `"kundin"@example.com` were each mailed: suppression, claims and
the cap compared the strings as sent. Addresses are now parsed once at the edge
(automation/platform/addresses.py): one plain addr-spec, domain lower-cased, or "invalid e-mail".
"""

import pytest
from django.core import mail, signing
from django.urls import reverse

from automation.intake.sources import stripe_checkouts
from automation.models import CheckoutState, Delivery, ReminderDecision, SuppressedAddress
from automation.platform.addresses import (
    MAX_ADDRESS_CHARS,
    MAX_LOCAL_PART_CHARS,
    address_key,
    identifying_address,
    normalise_address,
)
from automation.platform.notes import text_of
from automation.platform.pseudonyms import email_ref
from automation.reminders.checkouts import INVALID_EMAIL
from automation.reminders.mail import UNSUBSCRIBE_SALT, unsubscribe_token
from tests.reminders.test_checkouts import EMAIL, checkout_body, shop, stripe_event, stripe_session  # noqa: F401 (shop: a fixture, used by name)
from tests.support.signing import post_shopify, post_stripe

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]

LOCAL_64 = "k" * MAX_LOCAL_PART_CHARS


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("kundin@example.com", "kundin@example.com"),
        ("  kundin@example.com \n", "kundin@example.com"),  # around it is not inside it
        ("kundin@EXAMPLE.com", "kundin@example.com"),
        ("Kundin@Example.COM", "Kundin@example.com"),  # the local part is kept as given
        ('"kundin"@example.com', "kundin@example.com"),  # quotes that are not needed go
        ('"kim.jo"@example.com', "kim.jo@example.com"),
        (
            "kim.jo+kerzen@elbkerzen-kundschaft.example.org",
            "kim.jo+kerzen@elbkerzen-kundschaft.example.org",
        ),
        ("kundin@bücher.de", "kundin@xn--bcher-kva.de"),  # IDNA 2008 A-labels
        ("kundin@XN--BCHER-KVA.DE", "kundin@xn--bcher-kva.de"),
        ("kundin@straße.de", "kundin@xn--strae-oqa.de"),  # not IDNA 2003's strasse.de
        (f"{LOCAL_64}@example.com", f"{LOCAL_64}@example.com"),
        # not one plain addr-spec
        ('"Kim" <kundin@example.com>', None),
        ("Kim <kundin@example.com>", None),
        ("<kundin@example.com>", None),
        ("kundin@example.com, kim@example.com", None),
        ("kundin@example.com,kim@example.com", None),
        ("kundin@example.com;kim@example.com", None),
        ("kundin(Kim)@example.com", None),  # a comment
        ("kundin@example.com(Kim)", None),
        ("kundin @example.com", None),
        ("kun\tdin@example.com", None),
        ("kundin@exa mple.com", None),
        ('"kun din"@example.com', None),  # a local part that needs its quotes
        ('"kun,din"@example.com', None),
        ('"kun\\"din"@example.com', None),
        # characters no address has
        ("kundin@example.com\x00", None),
        ("kun\x00din@example.com", None),
        ("kundin@exa\ud800mple.com", None),  # a lone surrogate
        ("kun\u200bdin@example.com", None),  # zero-width space
        ("kundin\u202e@example.com", None),  # right-to-left override
        ("kundin@exa\u200bmple.com", None),
        ("kündin@example.com", None),  # needs SMTPUTF8
        # missing or empty parts, impossible domains
        ("", None),
        ("   ", None),
        ("kundin", None),
        ("kundin@", None),
        ("@example.com", None),
        ("kundin@@example.com", None),
        ("kundin@example@example.com", None),
        (".kundin@example.com", None),
        ("kun..din@example.com", None),
        ("kundin.@example.com", None),
        ("kundin@example", None),  # one label
        ("kundin@localhost", None),
        ("kundin@example..com", None),
        ("kundin@example.com.", None),
        ("kundin@-example.com", None),
        ("kundin@exa_mple.com", None),
        ("kundin@[192.0.2.1]", None),  # a domain literal
        ("kundin@192.0.2.1", None),
        (f"k{LOCAL_64}@example.com", None),  # 65 characters before the @
        ("k@" + "a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 61 + ".de", None),
        # not a string at all
        (None, None),
        (42, None),
        (["kundin@example.com"], None),
    ],
)
def test_normalise_address(raw, normalised):
    assert normalise_address(raw) == normalised
    if normalised is not None:
        assert normalise_address(normalised) == normalised  # a fixed point
        assert len(normalised) <= MAX_ADDRESS_CHARS
        assert address_key(raw) == normalised.lower()
    else:
        assert address_key(raw) is None


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ('"Kim" <Kundin@Example.com>', "kundin@example.com"),
        ("<kundin@example.com>", "kundin@example.com"),
        ("kundin(Kim)@example.com", "kundin@example.com"),
        ("kundin@example.com", "kundin@example.com"),
        ("Kim", None),
        ("kundin@example.com\x00", None),
    ],
)
def test_identifying_address_finds_the_address_a_refused_spelling_names(raw, named):
    assert identifying_address(raw) == named


# --- suppression ---------------------------------------------------------------------------


def _unsubscribe(client, token: str) -> None:
    response = client.post(reverse("unsubscribe", args=[token]))
    assert response.status_code == 200


def _decision() -> ReminderDecision:
    (decision,) = ReminderDecision.objects.all()
    return decision


@pytest.mark.parametrize(
    ("spelling", "reason"),
    [
        ('"Kim" <kundin@example.com>', INVALID_EMAIL),
        ("<kundin@example.com>", INVALID_EMAIL),
        ("Kim <kundin@example.com>", INVALID_EMAIL),
        ("kundin@example.com, kim@example.com", INVALID_EMAIL),
        ('"kundin"@example.com', "address unsubscribed"),
        ("kundin@EXAMPLE.com", "address unsubscribed"),
        ("KUNDIN@example.com", "address unsubscribed"),
        ('"Kundin"@Example.COM', "address unsubscribed"),
    ],
)
@pytest.mark.usefixtures("shop")
def test_no_spelling_of_an_unsubscribed_address_gets_a_reminder(
    client, run_worker, spelling, reason
):
    # Given kundin@example.com unsubscribed through the link in a reminder
    _unsubscribe(client, unsubscribe_token(EMAIL))
    # When a checkout arrives with another spelling of that address
    post_shopify(client, checkout_body(email=spelling), topic="checkouts/update")
    run_worker()
    # Then no mail goes out, and the decision says why
    assert not mail.outbox
    assert _decision().reason == text_of(reason)
    assert Delivery.objects.get().status == Delivery.Status.DONE


@pytest.mark.usefixtures("shop")
def test_a_refused_spelling_is_skipped_as_invalid_and_its_address_is_not_stored(client, run_worker):
    post_shopify(
        client, checkout_body(email='"Kim" <kundin@example.com>'), topic="checkouts/update"
    )
    run_worker()
    assert not mail.outbox
    decision = _decision()
    assert (decision.arm, decision.reason, decision.email) == ("none", text_of(INVALID_EMAIL), "")
    assert CheckoutState.objects.get().email == ""
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.result) == (
        Delivery.Status.DONE,
        f"checkout stored; no reminder: {INVALID_EMAIL}",
    )
    # customers/redact by kundin@example.com still finds the body it came in
    assert delivery.customer_ref == email_ref(EMAIL)


@pytest.mark.usefixtures("shop")
def test_an_address_with_a_nul_is_an_invalid_email_not_a_failed_delivery(client, run_worker):
    post_shopify(client, checkout_body(email=f"{EMAIL}\x00"), topic="checkouts/update")
    run_worker()
    assert not mail.outbox
    assert _decision().reason == text_of(INVALID_EMAIL)
    assert Delivery.objects.get().status == Delivery.Status.DONE


@pytest.mark.usefixtures("shop")
def test_an_address_that_is_not_a_string_is_a_malformed_body(client, run_worker):
    post_shopify(client, checkout_body(email=["kundin@example.com"]), topic="checkouts/update")
    run_worker()
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.INVALID
    assert "email" in delivery.last_error


@pytest.mark.usefixtures("shop")
def test_a_refused_stripe_address_is_skipped_as_invalid(client, run_worker):
    session = stripe_session(
        consent={"promotions": "opt_in"},
        customer_details={"email": "<kundin@example.com>"},
    )
    post_stripe(client, stripe_event(session))
    run_worker()
    assert not mail.outbox
    assert _decision().reason == text_of(INVALID_EMAIL)


@pytest.mark.usefixtures("shop")
def test_a_quoted_stripe_address_is_suppressed_like_the_plain_one(client, run_worker):
    _unsubscribe(client, unsubscribe_token(EMAIL))
    session = stripe_session(
        consent={"promotions": "opt_in"}, customer_details={"email": '"kundin"@Example.com'}
    )
    assert stripe_checkouts.parse_stripe_session(stripe_event(session)).email == EMAIL
    post_stripe(client, stripe_event(session))
    run_worker()
    assert not mail.outbox
    assert _decision().reason == "address unsubscribed"


# --- the frequency cap ---------------------------------------------------------------------


@pytest.mark.usefixtures("shop")
def test_the_frequency_cap_holds_across_spellings(client, run_worker):
    # Given a reminder went to kundin@example.com
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()
    assert [message.to for message in mail.outbox] == [[EMAIL]]
    # When two more checkouts come with other spellings of the same address
    for n, spelling in enumerate(['"kundin"@Example.COM', "KUNDIN@example.com"]):
        post_shopify(
            client, checkout_body(token=f"respelled-{n}", email=spelling), topic="checkouts/update"
        )
    run_worker()
    # Then the cap holds: still one mail
    assert len(mail.outbox) == 1
    capped = ReminderDecision.objects.exclude(sent_at__isnull=False)
    assert [d.reason for d in capped] == ["address got a reminder within 7 days"] * 2


@pytest.mark.usefixtures("shop")
def test_the_mail_goes_to_the_address_as_the_buyer_typed_its_local_part(client, run_worker):
    post_shopify(client, checkout_body(email='"Kundin"@Example.COM'), topic="checkouts/update")
    run_worker()
    (message,) = mail.outbox
    assert message.to == ["Kundin@example.com"]


# --- the unsubscribe list itself -----------------------------------------------------------


def test_an_old_readable_unsubscribe_link_with_a_display_name_suppresses_the_address(client):
    """Links sent before the edge normalised addresses may name `"kim" <…>`: suppress the
    address they name (a missed unsubscribe is worse than none)."""
    legacy = signing.dumps('"kim" <kundin@example.com>', salt=UNSUBSCRIBE_SALT, compress=True)
    _unsubscribe(client, legacy)
    assert list(SuppressedAddress.objects.values_list("email", flat=True)) == [EMAIL]
    # a second click (or the one-click POST after the button) finds the row, no error
    _unsubscribe(client, legacy)
    _unsubscribe(client, unsubscribe_token(EMAIL))
    assert SuppressedAddress.objects.count() == 1


def test_the_merchant_adds_a_suppressed_address_in_its_normal_form(admin_client):
    response = admin_client.post(
        "/admin/automation/suppressedaddress/add/",
        {"email": '"Kundin"@Example.COM', "reason": "asked by phone"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert SuppressedAddress.objects.get().email == EMAIL


@pytest.mark.parametrize(
    "entered", ['"Kim" <kundin@example.com>', "kundin@example.com, kim@example.com", "kundin"]
)
def test_the_merchant_cannot_add_a_name_or_a_list(admin_client, entered):
    response = admin_client.post(
        "/admin/automation/suppressedaddress/add/", {"email": entered, "reason": "asked"}
    )
    assert response.status_code == 200  # the form again, with the error
    assert not SuppressedAddress.objects.exists()


def test_a_suppressed_address_is_one_row_whatever_its_spelling(admin_client):
    SuppressedAddress.objects.create(email=EMAIL)
    response = admin_client.post(
        "/admin/automation/suppressedaddress/add/",
        {"email": "KUNDIN@example.com", "reason": "twice"},
    )
    assert response.status_code == 200  # "already exists"
    assert SuppressedAddress.objects.count() == 1
