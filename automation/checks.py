"""System checks for `manage.py check --deploy`: settings that would hurt only in production."""

from django.core.checks import CheckMessage, Error, Tags, register

from . import reminder_mail

NO_MAIL_SERVER_ID = "automation.E001"


@register(Tags.security, deploy=True)
def mail_server(app_configs: object = None, **kwargs: object) -> list[CheckMessage]:
    """Refuse a mail backend that reaches no one: reminders would land in the log, not the inbox."""
    problem = reminder_mail.mail_server_problem(deploying=True)
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
