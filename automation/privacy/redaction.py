"""Personal data: masked addresses for logs, pseudonyms for links, Shopify's privacy topics.

A delivery and a checkout carry pseudonyms of the customer's e-mail, Shopify customer id and
phone number, so `customers/redact` finds them by whichever of the three the request names.

Shopify signs only the body: the topic and shop headers travel unsigned, so a captured body
of any topic can be re-sent under a privacy topic. Each body is checked at the edge for its
topic's shape and for naming the shop of the delivery's header
(automation/intake/sources/shopify_privacy.py; a mismatch ends `invalid` with the reason), and
`shop/redact`, which wipes the whole shop, also asks that shop's own Admin API whether our
access really ended before it deletes anything; `customers/redact` touches the asking shop's
rows only.
"""

import enum
import logging
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Q

from automation.intake.handling import Outcome, handles
from automation.intake.sources.shopify_privacy import (
    DataRequestBody,
    RedactRequest,
    ShopRedactRequest,
)
from automation.models import CheckoutState, DataRequest, Delivery, ReminderDecision
from automation.platform import alerts, claims, notes
from automation.platform.addresses import identifying_address
from automation.platform.pseudonyms import (
    mask_email,
    matching_refs,
    phone_digits,
)
from automation.shopify import access as shopify_access
from automation.shopify.transport import ShopifyAdminError, ShopifyCredentialsError

logger = logging.getLogger(__name__)


def _identifiers(request: RedactRequest) -> list[str]:
    """Which identifiers the request carries, for the note (never the values)."""
    named = [("id", True), ("email", request.email), ("phone", phone_digits(request.phone))]
    return [name for name, present in named if present]


@handles("shopify", "customers/redact")
def handle_customer_redact(request: RedactRequest, delivery: Delivery) -> Outcome:
    """Delete the customer's checkouts and decisions, drop their raw bodies; by id, e-mail or
    phone, whichever the request carries."""
    # Checkouts and decisions store the normalised address (automation/platform/addresses.py),
    # bodies its pseudonym: both are found by the address's key, whatever spelling the request uses
    # (an IDN domain in Unicode or in A-labels, a quoted local part, another case).
    email = identifying_address(request.email) or request.email
    refs = matching_refs(email, request.customer_id, request.phone)
    checkout_match = Q(customer_id_ref__in=refs["customer_id_ref"])
    body_match = Q(customer_id_ref__in=refs["customer_id_ref"])
    email_match = Q()
    if request.email:
        email_match = Q(email__iexact=email) | Q(email__iexact=request.email)
        checkout_match |= email_match
        body_match |= Q(customer_ref__in=refs["customer_ref"])
    if "phone_ref" in refs:
        checkout_match |= Q(phone_ref__in=refs["phone_ref"])
        body_match |= Q(phone_ref__in=refs["phone_ref"])
    with transaction.atomic():
        checkouts = CheckoutState.objects.filter(checkout_match, shop_domain=delivery.shop_domain)
        count, _ = checkouts.delete()  # decisions cascade
        if request.email:
            # a decision outlives a checkout whose address changed since: it still names this one
            more, _ = ReminderDecision.objects.filter(
                email_match, checkout__shop_domain=delivery.shop_domain
            ).delete()
            count += more
        # only the asking shop's bodies: another shop of ours may know the same id, address
        # or phone, and its customer asked nothing of us
        bodies = (
            Delivery.objects.filter(
                body_match, shop_domain=delivery.shop_domain, body__isnull=False
            )
            .exclude(pk=delivery.pk)
            .update(body=None)
        )
        # the request's own row keeps no pseudonym: after the erasure nothing leads back to her
        Delivery.objects.filter(pk=delivery.pk).update(
            body=None, customer_ref="", customer_id_ref="", phone_ref=""
        )
    by = [notes.note(f"identifier_{name}") for name in _identifiers(request)]
    return Outcome(
        Delivery.Status.DONE,
        notes.note("customer_redacted", by=by, rows=count, bodies=bodies),
    )


# --- shop/redact ---------------------------------------------------------------------------

# The documented signals that an app was uninstalled, asked of the uninstalled shop itself:
# - a static (offline) token answers 401: offline tokens "are revoked only when the app is
#   uninstalled from a store"
#   (https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens/offline-access-tokens;
#   401 is "credentials ... not present ... or incorrect", https://shopify.dev/docs/api/usage/response-codes);
# - the client credentials grant answers HTTP 400 `app_not_installed` ("The application is not
#   installed on this shop."), as reported on Shopify's developer forum
#   (https://community.shopify.dev/t/client-credentials-grant-returning-app-not-installed-error-despite-app-being-installed/33287).
# Anything else is no confirmation: 403 means a missing access scope (same page), and a 401 to a
# token the grant has just issued contradicts the grant, which still knows the app.
APP_NOT_INSTALLED = "app_not_installed"
# One alert per shop in this period, however often a refused `shop/redact` arrives (a replayed
# body would otherwise mail the merchant once per copy).
REFUSED_ALERT_EVERY = timedelta(hours=24)


class AdminAccess(enum.StrEnum):
    """What the shop's Admin API says about our access."""

    ENDED = "ended"  # a documented uninstall signal from the shop itself: the uninstall is real
    ACTIVE = "active"  # the shop answered: we are still installed
    UNCONFIRMED = "unconfirmed"  # no credentials of this shop, or an answer that proves nothing


@dataclass(frozen=True)
class AccessCheck:
    """The answer and, for the delivery's note and the alert, why."""

    access: AdminAccess
    reason: notes.Note


class AccessCheckUnavailable(Exception):
    """The Admin API could not answer now (5xx, network, throttled): the job retries."""


def check_admin_access(shop_domain: str) -> AccessCheck:
    """Ask this shop's own Admin API whether our access still works, without changing anything.

    Only the shop's own credentials (shopify_access.admin_client_for_shop) can confirm that it
    uninstalled us: another shop's refusal says nothing about this one. Raises
    AccessCheckUnavailable when the answer may change by waiting, so the delivery is retried
    instead of refused or carried out.
    """
    if not shopify_access.is_configured():
        return AccessCheck(
            AdminAccess.UNCONFIRMED,
            notes.note("access_not_configured", settings=shopify_access.missing_settings()),
        )
    client = shopify_access.admin_client_for_shop(shop_domain)
    if client is None:
        return AccessCheck(
            AdminAccess.UNCONFIRMED,
            notes.note(
                "access_other_shop",
                shop=shop_domain,
                admin_shop=shopify_access.admin_shop_domain() or "-",
            ),
        )
    static = shopify_access.access() is shopify_access.Access.STATIC
    try:
        client.shop_info()
    except ShopifyCredentialsError as err:
        if err.code == APP_NOT_INSTALLED:
            return AccessCheck(AdminAccess.ENDED, notes.note("access_app_uninstalled"))
        return AccessCheck(
            AdminAccess.UNCONFIRMED, notes.note("access_credentials_refused", error=str(err))
        )
    except ShopifyAdminError as err:
        if err.status == 401 and static:
            return AccessCheck(
                AdminAccess.ENDED,
                notes.note("access_token_revoked"),
            )
        if err.status == 401:
            return AccessCheck(
                AdminAccess.UNCONFIRMED,
                notes.note("access_new_token_refused"),
            )
        if err.status is not None and 400 <= err.status < 500 and err.status != 429:
            return AccessCheck(
                AdminAccess.UNCONFIRMED,
                notes.note("access_http_error", status=str(err.status), error=str(err)),
            )
        raise AccessCheckUnavailable(
            f"could not ask the shop's Admin API whether our access ended: {err}"
        ) from err
    finally:
        client.close()
    return AccessCheck(AdminAccess.ACTIVE, notes.note("access_still_accepted"))


@handles("shopify", "shop/redact")
def handle_shop_redact(request: ShopRedactRequest, delivery: Delivery) -> Outcome:
    """Delete everything we keep of the shop, once its body and its own Admin API agree.

    Shopify sends `shop/redact` 48 hours after the app was uninstalled
    (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance). So before wiping,
    the asking shop's Admin API, reached with that shop's credentials, must give a documented
    uninstall signal (check_admin_access); while it still answers, without its credentials, or
    on an answer that proves nothing, the request is refused, nothing is deleted and the
    merchant is told.
    """
    check = check_admin_access(delivery.shop_domain)
    if check.access is not AdminAccess.ENDED:
        return _refuse_shop_redact(delivery, request, check)
    shop = delivery.shop_domain
    with transaction.atomic():
        checkouts, _ = CheckoutState.objects.filter(shop_domain=shop).delete()
        DataRequest.objects.filter(shop_domain=shop).delete()
        deliveries, _ = Delivery.objects.filter(shop_domain=shop).exclude(pk=delivery.pk).delete()
        Delivery.objects.filter(pk=delivery.pk).update(body=None)
    return Outcome(
        Delivery.Status.DONE,
        notes.note(
            "shop_redacted", reason=check.reason, checkouts=checkouts, deliveries=deliveries
        ),
    )


def _refuse_shop_redact(
    delivery: Delivery, request: ShopRedactRequest, check: AccessCheck
) -> Outcome:
    """Record the refusal and alert the merchant, at most once per shop and period."""
    if check.access is AdminAccess.ACTIVE:
        refused = notes.note("shop_redact_refused_installed", reason=check.reason)
    else:
        refused = notes.note("shop_redact_refused", reason=check.reason)
    note = str(refused)  # the log and the alert: in the worker's language, as before
    logger.warning("delivery %s: %s", delivery.pk, note)
    key = f"shop-redact-refused:{request.shop_domain}"
    if not claims.claim_once(key, REFUSED_ALERT_EVERY):
        return Outcome(Delivery.Status.REFUSED, notes.note("alerted_already", note=refused))
    subject = f"[Elbkerzen] shop/redact refused for {request.shop_domain}"
    if not alerts.send(subject, _refusal_text(delivery, note)):
        claims.release(key)  # the next refusal tries again
        return Outcome(Delivery.Status.REFUSED, notes.note("alert_not_sent", note=refused))
    return Outcome(Delivery.Status.REFUSED, notes.note("alerted", note=refused))


def _refusal_text(delivery: Delivery, note: str) -> str:
    return (
        "A signed shop/redact request asked us to delete every record of your shop.\n"
        "Shopify sends it 48 hours after the app was uninstalled, but we could not confirm "
        "that the app was uninstalled, so nothing was deleted.\n\n"
        f"Shop:        {delivery.shop_domain}\n"
        f"Webhook id:  {delivery.webhook_id or '-'}\n"
        f"Reason:      {note}\n\n"
        "If you did not uninstall the app, someone may have re-sent an old request: nothing "
        "needs to be done. If you did uninstall it, the shop's data is still stored here: fix "
        "the cause named above (e.g. set up Admin API access) and replay the delivery in the "
        "admin; it is checked again, and deletes once the Admin API refuses our access:\n"
        f"{alerts.admin_url(delivery)}"
    )


# --- customers/data_request -----------------------------------------------------------------


@handles("shopify", "customers/data_request")
def handle_data_request(request: DataRequestBody, delivery: Delivery) -> Outcome:
    """Record the request so the merchant can answer it from the admin."""
    DataRequest.objects.create(
        shop_domain=delivery.shop_domain,
        customer_email=request.email,
        customer_id=request.customer_id,
        orders_requested=list(request.orders_requested),
    )
    return Outcome(
        Delivery.Status.DONE,
        notes.note(
            "data_request_recorded",
            request=str(request.request_id),
            address=mask_email(request.email),
        ),
    )
