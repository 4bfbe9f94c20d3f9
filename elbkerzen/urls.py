"""URL routes: webhooks, health, admin and the RQ dashboard (staff only)."""

from django.contrib import admin
from django.urls import include, path

from automation import dashboard_views, views

urlpatterns = [
    path("webhooks/shopify/", views.shopify_webhook, name="shopify-webhook"),
    path("webhooks/stripe/", views.stripe_webhook, name="stripe-webhook"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.prometheus_metrics, name="metrics"),
    path("unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe"),
    path("api/", include("automation.api.urls")),
    path("admin/rq/", include("django_rq.urls")),
    path("admin/dashboard/", dashboard_views.dashboard, name="dashboard"),
    path("admin/", admin.site.urls),
]
