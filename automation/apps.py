"""App configuration: loads the topic handlers and the system checks in every process."""

from django.apps import AppConfig


class AutomationConfig(AppConfig):
    name = "automation"
    verbose_name = "Elbkerzen Automation"

    def ready(self) -> None:
        # register the topic handlers, the mail service's signal receiver and the deploy checks
        from . import bounces, checkouts, checks, mail_intake, privacy  # noqa: F401
        from .stock import handlers  # noqa: F401
