"""The unsubscribe token is opaque: it ends up in access logs, so no address is readable in it.

Given a reminder to kundin@example.com, its link carried the address as readable base64
(Django's signed object), and every proxy and gunicorn access log kept it.
"""

import base64
import re
import time

import pytest
from django.core import mail, signing

from automation.models import SuppressedAddress
from automation.reminders.mail import (
    LEGACY_UNSUBSCRIBE_MAX_AGE,
    MAX_UNSUBSCRIBE_TOKEN_CHARS,
    UNSUBSCRIBE_SALT,
    email_from_token,
    unsubscribe_token,
)
from tests.reminders.test_checkouts import EMAIL, checkout_body, confirm_unsubscribe, shop  # noqa: F401 (the fixture)
from tests.support.signing import post_shopify

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("not_bought")]

ADDRESSES = [
    EMAIL,
    "kim.jo+kerzen@elbkerzen-kundschaft.example.org",
    "a@b.de",
    "sehr.langer.name.mit.vielen.punkten.und.zahlen.1234567890@sub.domain.example.com",
]
WINDOW = 7  # "longer than 6 characters"


def _readable_forms(address: str) -> set[str]:
    """Every 7-character piece of the address, its parts and their base64, at any alignment.

    Base64 of a substring depends on where it starts modulo 3, and Django's signed token put a
    `"` in front, so each part is encoded after dropping 0, 1 and 2 leading bytes (and with 0-2
    bytes of arbitrary prefix); the last character of each encoding, which depends on what
    follows, is dropped.
    """
    local, domain = address.split("@")
    pieces = set()
    for part in (address, local, domain, f'"{address}"'):
        raw = part.encode()
        candidates = [part.lower()]
        for prefix in (b"", b'"', b'""'):
            for skip in range(3):
                data = prefix + raw[skip:]
                for encode in (base64.b64encode, base64.urlsafe_b64encode):
                    encoded = encode(data).decode().rstrip("=")
                    candidates.append(encoded[:-1])
        for text in candidates:
            pieces.update(text[i : i + WINDOW] for i in range(len(text) - WINDOW + 1))
    return pieces


@pytest.mark.parametrize("address", ADDRESSES)
def test_token_shows_nothing_of_the_address(address):
    token = unsubscribe_token(address)

    assert re.fullmatch(r"[A-Za-z0-9_-]+", token), "URL-safe, no padding"
    assert len(token) <= MAX_UNSUBSCRIBE_TOKEN_CHARS
    lowered = token.lower()
    for piece in _readable_forms(address):
        assert piece not in token and piece.lower() not in lowered, piece
    assert email_from_token(token) == address


def test_token_is_short_and_the_longest_deliverable_address_still_works():
    """64 characters for a usual address; a 254-octet one (RFC 5321's limit) stays under the cap."""
    assert len(unsubscribe_token(EMAIL)) <= 64
    longest = f"{'k' * 64}@{'d' * 63}.{'e' * 63}.{'f' * 58}.de"
    assert len(longest.encode()) == 254
    token = unsubscribe_token(longest)
    assert len(token) <= MAX_UNSUBSCRIBE_TOKEN_CHARS
    assert email_from_token(token) == longest


def test_the_check_would_catch_the_readable_token_it_replaces():
    """The detector itself: Django's signed token (the old format) is caught."""
    old = signing.dumps(EMAIL, salt=UNSUBSCRIBE_SALT, compress=True)
    assert any(piece in old for piece in _readable_forms(EMAIL))


def test_token_names_one_address_and_tokens_of_others_differ():
    tokens = {unsubscribe_token(address) for address in ADDRESSES}
    assert len(tokens) == len(ADDRESSES)
    assert unsubscribe_token(" Kundin@Example.com ") == unsubscribe_token(EMAIL)


def _changed(char: str) -> str:
    return "A" if char != "A" else "B"


def test_every_changed_character_is_refused():
    token = unsubscribe_token(EMAIL)
    for position in range(len(token)):
        tampered = token[:position] + _changed(token[position]) + token[position + 1 :]
        with pytest.raises(signing.BadSignature):
            email_from_token(tampered)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "x",
        "====",
        "%%%%",
        "ümlaut",
        "a" * (MAX_UNSUBSCRIBE_TOKEN_CHARS + 1),
        "a" * 64,
        "not:a:signature",
    ],
)
def test_garbage_is_refused_as_a_bad_signature(bad):
    with pytest.raises(signing.BadSignature):
        email_from_token(bad)


def test_shortened_lengthened_and_non_canonical_tokens_are_refused():
    token = unsubscribe_token(EMAIL)
    for variant in (token[:-1], token[1:], token + "A", token + "=", f" {token}", token + "."):
        with pytest.raises(signing.BadSignature):
            email_from_token(variant)


def test_token_made_with_another_secret_is_refused(settings):
    token = unsubscribe_token(EMAIL)
    settings.SECRET_KEY = "another-secret"
    with pytest.raises(signing.BadSignature):
        email_from_token(token)


def test_token_survives_a_secret_rotation_through_the_fallbacks(settings):
    old_secret = settings.SECRET_KEY
    token = unsubscribe_token(EMAIL)
    settings.SECRET_KEY = "the-new-secret"
    settings.SECRET_KEY_FALLBACKS = [old_secret]
    assert email_from_token(token) == EMAIL
    assert unsubscribe_token(EMAIL) != token, "new links use the new secret"


class _SignedAgo(signing.TimestampSigner):
    """Django's signer with its clock turned back, to make a legacy token of a given age."""

    age_seconds = 0

    def timestamp(self) -> str:
        return signing.b62_encode(int(time.time()) - self.age_seconds)


def _legacy_token(age_seconds: int) -> str:
    signer = _SignedAgo(salt=UNSUBSCRIBE_SALT)
    signer.age_seconds = age_seconds
    return signer.sign_object(EMAIL, compress=True)


def test_legacy_readable_token_is_honoured_during_the_transition(client):
    """Links in mails with the older readable token keep working for LEGACY_UNSUBSCRIBE_MAX_AGE."""
    token = _legacy_token(int(LEGACY_UNSUBSCRIBE_MAX_AGE.total_seconds()) - 3600)
    assert signing.dumps(EMAIL, salt=UNSUBSCRIBE_SALT, compress=True).count(":") == 2
    assert email_from_token(token) == EMAIL
    assert client.post(f"/unsubscribe/{token}/").status_code == 200
    assert SuppressedAddress.objects.get().email == EMAIL


def test_legacy_token_past_the_transition_is_refused(client):
    token = _legacy_token(int(LEGACY_UNSUBSCRIBE_MAX_AGE.total_seconds()) + 3600)
    with pytest.raises(signing.SignatureExpired):
        email_from_token(token)
    assert client.post(f"/unsubscribe/{token}/").status_code == 400
    assert not SuppressedAddress.objects.exists()


def _link_of_the_reminder(client, run_worker) -> tuple[str, str]:
    post_shopify(client, checkout_body(), topic="checkouts/update")
    run_worker()
    (message,) = mail.outbox
    header = message.extra_headers["List-Unsubscribe"]
    assert header.startswith("<http") and header.endswith(">")
    link = header.strip("<>")
    assert message.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert link in message.body
    assert link in message.alternatives[0][0]
    return link, message.body


def test_reminder_header_carries_the_opaque_token_and_confirming_unsubscribes(
    client,
    run_worker,
    shop,  # noqa: F811 (the fixture)
):
    link, _ = _link_of_the_reminder(client, run_worker)
    path = link.removeprefix("http://127.0.0.1:8000")
    token = path.removeprefix("/unsubscribe/").removesuffix("/")
    assert token == unsubscribe_token(EMAIL)
    assert not any(piece in link for piece in _readable_forms(EMAIL))

    confirm_unsubscribe(client, path)


def test_one_click_post_from_the_mail_client_unsubscribes(client, run_worker, shop):  # noqa: F811
    """RFC 8058: the mail client POSTs `List-Unsubscribe=One-Click` to the header's URL."""
    link, _ = _link_of_the_reminder(client, run_worker)
    response = client.post(
        link.removeprefix("http://127.0.0.1:8000"),
        data="List-Unsubscribe=One-Click",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    assert SuppressedAddress.objects.get().email == EMAIL


def test_tampered_link_is_refused_by_the_page(client):
    token = unsubscribe_token(EMAIL)
    tampered = token[:10] + _changed(token[10]) + token[11:]
    assert client.get(f"/unsubscribe/{tampered}/").status_code == 400
    assert client.post(f"/unsubscribe/{tampered}/").status_code == 400
    assert not SuppressedAddress.objects.exists()
