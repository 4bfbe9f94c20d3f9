"""Demo data and a local admin login, so `make run` shows a working shop at once."""

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from automation.models import WatchedItem

DEMO_CUSTOMER_ID = "1234567890"


class Command(BaseCommand):
    help = "Create the demo shop's data and a local admin login (printed)."

    def handle(self, *args, **options) -> None:
        item, created = WatchedItem.objects.get_or_create(
            inventory_item_id=808950810,
            ad_group_id="158962471302",
            defaults={
                "label": "Winterzauber",
                "customer_id": settings.GOOGLE_ADS_CUSTOMER_ID or DEMO_CUSTOMER_ID,
                "pause_at": 0,
            },
        )
        verb = "Created" if created else "Kept"
        self.stdout.write(f"{verb} demo shop elbkerzen.myshopify.com, watching {item}")
        password_file = Path(settings.BASE_DIR) / "var" / "admin-password.txt"
        password_file.parent.mkdir(parents=True, exist_ok=True)
        if not password_file.exists():
            password_file.write_text(secrets.token_urlsafe(12))
            password_file.chmod(0o600)
        password = password_file.read_text().strip()
        user, _ = get_user_model().objects.get_or_create(
            username="admin", defaults={"is_staff": True, "is_superuser": True}
        )
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        self.stdout.write(
            self.style.SUCCESS(
                f"Admin login: http://127.0.0.1:8000/admin/  user: admin  password: {password}"
            )
        )
