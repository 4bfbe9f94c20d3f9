"""App configuration: loads the topic handlers and the system checks in every process."""

from django.apps import AppConfig


class AutomationConfig(AppConfig):
    name = "automation"
    verbose_name = "Elbkerzen Automation"

    def ready(self) -> None:
        # register the topic handlers, the mail service's signal receiver and the deploy checks
        # the secrets entered on the set-up page are masked in log text like configured ones
        from . import bounces, checkouts, checks, connections, mail_intake, masking, privacy  # noqa: F401
        from .stock import handlers  # noqa: F401

        masking.SECRET_SOURCES.append(connections.seen_secrets)
