"""The reminder e-mail: German templates, the recovery link, a signed unsubscribe link."""

from decimal import Decimal

from django.conf import settings
from django.core import signing
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse

from .models import CheckoutState, ReminderSettings

UNSUBSCRIBE_SALT = "automation.unsubscribe"

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


def unsubscribe_token(email: str) -> str:
    """A signed token naming the address; it cannot be forged or pointed at another address."""
    return signing.dumps(email.strip().lower(), salt=UNSUBSCRIBE_SALT, compress=True)


def email_from_token(token: str) -> str:
    """The address a token was made for; raises signing.BadSignature for anything else."""
    return signing.loads(token, salt=UNSUBSCRIBE_SALT)


def unsubscribe_url(email: str) -> str:
    path = reverse("unsubscribe", args=[unsubscribe_token(email)])
    return f"{settings.PUBLIC_BASE_URL}{path}"


def _percent(rate: Decimal) -> str:
    return f"{(rate * 100).normalize():f}"


def build(checkout: CheckoutState, arm: str, config: ReminderSettings) -> EmailMultiAlternatives:
    """The message for one checkout and arm (`plain` or `discount`), not yet sent."""
    link = unsubscribe_url(checkout.email)
    context = {
        "shop_name": settings.SHOP_NAME,
        "greeting_name": checkout.first_name,
        "lines": [
            {
                "title": line.get("title") or "Artikel",
                "quantity": line["quantity"],
                "price": line["price"],
            }
            for line in checkout.line_items
        ],
        "total": f"{checkout.total_price:.2f}",
        "currency": checkout.currency or "EUR",
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
