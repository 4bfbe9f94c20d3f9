""" "Connect with Google" on the set-up page: start the OAuth web flow, finish it in the
callback, store the refresh token sealed (automation.platform.connections).

The state and PKCE verifier live in the merchant's session and are used once: a callback whose
state differs (another browser, a forged link, a second tab's older sign-in) is refused before
anything is sent to Google. The code exchange waits VENDOR_INTERACTIVE_TIMEOUT seconds at most.
"""

from __future__ import annotations

import hmac
import logging
import re

from django.conf import settings
from django.contrib.sessions.backends.base import SessionBase
from django.urls import reverse
from django.utils.translation import gettext as _

from automation.google_ads import adapter as google_ads
from automation.google_ads import oauth as google_oauth
from automation.google_ads import statuses as ads
from automation.platform import connections
from automation.ui.setup.failures import explain
from automation.ui.setup.probes import Probe

logger = logging.getLogger(__name__)

SESSION_KEY = "setup_google_sign_in"


class NotReady(Exception):
    """Something the sign-in needs is missing; the message says what, for the page."""


def redirect_uri() -> str:
    """Our callback's public address (to be entered in the OAuth client at Google)."""
    return f"{settings.PUBLIC_BASE_URL}{reverse('setup-google-callback')}"


def _client() -> google_oauth.Client:
    values = connections.current()
    if not (values.google_ads_client_id and values.google_ads_client_secret):
        raise NotReady(_("Enter the OAuth client id and client secret first."))
    return google_oauth.Client(
        client_id=values.google_ads_client_id.value,
        client_secret=values.google_ads_client_secret.value,
        redirect_uri=redirect_uri(),
        auth_uri=settings.GOOGLE_OAUTH_AUTH_URI,
        token_uri=settings.GOOGLE_OAUTH_TOKEN_URI,
    )


def start(session: SessionBase) -> str:
    """The URL at Google to send the merchant to; remembers state and verifier in `session`."""
    if connections.current().google_ads_refresh_token.from_environment:
        raise NotReady(
            _("GOOGLE_ADS_REFRESH_TOKEN is set in the environment and wins: remove it there first.")
        )
    started = google_oauth.start(_client())
    session[SESSION_KEY] = {"state": started.state, "verifier": started.code_verifier}
    return started.url


def finish(session: SessionBase, params: dict[str, str]) -> None:
    """Check the callback's state, exchange its code, store the refresh token.

    Raises NotReady (missing client, state mismatch, Google's refusal) with the page's sentence.
    """
    started = session.get(SESSION_KEY) or {}
    expected, given = str(started.get("state", "")), params.get("state", "")
    if not expected or not given or not hmac.compare_digest(expected, given):
        # the session's own sign-in stays open: a forged callback must not end it
        logger.warning("Google sign-in refused: the state does not match this session's")
        raise NotReady(_("The sign-in could not be matched to this session: start it again."))
    del session[SESSION_KEY]  # used once
    if params.get("error"):
        logger.info("Google sign-in ended at Google: %s", params["error"][:100])
        raise NotReady(
            _("Google did not grant access (%(error)s).") % {"error": params["error"][:100]}
        )
    code = params.get("code", "")
    if not code:
        raise NotReady(_("Google's answer carried no code: start the sign-in again."))
    try:
        token = google_oauth.refresh_token(
            _client(),
            code=code,
            state=expected,
            code_verifier=str(started.get("verifier", "")),
            timeout=settings.VENDOR_INTERACTIVE_TIMEOUT,
        )
    except google_oauth.SignInFailed as err:
        logger.warning("Google sign-in failed: %s", err.reason)
        raise NotReady(_SIGN_IN_FAILURES.get(err.reason, _SIGN_IN_FAILURES["refused"])()) from err
    connections.store(google_ads_refresh_token=token)  # ads.google_client() builds anew
    logger.info("Google sign-in completed: refresh token stored")


_SIGN_IN_FAILURES = {
    "timeout": lambda: _("Google did not answer in time: try again."),
    "unreachable": lambda: _("Google cannot be reached right now: try again later."),
    "refused": lambda: _(
        "Google refused the sign-in: check the OAuth client id, its secret and the redirect "
        "address entered at Google."
    ),
    "no_refresh_token": lambda: _(
        "Google sent no refresh token: remove the app's access in your Google account and "
        "connect again."
    ),
    "scope_not_granted": lambda: _(
        "Access to Google Ads was not granted: connect again and allow it."
    ),
}


# --- choosing the account ------------------------------------------------------------------

ACCOUNT_VALUE = re.compile(r"(?P<customer>\d{10}):(?P<login>\d{10})?")
"""A choice as the page posts it: "customer id:manager id" (the manager empty if none)."""


def account_value(choice: google_ads.AccountChoice) -> str:
    return f"{choice.customer_id}:{choice.login_customer_id}"


def accounts() -> Probe:
    """The accounts the sign-in reaches, to choose from (a result for the Google Ads section)."""
    try:
        found = google_ads.accessible_accounts(
            ads.google_client_for_page(), timeout=settings.VENDOR_INTERACTIVE_TIMEOUT
        )
    except Exception as err:  # noqa: BLE001 (every failure becomes a sentence, never a 500)
        return Probe(False, explain(err))
    if not found:
        return Probe(False, _("This Google sign-in reaches no Google Ads account."))
    return Probe(True, _("Choose the account whose ad groups are switched."), accounts=found)


def choose_account(value: str) -> Probe:
    """Store the chosen account and its manager, if the sign-in really reaches that pair."""
    values = connections.current()
    if values.google_ads_customer_id.from_environment:
        return Probe(
            False,
            _("GOOGLE_ADS_CUSTOMER_ID is set in the environment and wins: change it there."),
        )
    match = ACCOUNT_VALUE.fullmatch(value.strip())
    if match is None:
        return Probe(False, _("Choose one of the accounts listed."))
    listing = accounts()
    if not listing.ok:
        return listing
    chosen = next((c for c in listing.accounts if account_value(c) == match[0]), None)
    if chosen is None:
        listing.ok = False
        listing.message = _("This account is not among those your Google sign-in reaches.")
        return listing
    connections.store(
        google_ads_customer_id=chosen.customer_id,
        google_ads_login_customer_id=chosen.login_customer_id,
    )
    logger.info(
        "Google Ads account chosen: %s (manager %s)",
        chosen.customer_id,
        chosen.login_customer_id or "-",
    )
    return Probe(
        True,
        _("Saved: the account “%(name)s” (%(id)s).")
        % {"name": chosen.name, "id": chosen.customer_id},
    )
