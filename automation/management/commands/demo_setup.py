"""Demo data and a local admin login, so `make run` shows a working shop at once.

Besides the local shop's watched item, it makes 30 days of clearly labelled demo history
(automation/ui/dashboard/demo_history.py) so the dashboard's charts mean something on a fresh start;
`--remove` deletes that history again (as does the dashboard's button). The login also goes to
var/admin-login.txt (owner-only), which `admin_login` prints again once `make run` has started.
"""

import logging
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from redis.exceptions import RedisError

from automation.models import AdGroup, Product, ReminderSettings, Variant, WatchedProduct
from automation.platform import connections
from automation.ui.dashboard import demo, demo_history

DEMO_CUSTOMER_ID = "1234567890"
ADMIN_URL = "http://127.0.0.1:8000/admin/"
"""Where the Procfile's web process serves the admin."""
LOGIN_FILE = "admin-login.txt"


def var_file(name: str) -> Path:
    """A file of this checkout's local data (var/, git-ignored, left out of the image)."""
    return Path(settings.BASE_DIR) / "var" / name


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner may read: created 0600, never readable by others meanwhile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(handle.fileno(), 0o600)  # an older file would keep its own mode
        handle.write(text)


DEMO_ADMIN_EMAIL = "admin@localhost"
"""The local admin's address: local mail stays on this machine (the console backend shows it)."""


MADE = {
    "inventory": "stock changes",
    "checkout": "abandoned checkouts",
    "evaluate": "reminder decisions",
    "order": "orders",
}


class Command(BaseCommand):
    help = (
        "Create the demo shop's data, 30 days of labelled demo history and a local admin "
        "login (printed); --remove deletes the demo history."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--remove", action="store_true", help="delete the demo history and nothing else"
        )
        parser.add_argument(
            "--no-history", action="store_true", help="skip the 30 days of demo history"
        )

    def handle(self, *args, **options) -> None:
        if options["remove"]:
            removed = demo.remove_demo()
            summary = ", ".join(f"{n} {kind}" for kind, n in sorted(removed.items()))
            self.stdout.write(f"Removed the demo history: {summary or 'nothing to remove'}")
            return
        item, created = _winterzauber()
        verb = "Created" if created else "Kept"
        self.stdout.write(f"{verb} demo shop elbkerzen.myshopify.com, watching {item}")
        if _demo_imprint():
            self.stdout.write("Reminder settings: wrote the demo imprint (replace it with yours)")
        if not options["no_history"]:
            self._history()
        password_file = var_file("admin-password.txt")
        if not password_file.exists():
            write_private(password_file, secrets.token_urlsafe(12))
        password = password_file.read_text().strip()
        user, _ = get_user_model().objects.get_or_create(
            username="admin", defaults={"is_staff": True, "is_superuser": True}
        )
        user.is_staff = user.is_superuser = True
        # The set-up page's and the reminder preview's test mails go to the user's address.
        user.email = user.email or DEMO_ADMIN_EMAIL
        user.set_password(password)
        user.save()
        login = f"Admin login: {ADMIN_URL}  user: admin  password: {password}"
        write_private(var_file(LOGIN_FILE), login + "\n")
        self.stdout.write(f"Test mails go to {user.email}")
        self.stdout.write(self.style.SUCCESS(login))

    def _history(self) -> None:
        logging.disable(logging.INFO)  # not a log line per demo delivery
        try:
            made = demo_history.create_demo()
        except RedisError as err:
            raise CommandError(f"Redis is needed for the demo history: {err}") from err
        finally:
            logging.disable(logging.NOTSET)
        if made is None:
            self.stdout.write(f"Kept the demo history ({demo.DEMO_SHOP}); --remove deletes it")
            return
        summary = ", ".join(f"{made[kind]} {name}" for kind, name in MADE.items())
        self.stdout.write(
            f"Created {demo.DEMO_DAYS} days of demo history ({demo.DEMO_SHOP}): {summary}"
        )


WINTERZAUBER_PRODUCT_ID = 632910392
"""The sample bodies' product: Winterzauber, one variant with the sample inventory item."""


def _winterzauber() -> tuple[WatchedProduct, bool]:
    """The seed's candle, watched: one variant (the samples' inventory item), one ad group."""
    found = WatchedProduct.objects.filter(product_id=WINTERZAUBER_PRODUCT_ID).first()
    if found is not None:
        return found, False
    product, _ = Product.objects.get_or_create(
        product_id=WINTERZAUBER_PRODUCT_ID,
        defaults={"title": "Winterzauber", "status": Product.Status.ACTIVE},
    )
    Variant.objects.get_or_create(
        inventory_item_id=808950810, defaults={"product": product, "variant_id": 808950810}
    )
    group, _ = AdGroup.objects.get_or_create(
        customer_id=connections.current().google_ads_customer_id.value or DEMO_CUSTOMER_ID,
        ad_group_id="158962471302",
        defaults={"name": "Winterzauber"},
    )
    watched = WatchedProduct.objects.create(
        product_id=WINTERZAUBER_PRODUCT_ID, label="Winterzauber", pause_at=0
    )
    watched.ad_groups.set([group])
    return watched, True


def _demo_imprint() -> bool:
    """Fill the demo imprint into empty reminder settings (no reminder is sent without one);
    True when it was written. A merchant's own imprint is never replaced."""
    config = ReminderSettings.load()
    if config.mail_imprint.strip():
        return False
    return bool(
        ReminderSettings.objects.filter(pk=config.pk, mail_imprint=config.mail_imprint).update(
            mail_imprint=demo.DEMO_IMPRINT
        )
    )
