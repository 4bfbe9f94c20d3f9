"""Check or re-create the shop's webhook subscriptions by hand."""

from django.core.management.base import BaseCommand, CommandError

from automation import reconcile
from automation.adapters.shopify_admin import ShopifyAdminError


class Command(BaseCommand):
    help = (
        "Compare the shop's webhook subscriptions with what we need (--check) or fix them (--sync)."
    )

    def add_arguments(self, parser) -> None:
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--check", action="store_true", help="list missing subscriptions")
        mode.add_argument("--sync", action="store_true", help="create missing subscriptions")

    def handle(self, *args, **options) -> None:
        client = reconcile.admin_client()
        if client is None:
            raise CommandError("not configured: set SHOPIFY_ADMIN_TOKEN")
        try:
            if options["sync"]:
                created = reconcile.heal_subscriptions(None, client)
                self.stdout.write(f"created: {', '.join(created) or 'nothing (all present)'}")
                return
            missing = reconcile.missing_subscriptions(client)
        except ShopifyAdminError as err:
            raise CommandError(str(err)) from err
        if missing:
            self.stdout.write(f"missing for {reconcile.callback_url()}: {', '.join(missing)}")
            raise CommandError(f"{len(missing)} subscription(s) missing; run with --sync")
        self.stdout.write(f"all {len(reconcile.REQUIRED_TOPICS)} subscriptions present")
