"""App configuration: loads the topic handlers, the admin and the system checks in every process."""

from django.apps import AppConfig


class AutomationConfig(AppConfig):
    name = "automation"
    verbose_name = "Elbkerzen Automation"

    def ready(self) -> None:
        # Modules that register themselves when imported: the topic handlers (`@handles`), the
        # mail service's signal receiver, the deploy checks and the ModelAdmins (ui/admin/;
        # Django's autodiscover looks only for automation/admin.py).
        from automation.intake import mail_service_views  # noqa: F401
        from automation.platform import connections, masking
        from automation.privacy import redaction  # noqa: F401
        from automation.reminders import bounces, deploy_checks  # noqa: F401
        from automation.reminders import handlers as reminder_handlers  # noqa: F401
        from automation.stock import handlers as stock_handlers  # noqa: F401
        from automation.ui import admin  # noqa: F401

        # the secrets entered on the set-up page are masked in log text like configured ones
        masking.SECRET_SOURCES.append(connections.seen_secrets)
