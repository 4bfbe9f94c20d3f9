"""The admin site: the index lists the merchant's work in sections ordered by how often it is
needed, and keeps the technical records (API tokens, login attempts, the job queues, the
once-only claims) in one "Technical" section that only superusers see or open.

Why superusers only, even for a staff member who was given a permission on them: tokens open
the API with their holder's rights, the login records hold staff addresses and names, and
deleting a claim lets a reminder go out twice. None of them is part of the shop's daily work,
and a broad group ("all permissions") should not hand them out by accident. Django's
AdminConfig takes the site class from `default_site` (docs: "Overriding the default admin site").
"""

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.db.models.base import ModelBase
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext_lazy as _

TECHNICAL = "technical"
OTHER = "other"

SECTIONS: tuple[tuple[str, object, tuple[str, ...]], ...] = (
    (
        "ads",
        _("Ads and stock"),
        (
            "automation.watchedproduct",
            "automation.adgroup",
            "automation.heldchange",
            "automation.adgroupaction",
            "automation.stocklevel",
            "automation.location",
            "automation.product",
            "automation.variant",
        ),
    ),
    (
        "reminders",
        _("Reminders"),
        (
            "automation.reminderdecision",
            "automation.checkoutstate",
            "automation.suppressedaddress",
        ),
    ),
    ("promotions", _("Discount campaigns"), ("automation.promotion",)),
    (
        "logs",
        _("Deliveries and logs"),
        ("automation.delivery", "automation.reconcilerun", "automation.datarequest"),
    ),
    (
        "settings",
        _("Settings"),
        (
            "automation.remindersettings",
            "automation.marginrule",
            "automation.brakesettings",
            "automation.dashboardsettings",
        ),
    ),
    ("users", _("Users and permissions"), ("auth.user", "auth.group")),
    (
        TECHNICAL,
        _("Technical"),
        (
            "automation.claim",
            "authtoken.tokenproxy",
            "authtoken.token",
            "axes.accessattempt",
            "axes.accessfailurelog",
            "axes.accesslog",
            "django_rq.dashboard",
        ),
    ),
)
"""The index's sections in order, each with its models in order ("app_label.model_name")."""

TECHNICAL_APPS = frozenset({"authtoken", "axes", "django_rq", "anymail"})
"""Apps whose every model is technical, also one not named in SECTIONS."""


def model_key(model: type) -> str:
    return f"{model._meta.app_label}.{model._meta.model_name}"


def section_of(model: type) -> str:
    """The section a model is listed in; a model no section names is "other", or "technical"
    when its app is a technical one."""
    key = model_key(model)
    for name, _title, keys in SECTIONS:
        if key in keys:
            return name
    return TECHNICAL if model._meta.app_label in TECHNICAL_APPS else OTHER


def is_superuser(request: HttpRequest) -> bool:
    user = request.user
    return user.is_active and user.is_superuser


class SuperusersOnly:
    """Mixed into a technical model's admin: listed for, and opened by, active superusers only
    (others get the 403 page)."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_superuser(request) and super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return is_superuser(request) and super().has_view_permission(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return is_superuser(request) and super().has_change_permission(request, obj)

    def has_add_permission(self, request: HttpRequest, *args: object) -> bool:
        return is_superuser(request) and super().has_add_permission(request, *args)

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return is_superuser(request) and super().has_delete_permission(request, obj)


class ShopAdminSite(admin.AdminSite):
    """The shop's admin: sections instead of apps on the index and in the sidebar."""

    def register(self, model_or_iterable, admin_class=None, **options) -> None:
        """Registers as Django does; a technical model's admin becomes superusers only."""
        models = (
            [model_or_iterable] if isinstance(model_or_iterable, ModelBase) else model_or_iterable
        )
        for model in models:
            model_admin = admin_class or admin.ModelAdmin
            if section_of(model) == TECHNICAL and not issubclass(model_admin, SuperusersOnly):
                model_admin = type(
                    f"SuperusersOnly{model_admin.__name__}", (SuperusersOnly, model_admin), {}
                )
            super().register(model, model_admin, **options)

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[dict]:
        """The sections in SECTIONS' order with their models in its order; an app's own
        page (`app_label`) keeps Django's list of that app."""
        if app_label is not None:
            return super().get_app_list(request, app_label)
        found: dict[str, dict] = {}
        for app in self._build_app_dict(request).values():
            for entry in app["models"]:
                found[model_key(entry["model"])] = entry
        order = {key: place for _n, _t, keys in SECTIONS for place, key in enumerate(keys)}
        sections = [(name, title) for name, title, _keys in SECTIONS]
        sections.insert(-1, (OTHER, _("Other")))
        app_list = []
        for name, title in sections:
            entries = [e for key, e in found.items() if section_of(e["model"]) == name]
            if not entries:
                continue
            entries.sort(key=lambda e: (order.get(model_key(e["model"]), len(order)), e["name"]))
            app_list.append(
                {
                    "name": title,
                    "app_label": name,
                    # The caption links to the section's first list the user may open (a
                    # section has no page of its own), else to the start page.
                    "app_url": next(
                        (e["admin_url"] for e in entries if e["admin_url"]),
                        reverse("admin:index", current_app=self.name),
                    ),
                    "has_module_perms": True,
                    "models": entries,
                }
            )
        return app_list


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The 403 page (`handler403`): German, in the admin's frame, with a way back to the page
    the user came from (when it is ours) and to the admin's index."""
    back = request.META.get("HTTP_REFERER", "")
    if back == request.build_absolute_uri() or not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = ""
    context = {"title": _("No access"), "back_url": back}
    if hasattr(request, "user"):  # a 403 raised before authentication has no admin frame
        context = {**admin.site.each_context(request), **context}
    return TemplateResponse(request, "403.html", context, status=403)


class ShopAdminConfig(AdminConfig):
    """django.contrib.admin with the shop's site as `admin.site`."""

    default_site = "automation.ui.admin_site.ShopAdminSite"
