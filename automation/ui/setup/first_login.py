"""After signing in, a staff user without an e-mail address is asked for one, once.

Alerts go to the staff users' addresses when ALERT_EMAILS is not set (`alerts.recipients`);
an admin made by `createsuperuser` without an address would receive nothing. While
ALERT_EMAILS is empty, the middleware
sends such a user to one small form on the first admin page they open after signing in; the
session remembers that they were asked (whether they saved or skipped), so it never loops and
never asks twice in one session. Only GET requests for admin pages are redirected: a form
being submitted, a popup or a JSON picker is never interrupted.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from automation.ui import page_access

ASKED = "automation_email_asked"
"""Session key: this session's user was asked for an address (saved or skipped)."""


def needs_asking(request: HttpRequest) -> bool:
    """Whether this request should be sent to the address form first."""
    path = request.path
    if request.method != "GET" or not path.startswith(reverse("admin:index")):
        return False  # webhooks and the API never touch the session here
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_active or not user.is_staff:
        return False
    if user.email or settings.ALERT_EMAILS or request.session.get(ASKED):
        return False
    if "_popup" in request.GET:
        return False
    skipped = (
        reverse("setup-email"),
        reverse("admin:logout"),
        reverse("admin:login"),
        reverse("admin:jsi18n"),
        reverse("setup-pick-products"),
        reverse("setup-pick-ad-groups"),
    )
    return not path.startswith(skipped)


class FirstLoginMiddleware:
    """Send a signed-in staff user without an address to the address form, once per session."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if needs_asking(request):
            request.session[ASKED] = True
            target = reverse("setup-email")
            return redirect(f"{target}?{_next_query(request.get_full_path())}")
        return self.get_response(request)


def _next_query(path: str) -> str:
    return urlencode({"next": path})


class EmailForm(forms.Form):
    """One field: where alerts reach this user."""

    email = forms.EmailField(
        label=gettext_lazy("Your e-mail address"),
        max_length=254,
        help_text=gettext_lazy(
            "Alerts go here when something needs you: the safety brake holding pauses, a "
            "delivery given up, a connection failing."
        ),
    )


@page_access.requires(page_access.OWN_ADDRESS)
@require_http_methods(["GET", "POST"])
def ask_email(request: HttpRequest) -> HttpResponse:
    """The address form: saving stores the address on the user, skipping only remembers."""
    request.session[ASKED] = True
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        next_url = ""
    next_url = next_url or reverse("admin:index")
    if request.method == "POST" and "skip" in request.POST:
        return redirect(next_url)
    form = EmailForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        user = request.user
        user.email = form.cleaned_data["email"]
        user.save(update_fields=["email"])
        messages.success(request, _("Saved: alerts go to %(address)s.") % {"address": user.email})
        return redirect(next_url)
    context = {
        **admin.site.each_context(request),
        "title": _("Where should alerts reach you?"),
        "form": form,
        "next": next_url,
    }
    return render(request, "admin/setup_email.html", context)
