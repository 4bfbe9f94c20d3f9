"""Pseudonyms of a customer's e-mail, Shopify customer id and phone, and masked addresses.

A delivery and a checkout carry these pseudonyms, so `customers/redact` finds them by whichever
of the three the request names; the intake, the reminders and privacy all key rows by them.
The salt keeps the text it had when the pseudonyms were first written: changing it would
orphan every stored pseudonym.
"""

import re

from django.conf import settings
from django.utils.crypto import salted_hmac

from automation.platform.addresses import address_key

# A phone number needs at least this many digits to be a usable key (shorter ones would join
# unrelated customers).
MIN_PHONE_DIGITS = 6


def mask_email(email: str) -> str:
    """`kundin@example.com` → `k***@example.com`: enough to recognise, not to harvest."""
    local, at, domain = (email or "").partition("@")
    if not at:
        return "***"
    return f"{local[:1]}***@{domain}"


# Namespaces the pseudonyms' HMAC key (Django's salted_hmac derives the key from this salt and
# the secret), so no other signature made with SECRET_KEY ever equals a pseudonym.
PSEUDONYM_SALT = "automation.privacy.pseudonym:"


def pseudonym(kind: str, value: str, *, secret: str | None = None) -> str:
    """The keyed pseudonym of `value` (an address key, an id, phone digits): the one home.

    An HMAC-SHA256 under a key derived from SECRET_KEY (or `secret`, a former key), not a bare
    hash: phone numbers and ids are few enough to be found again from a bare hash by trying
    them all, a keyed one needs the key. `kind` keeps an id from ever colliding with a phone.
    """
    return salted_hmac(
        PSEUDONYM_SALT + kind, value, secret=secret or settings.SECRET_KEY, algorithm="sha256"
    ).hexdigest()


def pseudonym_secrets() -> list[str]:
    """SECRET_KEY, then SECRET_KEY_FALLBACKS: rows written before a rotation keep being found."""
    return [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]


def email_ref(email: str, *, secret: str | None = None) -> str:
    """A stable pseudonym of an address, for keys and links between rows.

    Made from the address's key (automation/platform/addresses.py), so every spelling of one mailbox
    (`Kim@Bücher.de`, `kim@xn--bcher-kva.de`, `"kim"@bücher.de`) has one pseudonym: the body
    written under one spelling is found by a redaction naming another. A value that is no
    address falls back to its lower-cased text.
    """
    return pseudonym("email", address_key(email) or email.strip().lower(), secret=secret)


def customer_id_ref(customer_id: int | None, *, secret: str | None = None) -> str:
    """A stable pseudonym of a Shopify customer id; "" without one."""
    if customer_id is None:
        return ""
    return pseudonym("shopify-customer", str(customer_id), secret=secret)


def phone_digits(phone: str) -> str:
    """The digits of a phone number, so `+49 40 1234567` and `0049-40-1234567` are one key.

    Shopify stores customers' phones in E.164 (`+4940…`); the international prefix `00` is the
    same `+` typed differently. A national form (`040 …`) stays a different key: we have no
    country to expand it with.
    """
    digits = re.sub(r"\D", "", phone or "")
    if (phone or "").lstrip().startswith("00"):
        digits = digits.removeprefix("00")
    return digits if len(digits) >= MIN_PHONE_DIGITS else ""


def phone_ref(phone: str, *, secret: str | None = None) -> str:
    """A stable pseudonym of a phone number; "" when it has too few digits to be one."""
    digits = phone_digits(phone)
    return pseudonym("phone", digits, secret=secret) if digits else ""


def customer_refs(email: str = "", customer_id: int | None = None, phone: str = "") -> dict:
    """The Delivery fields that link a body to its customer; only the ones we have."""
    refs = {
        "customer_ref": email_ref(email) if email and "@" in email else "",
        "customer_id_ref": customer_id_ref(customer_id),
        "phone_ref": phone_ref(phone),
    }
    return {name: ref for name, ref in refs.items() if ref}


def matching_refs(email: str = "", customer_id: int | None = None, phone: str = "") -> dict:
    """Like customer_refs, but each field's pseudonyms under every key we still honour.

    For finding rows: one written before SECRET_KEY was rotated carries the pseudonym under the
    key that is now in SECRET_KEY_FALLBACKS.
    """
    found: dict[str, set[str]] = {}
    for secret in pseudonym_secrets():
        refs = {
            "customer_ref": email_ref(email, secret=secret) if email and "@" in email else "",
            "customer_id_ref": customer_id_ref(customer_id, secret=secret),
            "phone_ref": phone_ref(phone, secret=secret),
        }
        for name, ref in refs.items():
            if ref:
                found.setdefault(name, set()).add(ref)
    return found
