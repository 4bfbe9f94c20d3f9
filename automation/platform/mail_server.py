"""Whether mail would reach anyone: alerts, health, the deploy checks and reminders ask it."""

from django.conf import settings

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
