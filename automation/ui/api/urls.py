"""API routes: the resources, their OpenAPI schema and a browsable view of it (staff only).

The schema views use the API's own authentication (a token, or the admin's session: the admin
links the Swagger page on every page) and are for staff, instead of drf-spectacular's
SERVE_PERMISSIONS default (anyone); they describe the API and hold no rows,
so they ask for no model permission. Every resource asks for its model's permissions
(settings.REST_FRAMEWORK, automation/ui/api/permissions.py). The Swagger page takes its assets from
SPECTACULAR_SETTINGS["SWAGGER_UI_DIST"]: a CDN by default, the local drf-spectacular-sidecar
package with "SIDECAR". DRF's own browsable renderer serves /api/ and every resource offline.
"""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import IsAdminUser
from rest_framework.routers import DefaultRouter

from automation.ui.api import held_change_views as held_changes
from automation.ui.api import results, views

router = DefaultRouter()
router.register("watched-products", views.WatchedProductViewSet, basename="watched-product")
router.register("margin-rules", views.MarginRuleViewSet, basename="margin-rule")
router.register("promotions", views.PromotionViewSet, basename="promotion")
router.register("deliveries", views.DeliveryViewSet, basename="delivery")
router.register("ad-group-actions", views.AdGroupActionViewSet, basename="ad-group-action")
router.register("held-changes", held_changes.HeldChangeViewSet, basename="held-change")
router.register("reminder-decisions", views.ReminderDecisionViewSet, basename="reminder-decision")

staff_only = {"permission_classes": [IsAdminUser]}

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(**staff_only), name="api-schema"),
    path(
        "schema/browse/",
        SpectacularSwaggerView.as_view(url_name="api-schema", **staff_only),
        name="api-docs",
    ),
    path("reminder-results/", results.ReminderResultsView.as_view(), name="reminder-results"),
    path("", include(router.urls)),
]
