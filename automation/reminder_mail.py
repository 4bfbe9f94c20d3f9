"""The reminder e-mail: German templates, the recovery link, an opaque unsubscribe link."""

import base64
from datetime import timedelta
from decimal import Decimal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core import signing
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.formats import number_format

from .models import CheckoutState, ReminderSettings

# The salt of the readable tokens sent before the opaque ones (email_from_token's legacy branch).
UNSUBSCRIBE_SALT = "automation.unsubscribe"
LEGACY_UNSUBSCRIBE_MAX_AGE = timedelta(days=90)
# HKDF's `info` for the unsubscribe key, also the tokens' associated data: bump the version to
# change the format.
UNSUBSCRIBE_KEY_INFO = b"elbkerzen unsubscribe token v1"
UNSUBSCRIBE_PAD_BYTES = 32
# A deliverable address has at most 254 octets (RFC 5321 4.5.3.1.3: a path of 256 with its <>):
# padded to 256, plus the 16-byte tag, that is 363 base64 characters. Longer is not ours.
MAX_UNSUBSCRIBE_TOKEN_CHARS = 400

# Django's own backends that reach no one, by the EMAIL_URL scheme that selects them (django-
# environ's `Env.EMAIL_SCHEMES`). Django's docs: the console and file backends are "not intended
# for use in production", locmem is for testing, dummy "does nothing"
# (https://docs.djangoproject.com/en/5.2/topics/email/#email-backends).
NOT_A_MAIL_SERVER = {
    "django.core.mail.backends.console.EmailBackend": "consolemail://",
    "django.core.mail.backends.filebased.EmailBackend": "filemail://",
    "django.core.mail.backends.locmem.EmailBackend": "memorymail://",
    "django.core.mail.backends.dummy.EmailBackend": "dummymail://",
}


def mail_server_problem(*, deploying: bool = False) -> str:
    """Why mail would reach no one, or "" when it may be sent.

    Checked only in production (EMAIL_REQUIRE_SERVER, on when DEBUG is off), or always for
    `check --deploy`: a console backend wrote customers' full addresses into the worker log and
    the reminder counted as sent. The file backend is refused too: it keeps addresses on disk
    and delivers nothing.
    """
    if not (deploying or settings.EMAIL_REQUIRE_SERVER):
        return ""
    scheme = NOT_A_MAIL_SERVER.get(settings.EMAIL_BACKEND)
    if scheme is None:
        return ""
    return f"EMAIL_URL names no mail server ({scheme})"


def _token_ciphers() -> list[AESSIV]:
    """One cipher per secret, the current SECRET_KEY first, then SECRET_KEY_FALLBACKS.

    The key is derived with HKDF (RFC 5869) from Django's secret, with `info` naming this use,
    so a token cannot be confused with anything else made from SECRET_KEY; the fallbacks let
    links in mails already sent survive a key rotation, as Django's own signing does
    (https://docs.djangoproject.com/en/5.2/ref/settings/#secret-key-fallbacks).
    """
    ciphers = []
    for secret in [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]:
        # 64 bytes: AES-SIV's two AES-256 keys (the MAC half and the CTR half).
        hkdf = HKDF(algorithm=hashes.SHA256(), length=64, salt=None, info=UNSUBSCRIBE_KEY_INFO)
        ciphers.append(AESSIV(hkdf.derive(secret.encode())))
    return ciphers


def unsubscribe_token(email: str) -> str:
    """An opaque token for the address: it lands in access logs, so nothing in it is readable.

    AES-SIV (RFC 5297, `cryptography`'s AESSIV: https://cryptography.io/en/latest/hazmat/
    primitives/aead/) encrypts and authenticates in one step and needs no nonce: the same address
    always gets the same short link, and a changed token fails authentication, so it can
    neither be read nor forged nor pointed at another address. The address is padded to a
    multiple of UNSUBSCRIBE_PAD_BYTES so the token's length says little about it.
    """
    padder = padding.PKCS7(UNSUBSCRIBE_PAD_BYTES * 8).padder()
    padded = padder.update(email.strip().lower().encode()) + padder.finalize()
    sealed = _token_ciphers()[0].encrypt(padded, [UNSUBSCRIBE_KEY_INFO])
    return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")


def email_from_token(token: str) -> str:
    """The address a token was made for; raises signing.BadSignature for anything else.

    Tokens from before the opaque format (Django's signed, readable ones, recognised by their
    `:` separators) are still honoured for LEGACY_UNSUBSCRIBE_MAX_AGE after they were made:
    links in mails already sent must keep working (the FTC's CAN-SPAM guide asks for at least 30
    days after sending, https://www.ftc.gov/business-guidance/resources/
    can-spam-act-compliance-guide-business). After that window the legacy branch refuses
    everything and can be deleted.
    """
    if ":" in token:
        # signing.dumps stamped the time; SignatureExpired is a BadSignature
        return signing.loads(token, salt=UNSUBSCRIBE_SALT, max_age=LEGACY_UNSUBSCRIBE_MAX_AGE)
    if not token or len(token) > MAX_UNSUBSCRIBE_TOKEN_CHARS:
        raise signing.BadSignature("unsubscribe token of impossible length")
    try:
        sealed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except ValueError as err:
        raise signing.BadSignature("unsubscribe token is not base64url") from err
    # urlsafe_b64decode skips stray characters and ignores spare bits: one spelling per token.
    if base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii") != token:
        raise signing.BadSignature("unsubscribe token is not in canonical base64url")
    for cipher in _token_ciphers():
        try:
            padded = cipher.decrypt(sealed, [UNSUBSCRIBE_KEY_INFO])
        except (InvalidTag, ValueError):
            continue
        unpadder = padding.PKCS7(UNSUBSCRIBE_PAD_BYTES * 8).unpadder()
        try:
            return (unpadder.update(padded) + unpadder.finalize()).decode()
        except ValueError as err:  # UnicodeDecodeError is one; only our key could get here
            raise signing.BadSignature("unsubscribe token holds no address") from err
    raise signing.BadSignature("unsubscribe token does not authenticate")


def unsubscribe_url(email: str) -> str:
    """The absolute link for the mail's footer and its List-Unsubscribe header."""
    path = reverse("unsubscribe", args=[unsubscribe_token(email)])
    return f"{settings.PUBLIC_BASE_URL}{path}"


MAIL_LANGUAGE = "de"
"""The reminder's templates are written in German, so its numbers are formatted in German too."""
CURRENCY_SYMBOLS = {"EUR": "€"}
"""Currencies written with their symbol; any other is written with its ISO code ("12,00 CHF")."""


def format_money(amount: Decimal | str | int, currency: str) -> str:
    """A price as the mail shows it, in the active language's format: "1.234,50 €" in German.

    Django's localisation (the locale's decimal and thousands separators), not hand formatting.
    """
    code = (currency or "EUR").upper()
    number = number_format(Decimal(str(amount)), 2, use_l10n=True, force_grouping=True)
    return f"{number} {CURRENCY_SYMBOLS.get(code, code)}"


def _percent(rate: Decimal) -> str:
    """The discount as a percentage without trailing zeros: 10, 12,5 in German."""
    percent = (rate * 100).normalize()
    places = max(-percent.as_tuple().exponent, 0)
    return number_format(percent, places, use_l10n=True, force_grouping=True)


def build(checkout: CheckoutState, arm: str, config: ReminderSettings) -> EmailMultiAlternatives:
    """The message for one checkout and arm (`plain` or `discount`), not yet sent."""
    with translation.override(MAIL_LANGUAGE):
        return _build(checkout, arm, config)


def _build(checkout: CheckoutState, arm: str, config: ReminderSettings) -> EmailMultiAlternatives:
    link = unsubscribe_url(checkout.email)
    currency = checkout.currency or "EUR"
    context = {
        "shop_name": settings.SHOP_NAME,
        "greeting_name": checkout.first_name,
        "lines": [
            {
                "title": line.get("title") or "Artikel",
                "quantity": line["quantity"],
                "price": format_money(line["price"], currency),
            }
            for line in checkout.line_items
        ],
        "total": format_money(checkout.total_price, currency),
        "currency": currency,
        "recovery_url": checkout.recovery_url,
        "discount_code": config.discount_code.strip() if arm == "discount" else "",
        "discount_percent": _percent(config.discount_rate),
        "unsubscribe_url": link,
    }
    subject = render_to_string("automation/email/reminder_subject.txt", context).strip()
    message = EmailMultiAlternatives(
        subject=subject,
        body=render_to_string("automation/email/reminder.txt", context),
        to=[checkout.email],
        headers={
            "List-Unsubscribe": f"<{link}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
    )
    message.attach_alternative(
        render_to_string("automation/email/reminder.html", context), "text/html"
    )
    return message


def send(checkout: CheckoutState, arm: str, config: ReminderSettings) -> None:
    """Send the reminder; errors propagate so the caller can release its claim and retry."""
    build(checkout, arm, config).send(fail_silently=False)
