"""/admin/setup/: the set-up page and the pickers' JSON (included before the admin's own URLs)."""

from django.urls import path

from automation.ui.setup import first_login, views

urlpatterns = [
    path("", views.setup, name="setup"),
    path("email/", first_login.ask_email, name="setup-email"),
    path("pick/products/", views.pick_products, name="setup-pick-products"),
    path("pick/ad-groups/", views.pick_ad_groups, name="setup-pick-ad-groups"),
    path("google/callback/", views.google_callback, name="setup-google-callback"),
]
