"""E-mail backends for failure tests: fail once, or kill the worker process mid-send."""

import os
import signal

from django.core.mail.backends.locmem import EmailBackend


class FailOnceBackend(EmailBackend):
    """Raises on the first send of the process, then delivers to the locmem outbox."""

    failed = False

    def send_messages(self, messages):
        if not FailOnceBackend.failed:
            FailOnceBackend.failed = True
            raise ConnectionRefusedError("SMTP server unavailable")
        return super().send_messages(messages)


class KillOnSendBackend(EmailBackend):
    """The worker dies (SIGKILL) at the moment it would send: after the claim, before the mail."""

    def send_messages(self, messages):
        os.kill(os.getpid(), signal.SIGKILL)


class AlertsOnlyBackend(EmailBackend):
    """Delivers mail to the alert addresses (locmem outbox) and refuses every other: a mail
    server that rejects the buyers' reminders while the merchant's alerts still arrive."""

    def send_messages(self, messages):
        from django.conf import settings

        for message in messages:
            if set(message.recipients()) - set(settings.ALERT_EMAILS):
                raise ConnectionRefusedError("SMTP server refused the recipient")
        return super().send_messages(messages)
