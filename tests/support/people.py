"""Users for tests of who may do what: staff with exactly the permissions a test names.

`staff("view_delivery", ...)` takes codenames of this app (or "app_label.codename" for another
app); `view_only()` holds every view permission of the app and nothing else; `superuser()` all.
"""

from __future__ import annotations

from django.contrib.auth.models import Permission, User

APP = "automation"


def _permissions(names: tuple[str, ...]) -> list[Permission]:
    found = []
    for name in names:
        app_label, _, codename = name.rpartition(".")
        found.append(
            Permission.objects.get(content_type__app_label=app_label or APP, codename=codename)
        )
    return found


def staff(*permissions: str, username: str = "", email: str = "") -> User:
    """A staff user (not a superuser) holding exactly `permissions`."""
    user = User.objects.create_user(
        username or f"staff-{User.objects.count() + 1}", email=email, is_staff=True
    )
    user.user_permissions.set(_permissions(permissions))
    return user


DASHBOARD_READER = (
    "view_adgroupaction",
    "view_watchedproduct",
    "view_reminderdecision",
    "view_delivery",
    "view_reconcilerun",
)
"""What the dashboard's three sections summarise: sell-outs, reminder decisions, health."""


def view_only(*, username: str = "reader", email: str = "") -> User:
    """A staff user who may see every record of the app and change none."""
    user = staff(username=username, email=email)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label=APP, codename__startswith="view_")
    )
    return user


def superuser(*, username: str = "boss", email: str = "boss@elbkerzen.example") -> User:
    return User.objects.create_superuser(username, email=email, password=None)
