"""The set-up page (/admin/setup/) and the pickers' JSON, for staff, in the admin's frame.

GET shows each connection's state from settings and the database; a POST runs one test button
and shows the same page with its result. Thin by design: checks, probes and pickers do the work.
Who may see which section and press which button is page_access's table: a button the user may
not press is not shown, and pressing it anyway answers 403 before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from automation.shopify import access as shopify_access
from automation.shopify import subscriptions
from automation.ui import page_access
from automation.ui.setup import connect, google_sign_in, pickers, probes
from automation.ui.setup import connection_status as checks

# POSTed `action` → (section it belongs to, the probe to run for the signed-in user)
ACTIONS: dict[str, tuple[str, Callable[[HttpRequest], probes.Probe | HttpResponse]]] = {
    "shopify_test": ("shopify", lambda request: probes.try_shopify()),
    "shopify_webhooks": ("shopify", lambda request: probes.set_up_webhooks()),
    "google_ads_test": ("google_ads", lambda request: probes.try_google_ads()),
    "email_test": ("email", lambda request: probes.send_test_mail(request.user.email)),
    "stripe_test": ("stripe", lambda request: probes.try_stripe()),
    "shopify_save": ("shopify", lambda request: _save(request, "shopify")),
    "google_ads_save": ("google_ads", lambda request: _save(request, "google_ads")),
    "stripe_save": ("stripe", lambda request: _save(request, "stripe")),
    "google_connect": ("google_ads", lambda request: _start_google_sign_in(request)),
    "google_ads_accounts": ("google_ads", lambda request: google_sign_in.accounts()),
    "google_ads_account": (
        "google_ads",
        lambda request: google_sign_in.choose_account(request.POST.get("account", "")),
    ),
}


def _start_google_sign_in(request: HttpRequest) -> probes.Probe | HttpResponse:
    """To Google's consent page, or why not."""
    try:
        return HttpResponseRedirect(google_sign_in.start(request.session))
    except google_sign_in.NotReady as err:
        return probes.Probe(False, str(err))


def _save(request: HttpRequest, section: str) -> probes.Probe:
    """Store the section's connection form; its errors as the result's lines."""
    form = connect.FORMS[section](request.POST)
    if not form.is_valid():
        lines = [
            f"{form.fields[name].label}: {' '.join(errors)}"
            for name, errors in form.errors.items()
            if name in form.fields
        ]
        return probes.Probe(False, _("Not saved."), lines)
    changed = form.save()
    if not changed:
        return probes.Probe(True, _("Nothing changed."))
    return probes.Probe(True, _("Saved."))


@page_access.requires(page_access.SETUP)
@require_http_methods(["GET", "POST"])
def setup(request: HttpRequest) -> HttpResponse:
    """The connections the user may see, with their lights and what is missing; a POST runs
    one test first (403 for a user who may not press it)."""
    results: dict[str, probes.Probe] = {}
    if request.method == "POST":
        name = request.POST.get("action", "")
        action = ACTIONS.get(name)
        if action is not None:
            page_access.check(request.user, page_access.SETUP_ACTIONS[name])
            section, run = action
            outcome = run(request)
            if isinstance(outcome, HttpResponse):
                return outcome
            results[section] = outcome
    visible = page_access.allowed(request.user, page_access.SETUP_SECTIONS)
    recipients = page_access.ALERT_RECIPIENTS.allows(request.user)
    sections = [
        section
        for section in checks.sections(request.user.email, alert_recipients=recipients)
        if section.key in visible
    ]
    actions = page_access.allowed(request.user, page_access.SETUP_ACTIONS)
    signed_in = _signed_in_result(request)
    for section in sections:
        section.result = results.get(section.key) or (
            signed_in if section.key == "google_ads" else None
        )
        if f"{section.key}_save" in actions:
            section.form = connect.FORMS[section.key]()
    context = {
        **admin.site.each_context(request),
        "title": _("Set-up"),
        "sections": sections,
        "actions": actions,
        "webhooks_managed_here": _webhooks_managed_here(),
        "google_redirect_uri": google_sign_in.redirect_uri(),
        "shopify_webhook_url": subscriptions.callback_url(),
        "stripe_webhook_url": checks.stripe_webhook_url(),
    }
    return render(request, "admin/setup.html", context)


SIGNED_IN_KEY = "setup_google_signed_in"


def _signed_in_result(request: HttpRequest) -> probes.Probe | None:
    """What the Google callback just found (shown once, in the Google Ads section)."""
    found = request.session.pop(SIGNED_IN_KEY, None)
    if not found:
        return None
    if not found.get("ok"):
        return probes.Probe(False, str(found.get("message", "")))
    listing = google_sign_in.accounts()
    listing.lines.insert(0, listing.message)
    listing.message = str(found.get("message", ""))
    return listing


@page_access.requires(page_access.GOOGLE_SIGN_IN)
@require_GET
def google_callback(request: HttpRequest) -> HttpResponse:
    """Google sends the merchant back here: check state, store the refresh token, show why not."""
    try:
        google_sign_in.finish(request.session, request.GET.dict())
    except google_sign_in.NotReady as err:
        request.session[SIGNED_IN_KEY] = {"ok": False, "message": str(err)}
    else:
        request.session[SIGNED_IN_KEY] = {
            "ok": True,
            "message": _("Connected with Google. Now choose the Google Ads account."),
        }
    return redirect(f"{reverse('setup')}#setup-google_ads")


def _webhooks_managed_here() -> bool:
    """Whether "Set up now" may be offered: we own the subscriptions and can reach the shop."""
    managed = shopify_access.webhooks_managed_by() is shopify_access.WebhookManager.API
    return managed and shopify_access.is_configured()


@page_access.requires(page_access.PICK_PRODUCTS)
@require_GET
def pick_products(request: HttpRequest) -> JsonResponse:
    """`?q=` → variants of the shop as {results: [{value, label, detail, ...}], hint}."""
    return JsonResponse(pickers.products(request.GET.get("q", "")).as_json())


@page_access.requires(page_access.PICK_AD_GROUPS)
@require_GET
def pick_ad_groups(request: HttpRequest) -> JsonResponse:
    """`?q=` → ad groups of the account, same shape as pick_products."""
    return JsonResponse(pickers.ad_groups(request.GET.get("q", "")).as_json())
