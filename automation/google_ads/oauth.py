"""Google's OAuth 2.0 web flow for "Connect with Google": the only module that imports
google_auth_oauthlib.

Google's guide (https://developers.google.com/identity/protocols/oauth2/web-server): send the
merchant to the authorization endpoint with `access_type=offline` (a refresh token is issued
only then) and `prompt=consent` (else a repeated consent may come without one), a `state`
that the callback compares, and PKCE (the library makes the code verifier); the callback's
`code` is exchanged at the token endpoint for the tokens. The Google Ads API's scope is
https://www.googleapis.com/auth/adwords
(https://developers.google.com/google-ads/api/docs/oauth/overview).
"""

from __future__ import annotations

from dataclasses import dataclass

import requests
from google_auth_oauthlib.flow import Flow
from oauthlib.oauth2.rfc6749.errors import OAuth2Error

ADS_SCOPE = "https://www.googleapis.com/auth/adwords"


class SignInFailed(Exception):
    """The sign-in did not give us a refresh token; `reason` is a short code for the page."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True)
class Client:
    """The OAuth client (web application) and Google's endpoints."""

    client_id: str
    client_secret: str
    redirect_uri: str
    auth_uri: str
    token_uri: str

    def flow(self, *, state: str | None = None, code_verifier: str | None = None) -> Flow:
        config = {
            "web": {
                "client_id": self.client_id,
                "client_secret": self.client_secret,
                "auth_uri": self.auth_uri,
                "token_uri": self.token_uri,
                "redirect_uris": [self.redirect_uri],
            }
        }
        return Flow.from_client_config(
            config,
            scopes=[ADS_SCOPE],
            redirect_uri=self.redirect_uri,
            state=state,
            code_verifier=code_verifier,
        )


@dataclass(frozen=True)
class Started:
    """Where to send the merchant, and what the callback must find in the session."""

    url: str
    state: str
    code_verifier: str


def start(client: Client) -> Started:
    """The authorization URL (offline access, consent asked every time) with a fresh state."""
    flow = client.flow()
    url, state = flow.authorization_url(
        access_type="offline", prompt="consent", include_granted_scopes="false"
    )
    return Started(url, state, flow.code_verifier or "")


def refresh_token(
    client: Client, *, code: str, state: str, code_verifier: str, timeout: float
) -> str:
    """Exchange the callback's `code` for tokens within `timeout` seconds; the refresh token.

    The caller has compared the callback's state with the session's. Raises SignInFailed.
    """
    flow = client.flow(state=state, code_verifier=code_verifier)
    try:
        token = flow.fetch_token(code=code, timeout=timeout)
    except requests.Timeout as err:
        raise SignInFailed("timeout", type(err).__name__) from err
    except requests.RequestException as err:
        raise SignInFailed("unreachable", type(err).__name__) from err
    except OAuth2Error as err:
        raise SignInFailed("refused", err.error) from err
    except ValueError as err:  # an answer that is not a token (e.g. not JSON)
        raise SignInFailed("refused", type(err).__name__) from err
    refresh = token.get("refresh_token")
    if not refresh:
        raise SignInFailed("no_refresh_token")
    scopes = token.get("scope") or []
    if isinstance(scopes, str):
        scopes = scopes.split()
    if scopes and ADS_SCOPE not in scopes:
        raise SignInFailed("scope_not_granted")
    return str(refresh)
