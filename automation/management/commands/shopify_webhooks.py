"""Check or re-create the shop's webhook subscriptions by hand."""

from django.core.management.base import BaseCommand, CommandError

from automation.shopify import access as shopify_access
from automation.shopify import subscriptions
from automation.shopify.transport import ShopifyAdminError


class Command(BaseCommand):
    help = (
        "Compare the shop's webhook subscriptions with what we need (--check) or fix them (--sync)."
    )

    def add_arguments(self, parser) -> None:
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--check", action="store_true", help="list missing subscriptions")
        mode.add_argument("--sync", action="store_true", help="create missing subscriptions")

    def handle(self, *args, **options) -> None:
        if shopify_access.webhooks_managed_by_toml():
            # Shopify's webhookSubscriptions query does not list app-scoped (TOML) subscriptions,
            # so there is nothing we could compare, and creating them would double every event.
            if options["sync"]:
                raise CommandError(
                    "SHOPIFY_WEBHOOKS_MANAGED_BY=toml: the app's shopify.app.toml owns the "
                    "webhook subscriptions; change them there and run `shopify app deploy` "
                    "(creating them through the API too would deliver every event twice)"
                )
            self.stdout.write(
                f"webhook subscriptions: {subscriptions.MANAGED_BY_TOML}; "
                f"it must subscribe {', '.join(subscriptions.REQUIRED_TOPICS)} "
                f"to {subscriptions.callback_url()}"
            )
            return
        client = shopify_access.admin_client()
        if client is None:
            raise CommandError(f"not configured: set {shopify_access.missing_settings()}")
        try:
            if options["sync"]:
                created = subscriptions.heal_subscriptions(client)
                self.stdout.write(f"created: {', '.join(created) or 'nothing (all present)'}")
                return
            missing = subscriptions.missing_subscriptions(client)
        except ShopifyAdminError as err:
            raise CommandError(str(err)) from err
        if missing:
            self.stdout.write(f"missing for {subscriptions.callback_url()}: {', '.join(missing)}")
            raise CommandError(f"{len(missing)} subscription(s) missing; run with --sync")
        self.stdout.write(f"all {len(subscriptions.REQUIRED_TOPICS)} subscriptions present")
