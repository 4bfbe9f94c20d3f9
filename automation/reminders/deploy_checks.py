"""System checks for `manage.py check --deploy`: settings that would hurt only in production."""

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register

from automation.platform.mail_server import mail_server_problem

NO_MAIL_SERVER_ID = "automation.E001"
MAIL_WEBHOOKS_CLOSED_ID = "automation.W001"


@register(Tags.security, deploy=True)
def mail_server(app_configs: object = None, **kwargs: object) -> list[CheckMessage]:
    """Refuse a mail backend that reaches no one: reminders would land in the log, not the inbox."""
    problem = mail_server_problem(deploying=True)
    if not problem:
        return []
    return [
        Error(
            f"{problem}: reminders and alerts would reach no one, and reminders are skipped "
            "while DEBUG is off.",
            hint="Set EMAIL_URL to your mail server, e.g. smtp+tls://user:password@host:587.",
            id=NO_MAIL_SERVER_ID,
        )
    ]


@register(Tags.security, deploy=True)
def mail_service_webhooks(app_configs: object = None, **kwargs: object) -> list[CheckMessage]:
    """Sending through a mail service without its tracking webhooks: bounces never suppress."""
    if settings.EMAIL_SERVICE == "smtp" or settings.ANYMAIL.get("WEBHOOK_SECRET"):
        return []
    return [
        Warning(
            f"EMAIL_SERVICE={settings.EMAIL_SERVICE} but ANYMAIL_WEBHOOK_SECRET is not set: the "
            "service's tracking webhooks answer 403, so hard bounces and spam complaints do not "
            "stop reminders.",
            hint="Set ANYMAIL_WEBHOOK_SECRET=user:password and enter the webhook URL at the "
            "service (docs/MAIL.md).",
            id=MAIL_WEBHOOKS_CLOSED_ID,
        )
    ]
