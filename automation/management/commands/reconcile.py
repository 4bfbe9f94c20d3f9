"""Run the reconciliation now and print its summary."""

from django.core.management.base import BaseCommand

from automation.reconcile import nightly as reconcile


class Command(BaseCommand):
    help = "Read the true stock from Shopify now, correct ad groups, heal webhook subscriptions."

    def handle(self, *args, **options) -> None:
        run = reconcile.run_now()
        self.stdout.write(reconcile.summary(run))
