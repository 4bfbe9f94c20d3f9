"""Who may open the staff pages outside the model admin (dashboard, set-up, pickers) and press
their buttons: the one table, and the decorator every such view wears.

The same Django model permissions the admin and the API ask for: `view` to see what a page
shows, `add`/`change`/`delete` to act; superusers pass (`User.has_perm`). Staff status alone
opens nothing. A view wrapped by `requires` answers 403 (Django's permission-denied page) before
it runs; anonymous visitors and non-staff users are sent to the admin's login, as by the admin.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps

from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

AnyUser = User | AnonymousUser


@dataclass(frozen=True)
class Rule:
    """Allowed with every permission of at least one of `choices` (each a set held together)."""

    choices: tuple[frozenset[str], ...]

    def allows(self, user: AnyUser) -> bool:
        if not (user.is_active and user.is_staff):
            return False
        return any(user.has_perms(perms) for perms in self.choices)

    def __or__(self, other: Rule) -> Rule:
        return Rule(self.choices + other.choices)


def all_of(*perms: str) -> Rule:
    """A rule asking for all of `perms`."""
    return Rule((frozenset(perms),))


def any_of(*perms: str) -> Rule:
    """A rule asking for one of `perms`."""
    return Rule(tuple(frozenset([perm]) for perm in perms))


# --- the dashboard: each section asks to see the rows it summarises -------------------------

DASHBOARD_SECTIONS: dict[str, Rule] = {
    # sell-outs are the ad group actions of watched products
    "reaction": all_of("automation.view_adgroupaction", "automation.view_watchedproduct"),
    # the decisions and what they did (the API's reminder results ask the same)
    "reminders": all_of("automation.view_reminderdecision"),
    # deliveries per day, dead letters, the last reconciliation and the subscriptions it saw
    "health": all_of("automation.view_delivery", "automation.view_reconcilerun"),
}
DASHBOARD = Rule(tuple(perms for rule in DASHBOARD_SECTIONS.values() for perms in rule.choices))
"""The page opens for anyone who may see one of its sections."""
DEMO_REMOVE = all_of("automation.delete_watchedproduct")
"""Removing the demo deletes its watched products (and the rows only they caused)."""

# --- the set-up page: see a connection, test it, configure it --------------------------------

SETUP_SECTIONS: dict[str, Rule] = {
    # the webhooks this service receives (last delivery, secret set, who owns the subscriptions)
    "shopify": all_of("automation.view_delivery"),
    # the ad groups it switches (mode, account, how many are watched)
    "google_ads": all_of("automation.view_adgroup"),
    # how reminder mails leave (backend, sender)
    "email": all_of("automation.view_remindersettings"),
    "stripe": all_of("automation.view_delivery"),
    # who receives the alerts (their number; the addresses only with ALERT_RECIPIENTS)
    "alerts": all_of("automation.view_delivery") | all_of("automation.view_remindersettings"),
}
SETUP = Rule(tuple(perms for rule in SETUP_SECTIONS.values() for perms in rule.choices))
SETUP_ACTIONS: dict[str, Rule] = {
    # Each button also asks to see its section, where its result is shown.
    # Reads the shop and its subscriptions, offers "Set up now": changes what webhooks arrive.
    "shopify_test": all_of("automation.view_delivery", "automation.change_delivery"),
    "shopify_webhooks": all_of("automation.view_delivery", "automation.change_delivery"),
    # Reads the account and the watched ad groups from Google: for those who change ad groups.
    "google_ads_test": all_of("automation.view_adgroup", "automation.change_adgroup"),
    # Sends a mail through the reminders' mail set-up.
    "email_test": all_of("automation.view_remindersettings", "automation.change_remindersettings"),
    # Stores the connection settings entered on the page (secrets encrypted).
    "shopify_save": all_of("automation.view_delivery", "automation.change_connectionsettings"),
    "google_ads_save": all_of("automation.view_adgroup", "automation.change_connectionsettings"),
    "stripe_save": all_of("automation.view_delivery", "automation.change_connectionsettings"),
    # Lists one Checkout Session with the Stripe key: reads only, like the paid check does.
    "stripe_test": all_of("automation.view_delivery", "automation.change_delivery"),
    # Signs in with Google and stores the refresh token; choosing the account stores its ids.
    "google_connect": all_of("automation.view_adgroup", "automation.change_connectionsettings"),
    "google_ads_accounts": all_of(
        "automation.view_adgroup", "automation.change_connectionsettings"
    ),
    "google_ads_account": all_of("automation.view_adgroup", "automation.change_connectionsettings"),
}
GOOGLE_SIGN_IN = SETUP_ACTIONS["google_connect"]
"""Google's callback finishes the sign-in "google_connect" started."""
ALERT_RECIPIENTS = all_of("automation.change_remindersettings")
OWN_ADDRESS = all_of()
"""Every active staff user may give their own e-mail address (where alerts reach them):
the form changes the signed-in user only (automation/ui/setup/first_login.py)."""
"""Who gets alerts (people's addresses): for those who run the mail set-up, not every reader."""

# --- the pickers: for those who fill in the forms that use them -------------------------------

PICK_PRODUCTS = any_of("automation.add_watchedproduct", "automation.change_watchedproduct")
PICK_AD_GROUPS = PICK_PRODUCTS | any_of("automation.add_adgroup", "automation.change_adgroup")


def check(user: AnyUser, rule: Rule) -> None:
    """Raise PermissionDenied (403) unless `rule` allows `user`."""
    if not rule.allows(user):
        raise PermissionDenied


def allowed(user: AnyUser, rules: dict[str, Rule]) -> frozenset[str]:
    """The names in `rules` that `user` may see or press (a template asks `name in allowed`)."""
    return frozenset(name for name, rule in rules.items() if rule.allows(user))


def requires(rule: Rule) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """The view for staff whom `rule` allows; other staff get 403, the rest the login.

    The guarded view carries its rule as `access_rule`, so a test can find every view that
    lacks one.
    """

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def guarded(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            check(request.user, rule)
            return view(request, *args, **kwargs)

        wrapped = staff_member_required(guarded)
        wrapped.access_rule = rule  # type: ignore[attr-defined]
        return wrapped

    return decorate


PAGES: dict[str, Rule] = {"dashboard": DASHBOARD, "setup": SETUP}
"""The pages other pages link to, by URL name (the `may_open` template filter asks here)."""
