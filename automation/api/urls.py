"""API routes (filled in by the API module)."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("schema/browse/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
