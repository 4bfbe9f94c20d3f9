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
