"""App configuration: loads the topic handlers so the registry is complete in every process."""

from django.apps import AppConfig


class AutomationConfig(AppConfig):
    name = "automation"
    verbose_name = "Elbkerzen Automation"

    def ready(self) -> None:
        from . import checkouts, inventory, privacy  # noqa: F401  (register topic handlers)
