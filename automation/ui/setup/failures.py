"""What a vendor's failure tells the merchant: our own German sentence per kind of failure, never
the vendor's text; that text goes to the log, with secrets masked.

Why: an error body is the vendor's (or a proxy's) to write, and one that echoed the request put
an access token into the set-up page. The kinds a merchant can act on: unauthorised (check the
credentials), not found (check the address or id), timeout and rate limited (try again), and
every other failure (see the log).
"""

from __future__ import annotations

import enum
import logging
import re
import smtplib
import traceback

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import formats
from django.utils.translation import gettext as _

from automation.platform.exceptions import AdGroupMissing, PermanentAdsError, TransientAdsError
from automation.platform.masking import mask_secrets
from automation.shopify.transport import (
    ShopifyAdminError,
    ShopifyCredentialsError,
    ShopifyThrottled,
)
from automation.stripe.checkout import StripeError, StripeKeyRefused

logger = logging.getLogger(__name__)


class Kind(enum.StrEnum):
    UNAUTHORISED = "unauthorised"
    NOT_FOUND = "not_found"
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"
    OTHER = "other"


# The codes our Google Ads adapter puts first in each part of its message ("CODE: text; ...").
_ADS_CODE = re.compile(r"(?:^|; )([A-Z][A-Z_]+):")
_ADS_TIMEOUT = frozenset({"DEADLINE_EXCEEDED"})
_ADS_RATE_LIMITED = frozenset(
    {"RESOURCE_EXHAUSTED", "RESOURCE_TEMPORARILY_EXHAUSTED", "RATE_EXCEEDED"}
)
_ADS_UNAUTHORISED_MARKS = (
    "PERMISSION_DENIED",
    "UNAUTHENTICATED",
    "AUTHENTICATION",
    "AUTHORIZATION",
)
_ADS_CREDENTIALS = frozenset({"CONFIGURATION_ERROR", "OAUTH_REFRESH_ERROR"})


def shopify_kind(err: ShopifyAdminError) -> Kind:
    """The kind of an Admin API failure, from its type, HTTP status and cause."""
    if isinstance(err, ShopifyCredentialsError) or err.status in (401, 403):
        return Kind.UNAUTHORISED
    if isinstance(err, ShopifyThrottled) or err.status == 429:
        return Kind.RATE_LIMITED
    if err.status == 404:
        return Kind.NOT_FOUND
    if isinstance(err.__cause__, requests.Timeout):
        return Kind.TIMEOUT
    return Kind.OTHER


def ads_codes(err: Exception) -> set[str]:
    """The error codes our adapter named in a Google Ads error's message."""
    return set(_ADS_CODE.findall(str(err)))


def ads_kind(err: TransientAdsError | PermanentAdsError) -> Kind:
    """The kind of a Google Ads failure, from its type and the codes the adapter named."""
    codes = ads_codes(err)
    if isinstance(err, AdGroupMissing):
        return Kind.NOT_FOUND
    if codes & _ADS_TIMEOUT:
        return Kind.TIMEOUT
    if codes & _ADS_RATE_LIMITED:
        return Kind.RATE_LIMITED
    if codes & _ADS_CREDENTIALS or any(
        mark in code for code in codes for mark in _ADS_UNAUTHORISED_MARKS
    ):
        return Kind.UNAUTHORISED
    return Kind.OTHER


def mail_kind(err: Exception) -> Kind:
    """The kind of a mail server failure."""
    if isinstance(err, smtplib.SMTPAuthenticationError):
        return Kind.UNAUTHORISED
    # smtplib turns a greeting that never comes into SMTPServerDisconnected, from the timeout
    if isinstance(err, TimeoutError) or isinstance(err.__context__, TimeoutError):
        return Kind.TIMEOUT
    return Kind.OTHER


def _seconds() -> dict[str, object]:
    return {"seconds": formats.localize(settings.VENDOR_INTERACTIVE_TIMEOUT)}


def shopify_sentence(err: ShopifyAdminError, kind: Kind) -> str:
    if isinstance(err, ShopifyCredentialsError):
        return _(
            "Shopify refused the client id or client secret: check SHOPIFY_CLIENT_ID and "
            "SHOPIFY_CLIENT_SECRET."
        )
    if kind is Kind.UNAUTHORISED and err.status == 403:
        return _(
            "The app lacks a permission for this (access scope): add it to the app in "
            "Shopify and install the app again."
        )
    return {
        Kind.UNAUTHORISED: _(
            "Shopify refused the access (wrong or revoked token, or the app was "
            "uninstalled from the shop)."
        ),
        Kind.NOT_FOUND: _(
            "No Shopify Admin API answers at %(url)s: check SHOPIFY_ADMIN_URL and "
            "SHOPIFY_API_VERSION."
        )
        % {"url": settings.SHOPIFY_ADMIN_URL},
        Kind.TIMEOUT: _("Shopify did not answer within %(seconds)s seconds: try again in a minute.")
        % _seconds(),
        Kind.RATE_LIMITED: _(
            "Shopify is slowing us down right now (too many requests): try again in a minute."
        ),
        Kind.OTHER: _(
            "Shopify could not be reached or answered with an error; the details are in the "
            "service's log."
        ),
    }[kind]


def ads_sentence(err: TransientAdsError | PermanentAdsError, kind: Kind) -> str:
    if kind is Kind.UNAUTHORISED and ads_codes(err) & _ADS_CREDENTIALS:
        return _(
            "The Google Ads credentials are missing or invalid: check the GOOGLE_ADS_* "
            "settings; the details are in the service's log."
        )
    if kind is Kind.OTHER and isinstance(err, TransientAdsError):
        return _("Google Ads cannot be reached right now: try again later.")
    return {
        Kind.UNAUTHORISED: _(
            "Google Ads refuses access to this account: check GOOGLE_ADS_CUSTOMER_ID and "
            "GOOGLE_ADS_LOGIN_CUSTOMER_ID."
        ),
        Kind.NOT_FOUND: _("Google Ads does not know this ad group (any more)."),
        Kind.TIMEOUT: _(
            "Google Ads cannot be reached right now: it did not answer within %(seconds)s "
            "seconds. Try again later."
        )
        % _seconds(),
        Kind.RATE_LIMITED: _(
            "Google Ads is slowing us down right now (too many requests): try again in a minute."
        ),
        Kind.OTHER: _("Google Ads refused the request; the details are in the service's log."),
    }[kind]


def mail_sentence(kind: Kind) -> str:
    if kind is Kind.UNAUTHORISED:
        return _("The mail server refused the user name or password: check EMAIL_URL.")
    if kind is Kind.TIMEOUT:
        return (
            _(
                "The mail server did not answer within %(seconds)s seconds: check EMAIL_URL "
                "(host and port)."
            )
            % _seconds()
        )
    return _(
        "The mail server refused or could not be reached; the details are in the service's log."
    )


def stripe_kind(err: StripeError) -> Kind:
    """The kind of a Stripe failure: a refused key, no answer in time, or anything else."""
    if isinstance(err, StripeKeyRefused):
        return Kind.UNAUTHORISED
    if isinstance(err.__cause__, requests.Timeout):
        return Kind.TIMEOUT
    return Kind.OTHER


def stripe_sentence(err: StripeError, kind: Kind) -> str:
    if kind is Kind.UNAUTHORISED and isinstance(err, StripeKeyRefused) and err.status == 403:
        return _(
            "Stripe accepts the key but it may not read Checkout Sessions: give the restricted "
            "key the permission “Checkout Sessions: Read” in the Stripe Dashboard."
        )
    return {
        Kind.UNAUTHORISED: _(
            "Stripe refused the API key (wrong, revoked or from another account): check the "
            "key in the Stripe Dashboard under Developers → API keys."
        ),
        Kind.TIMEOUT: _("Stripe did not answer within %(seconds)s seconds: try again in a minute.")
        % _seconds(),
        Kind.OTHER: _(
            "Stripe could not be reached or answered with an error; the details are in the "
            "service's log."
        ),
    }.get(kind, "")


def explain(err: Exception) -> str:
    """A German sentence (through the catalogue) for the failure of a test, a picker or an Ads
    change made from a page; the vendor's own text is logged, masked, and never shown."""
    if isinstance(err, ShopifyAdminError):
        kind = shopify_kind(err)
        _log("Shopify", kind, err)
        return shopify_sentence(err, kind)
    if isinstance(err, TransientAdsError | PermanentAdsError):
        kind = ads_kind(err)
        _log("Google Ads", kind, err)
        return ads_sentence(err, kind)
    if isinstance(err, StripeError):
        kind = stripe_kind(err)
        _log("Stripe", kind, err)
        return stripe_sentence(err, kind)
    if isinstance(err, ImproperlyConfigured):  # our own text, naming the setting
        return _("A setting is missing or wrong (%(detail)s).") % {"detail": mask_secrets(str(err))}
    if isinstance(err, smtplib.SMTPException | OSError):
        kind = mail_kind(err)
        _log("the mail server", kind, err)
        return mail_sentence(kind)
    logger.error(
        "a call from a staff page failed unexpectedly: %s",
        mask_secrets("".join(traceback.format_exception(err))),
    )
    return _("Unexpected error (%(kind)s); the details are in the service's log.") % {
        "kind": type(err).__name__
    }


def _log(vendor: str, kind: Kind, err: Exception) -> None:
    """The vendor's text for whoever reads the log, secrets masked (no traceback: it would
    repeat the text unmasked)."""
    logger.warning(
        "%s failed (%s): %s: %s", vendor, kind.value, type(err).__name__, mask_secrets(str(err))
    )
