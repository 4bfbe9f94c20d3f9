"""URL routes: webhooks, health, admin and the RQ dashboard (superusers only).

django-rq's views ask only for staff status (`staff_member_required`), and its admin entry
(/admin/django_rq/dashboard/, shown while RQ_SHOW_ADMIN_LINK is on) only for the admin's login.
A staff user without any permission could delete, requeue or empty jobs there. Both entries
are therefore wrapped: only active superusers reach the dashboard.
"""

from collections.abc import Callable, Iterable
from functools import wraps

from anymail import urls as anymail_urls
from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, include, path, reverse
from django_rq import urls as rq_urls
from django_rq.admin import QueueAdmin
from django_rq.models import Dashboard

from automation.intake import mail_service_views as mail_intake
from automation.intake import views
from automation.reminders import views as reminder_views
from automation.ui import health
from automation.ui.dashboard import demo as dashboard_demo
from automation.ui.dashboard import views as dashboard_views


def superuser_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The view for active superusers; other signed-in users get 403, visitors the login."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        user = request.user
        if not user.is_authenticated:
            return redirect_to_login(request.get_full_path(), reverse("admin:login"))
        if not (user.is_active and user.is_superuser):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return guarded


def wrapped_patterns(
    patterns: Iterable[URLPattern], wrap: Callable[[Callable[..., HttpResponse]], Callable]
) -> list[URLPattern]:
    """Copies of the URL patterns whose views are wrapped in `wrap`."""
    return [
        URLPattern(pattern.pattern, wrap(pattern.callback), pattern.default_args, pattern.name)
        for pattern in patterns
    ]


def superuser_patterns(patterns: Iterable[URLPattern]) -> list[URLPattern]:
    """Copies of the URL patterns whose views are `superuser_only`."""
    return wrapped_patterns(patterns, superuser_only)


class SuperuserQueueAdmin(QueueAdmin):
    """django-rq's admin entry, listed for and served to superusers only."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return self.has_module_permission(request)

    def get_urls(self) -> list[URLPattern]:
        return superuser_patterns(super().get_urls())


if admin.site.is_registered(Dashboard):  # django-rq registers it when RQ_SHOW_ADMIN_LINK is on
    admin.site.unregister(Dashboard)
    admin.site.register(Dashboard, SuperuserQueueAdmin)

urlpatterns = [
    path("webhooks/shopify/", views.shopify_webhook, name="shopify-webhook"),
    path("webhooks/stripe/", views.stripe_webhook, name="stripe-webhook"),
    # The mail service's tracking webhooks (/anymail/brevo/tracking/, /anymail/postmark/tracking/):
    # anymail's views for the services we send through, closed until ANYMAIL_WEBHOOK_SECRET is set.
    path(
        "anymail/",
        include(
            (
                wrapped_patterns(
                    [
                        pattern
                        for pattern in anymail_urls.urlpatterns
                        if pattern.name in mail_intake.TRACKING_URL_NAMES
                    ],
                    mail_intake.webhook_secret_required,
                ),
                anymail_urls.app_name,
            )
        ),
    ),
    path("healthz", health.healthz, name="healthz"),
    path("metrics", health.prometheus_metrics, name="metrics"),
    path("unsubscribe/<str:token>/", reminder_views.unsubscribe, name="unsubscribe"),
    path("api/", include("automation.ui.api.urls")),
    path("admin/rq/", include((superuser_patterns(rq_urls.urlpatterns), rq_urls.app_name))),
    path("admin/dashboard/", dashboard_views.dashboard, name="dashboard"),
    path("admin/setup/", include("automation.ui.setup.urls")),
    path("admin/dashboard/demo/remove/", dashboard_demo.remove_view, name="dashboard-demo-remove"),
    path("admin/", admin.site.urls),
]

# A permission error (admin, set-up, RQ dashboard) is a German page with a way back.
handler403 = "automation.ui.admin_site.permission_denied"
