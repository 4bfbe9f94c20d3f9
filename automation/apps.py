"""App configuration: loads the topic handlers and the system checks in every process."""

from django.apps import AppConfig


class AutomationConfig(AppConfig):
    name = "automation"
    verbose_name = "Elbkerzen Automation"

    def ready(self) -> None:
        # register the topic handlers, the mail service's signal receiver and the deploy checks
        # the secrets entered on the set-up page are masked in log text like configured ones
        from automation.intake import mail_service_views as mail_intake  # noqa: F401
        from automation.platform import connections, masking  # noqa: F401
        from automation.privacy import redaction as privacy  # noqa: F401
        from automation.reminders import (  # noqa: F401
            bounces,
            checkouts,
            deploy_checks,  # noqa: F401
        )
        from automation.stock import handlers  # noqa: F401

        masking.SECRET_SOURCES.append(connections.seen_secrets)
