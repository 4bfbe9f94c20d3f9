"""The product's URLs plus the reference views the intake is compared with (bench only)."""

from django.urls import path

from bench import views
from elbkerzen.urls import urlpatterns as product_urlpatterns

urlpatterns = [
    *product_urlpatterns,
    path("bench/bare/", views.bare, name="bench-bare"),
    path("bench/verify-enqueue/", views.verify_enqueue, name="bench-verify-enqueue"),
]
