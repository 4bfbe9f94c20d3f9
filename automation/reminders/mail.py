"""The reminder e-mail: the merchant's text in a German frame, the recovery link, the imprint
and an opaque unsubscribe link (both in every mail, whatever the text says)."""

import base64
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from email.headerregistry import Address
from email.utils import parseaddr

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core import signing
from django.core.mail import EmailMultiAlternatives, get_connection
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.formats import number_format
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import mark_safe

from automation.models import CheckoutState, ReminderSettings
from automation.reminders import mail_text

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


@dataclass(frozen=True)
class RenderedReminder:
    """One reminder exactly as it goes out: the preview shows these, the send path sends them."""

    subject: str
    from_email: str
    text: str
    html: str
    unsubscribe_url: str


def sender(config: ReminderSettings) -> str:
    """The From header: the merchant's sender name with DEFAULT_FROM_EMAIL's address.

    Whitespace is collapsed, so even a name that bypassed the form's validation cannot end
    the header; `Address` quotes what needs quoting and refuses CR/LF itself.
    """
    own_name, address = parseaddr(settings.DEFAULT_FROM_EMAIL)
    name = " ".join((config.mail_sender_name or own_name or settings.SHOP_NAME).split())
    return str(Address(display_name=name, addr_spec=address))


def imprint_missing(config: ReminderSettings) -> bool:
    """German law wants the sender's identification in every commercial mail: none without."""
    return not config.mail_imprint.strip()


def render(checkout: CheckoutState, arm: str, config: ReminderSettings) -> RenderedReminder:
    """The reminder for one checkout and arm (`plain` or `discount`) in both parts."""
    with translation.override(MAIL_LANGUAGE):
        return _render(checkout, arm, config)


def build(checkout: CheckoutState, arm: str, config: ReminderSettings) -> EmailMultiAlternatives:
    """The message for one checkout and arm, not yet sent."""
    return message_for(render(checkout, arm, config), checkout.email)


def message_for(rendered: RenderedReminder, to: str) -> EmailMultiAlternatives:
    """A rendered reminder as a message to `to`, with its one-click unsubscribe headers."""
    message = EmailMultiAlternatives(
        subject=rendered.subject,
        body=rendered.text,
        from_email=rendered.from_email,
        to=[to],
        headers={
            "List-Unsubscribe": f"<{rendered.unsubscribe_url}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
    )
    message.attach_alternative(rendered.html, "text/html")
    return message


BUTTON_STYLE = (
    "display:inline-block;padding:12px 28px;background-color:#1f3a5f;color:#ffffff;"
    "text-decoration:none;border-radius:4px;font-family:Arial,Helvetica,sans-serif;"
    "font-weight:bold;"
)
LINK_STYLE = "color:#1f3a5f;word-break:break-all;"
CODE_STYLE = "font-family:'Courier New',Courier,monospace;letter-spacing:1px;"
PARAGRAPH_STYLE = "margin:0 0 16px 0;"
DISCOUNT_STYLE = "margin:0 0 16px 0;padding:12px 16px;background-color:#fbf4e6;border-radius:4px;"
CELL_STYLE = "padding:6px 0;border-bottom:1px solid #eee7dc;"


@dataclass(frozen=True)
class _Basket:
    lines: list[tuple[int, str, str]]
    """(quantity, title, price) per line."""
    total: str

    def text_block(self) -> str:
        rows = "".join(f"- {qty} × {title} – {price}\n" for qty, title, price in self.lines)
        return f"{rows}\nSumme: {self.total}"

    def summary(self) -> str:
        items = ", ".join(f"{qty} × {title}" for qty, title, _ in self.lines)
        return f"{items} (Summe {self.total})" if items else f"Summe {self.total}"

    def html_block(self) -> str:
        rows = format_html_join(
            "\n",
            '<tr><td style="{}">{} × {}</td>'
            '<td align="right" style="{}white-space:nowrap;">{}</td></tr>',
            ((CELL_STYLE, qty, title, CELL_STYLE, price) for qty, title, price in self.lines),
        )
        return format_html(
            '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" '
            'style="border-collapse:collapse;margin:0 0 16px 0;">{}\n<tr>'
            '<td style="padding:8px 0;font-weight:bold;">Summe</td>'
            '<td align="right" style="padding:8px 0;font-weight:bold;white-space:nowrap;">{}'
            "</td></tr></table>",
            rows,
            self.total,
        )


def _paragraphs(text: str) -> list[list[str]]:
    """The merchant's text as paragraphs (split at blank lines) of lines."""
    paragraphs: list[list[str]] = [[]]
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line.strip():
            paragraphs[-1].append(line.rstrip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p]


def _html_paragraph(lines: list[str], values: dict[str, str], style: str) -> str:
    filled = [mail_text.fill(line, values, escape) for line in lines]
    return format_html('<p style="{}">{}</p>', style, mark_safe("<br>".join(filled)))  # noqa: S308 (escaped above)


def _paragraph_parts(
    lines: list[str],
    text_values: dict[str, str],
    html_values: dict[str, str],
    blocks: dict[str, tuple[str, str]],
) -> tuple[str, list[str]]:
    """One paragraph of the merchant's text in both parts. A line that is only `{warenkorb}`
    or `{link}` becomes its block (the basket table, the button); lines with the discount
    code are set apart in a box of their own in the HTML part."""
    text_lines: list[str] = []
    html: list[str] = []
    run: list[str] = []
    run_is_discount = False
    for line in lines:
        block = blocks.get(line.strip())
        is_discount = block is None and mail_text.mentions(line, mail_text.DISCOUNT_ONLY)
        if run and (block is not None or is_discount != run_is_discount):
            style = DISCOUNT_STYLE if run_is_discount else PARAGRAPH_STYLE
            html.append(_html_paragraph(run, html_values, style))
            run = []
        if block is not None:
            text_lines.append(block[0])
            html.append(block[1])
            continue
        run_is_discount = is_discount
        run.append(line)
        text_lines.append(mail_text.fill(line, text_values))
    if run:
        style = DISCOUNT_STYLE if run_is_discount else PARAGRAPH_STYLE
        html.append(_html_paragraph(run, html_values, style))
    return "\n".join(text_lines), html


def _render(checkout: CheckoutState, arm: str, config: ReminderSettings) -> RenderedReminder:
    link = unsubscribe_url(checkout.email)
    currency = checkout.currency or "EUR"
    basket = _Basket(
        lines=[
            (
                line["quantity"],
                line.get("title") or "Artikel",
                format_money(line["price"], currency),
            )
            for line in checkout.line_items
        ],
        total=format_money(checkout.total_price, currency),
    )
    with_discount = arm == "discount"
    code = config.discount_code.strip() if with_discount else ""
    text_values = {
        mail_text.FIRST_NAME: checkout.first_name,
        mail_text.SHOP: settings.SHOP_NAME,
        mail_text.BASKET: basket.summary(),
        mail_text.LINK: checkout.recovery_url,
        mail_text.DISCOUNT_CODE: code,
        mail_text.DISCOUNT_PERCENT: _percent(config.discount_rate),
    }
    html_values = {name: escape(value) for name, value in text_values.items()}
    html_values[mail_text.LINK] = format_html(
        '<a href="{}" style="{}">{}</a>', checkout.recovery_url, LINK_STYLE, checkout.recovery_url
    )
    html_values[mail_text.DISCOUNT_CODE] = format_html(
        '<strong style="{}">{}</strong>', CODE_STYLE, code
    )

    text_parts = [mail_text.fill(config.mail_greeting, text_values).strip()]
    html_parts = [_html_paragraph([config.mail_greeting], html_values, PARAGRAPH_STYLE)]
    blocks = {
        f"{{{mail_text.BASKET}}}": (basket.text_block(), basket.html_block()),
        f"{{{mail_text.LINK}}}": (checkout.recovery_url, _button(checkout.recovery_url)),
    }
    for paragraph in _paragraphs(config.mail_body):
        if not with_discount:
            paragraph = [
                line for line in paragraph if not mail_text.mentions(line, mail_text.DISCOUNT_ONLY)
            ]
        text, html = _paragraph_parts(paragraph, text_values, html_values, blocks)
        if text:
            text_parts.append(text)
        html_parts.extend(html)

    imprint = config.mail_imprint.strip()
    imprint_lines = [line.strip() for line in imprint.splitlines()]
    context = {
        "shop_name": settings.SHOP_NAME,
        "content": mark_safe("\n".join(html_parts)),  # noqa: S308 (built with format_html)
        "imprint_html": mark_safe("<br>".join(escape(line) for line in imprint_lines)),  # noqa: S308
        "unsubscribe_url": link,
    }
    subject = " ".join(mail_text.fill(config.mail_subject, text_values).split())
    context["subject"] = subject
    text = "\n\n".join(text_parts)
    text += f"\n\n--\n{imprint}\n\nKeine Erinnerungen mehr? Abmelden: {link}\n"
    return RenderedReminder(
        subject=subject,
        from_email=sender(config),
        text=text,
        html=render_to_string("automation/email/reminder.html", context),
        unsubscribe_url=link,
    )


def _button(url: str) -> str:
    return format_html(
        '<p style="margin:24px 0;text-align:center;"><a href="{}" style="{}">'
        "Zurück zum Warenkorb</a></p>"
        '<p style="margin:0 0 16px 0;font-size:14px;color:#6b6b6b;">Falls der Knopf nicht '
        "funktioniert, kopiere diesen Link in deinen Browser:<br>"
        '<a href="{}" style="{}">{}</a></p>',
        url,
        BUTTON_STYLE,
        url,
        LINK_STYLE,
        url,
    )


def send(checkout: CheckoutState, arm: str, config: ReminderSettings) -> None:
    """Send the reminder; errors propagate so the caller can release its claim and retry."""
    build(checkout, arm, config).send(fail_silently=False)


# --- the preview: the same rendering, with a sample basket ----------------------------------

SAMPLE_FIRST_NAME = "Kim"
SAMPLE_LINES = [
    {"title": "Winterzauber", "quantity": 2, "price": "12.50"},
    {"title": "Elbsand, Bienenwachs", "quantity": 1, "price": "15.00"},
]


def sample_checkout(email: str) -> CheckoutState:
    """An unsaved checkout for the preview and the test mail, addressed to `email`."""
    total = sum(Decimal(line["price"]) * line["quantity"] for line in SAMPLE_LINES)
    return CheckoutState(
        source=CheckoutState.Source.SHOPIFY,
        token="preview",  # noqa: S106 (a checkout token, not a secret)
        email=email,
        first_name=SAMPLE_FIRST_NAME,
        line_items=SAMPLE_LINES,
        total_price=total,
        currency="EUR",
        recovery_url=f"{settings.PUBLIC_BASE_URL}/beispiel/warenkorb",
    )


def send_preview(config: ReminderSettings, arm: str, address: str, timeout: float) -> None:
    """The preview as a mail to `address` through the configured backend, within `timeout`."""
    message = build(sample_checkout(address), arm, config)
    message.connection = get_connection(timeout=timeout)
    message.send(fail_silently=False)
