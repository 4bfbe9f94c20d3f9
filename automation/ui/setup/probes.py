"""The set-up page's test buttons: each asks a vendor one harmless question.

Every failure comes back as a sentence for the merchant (never a 500), our own per kind of
failure (failures.explain): the vendor's text goes to the log, masked, never into the page. The
merchant waits on each test: every call has VENDOR_INTERACTIVE_TIMEOUT seconds, like the pickers'.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.utils.translation import gettext as _

from automation.google_ads import adapter as google_ads
from automation.google_ads import statuses as ads
from automation.models import AdGroup
from automation.platform import connections
from automation.shopify import access as shopify_access
from automation.shopify import subscriptions
from automation.stock.selectors import ad_group_label
from automation.stripe import checkout as stripe_checkout
from automation.ui.setup.failures import explain


@dataclass
class Probe:
    """What a test button found: success or not, one sentence, and details line by line."""

    ok: bool
    message: str
    lines: list[str] = field(default_factory=list)
    offer_webhook_setup: bool = False  # show "Set up now" (missing subscriptions we may create)
    accounts: list[google_ads.AccountChoice] = field(default_factory=list)  # to choose from


def ad_group_status_text(status: str) -> str:
    return {
        "ENABLED": _("running"),
        "PAUSED": _("paused"),
        "REMOVED": _("removed"),
    }.get(status, status)


# --- Shopify -------------------------------------------------------------------------------


def try_shopify() -> Probe:
    """Read the shop's name; list the webhook subscriptions when this service manages them."""
    client = shopify_access.admin_client(interactive=True)
    if client is None:
        return Probe(False, _("No Admin API access is configured (see above)."))
    try:
        try:
            shop = client.shop_info()
            probe = Probe(True, _("Connected to the shop “%(name)s”.") % {"name": shop.name})
            if shopify_access.webhooks_managed_by() is shopify_access.WebhookManager.TOML:
                probe.lines.append(
                    _(
                        "Webhook subscriptions are declared in shopify.app.toml; Shopify does "
                        "not list those, so they are not checked here."
                    )
                )
                return probe
            missing = subscriptions.missing_subscriptions(client)
        finally:
            client.close()
    except Exception as err:  # noqa: BLE001 (every failure becomes a sentence, never a 500)
        return Probe(False, explain(err))
    for topic in subscriptions.REQUIRED_TOPICS:
        state = _("missing") if topic in missing else _("subscribed")
        probe.lines.append(f"{topic}: {state}")
    if missing:
        probe.offer_webhook_setup = True
        probe.lines.append(
            _("Webhooks go to %(url)s.") % {"url": subscriptions.callback_url()},
        )
    return probe


def set_up_webhooks() -> Probe:
    """Create the missing subscriptions (the nightly run's own healing, run now)."""
    client = shopify_access.admin_client(interactive=True)
    if client is None:
        return Probe(False, _("No Admin API access is configured (see above)."))
    try:
        try:
            created = subscriptions.heal_subscriptions(client)
        finally:
            client.close()
    except Exception as err:  # noqa: BLE001
        return Probe(False, explain(err))
    if not created:
        return Probe(True, _("All webhook subscriptions were already there."))
    return Probe(
        True,
        _("Webhook subscriptions created: %(topics)s.") % {"topics": ", ".join(created)},
    )


# --- Google Ads ----------------------------------------------------------------------------


def try_google_ads() -> Probe:
    """Read the account's name and the watched ad groups' names and statuses."""
    customer = connections.current().google_ads_customer_id.value
    if not customer:
        return Probe(False, _("The Google Ads account is missing: set GOOGLE_ADS_CUSTOMER_ID."))
    try:
        client = ads.google_client_for_page()
        timeout = settings.VENDOR_INTERACTIVE_TIMEOUT
        name = google_ads.account_name(customer, client=client, timeout=timeout)
        probe = Probe(True, _("Connected to the account “%(name)s”.") % {"name": name})
        wanted: dict[str, dict[str, str]] = defaultdict(dict)
        for group in AdGroup.objects.filter(watched_products__isnull=False).distinct():
            wanted[group.customer_id][group.ad_group_id] = ad_group_label(group)
        for customer_id, labels in wanted.items():
            found = {
                group.ad_group_id: group
                for group in google_ads.ad_groups_for_setup(
                    customer_id, list(labels), client=client, timeout=timeout
                )
            }
            for ad_group_id, label in labels.items():
                group = found.get(ad_group_id)
                if group is None:
                    probe.ok = False
                    probe.lines.append(
                        _("%(label)s: ad group %(id)s not found in account %(account)s")
                        % {"label": label, "id": ad_group_id, "account": customer_id}
                    )
                else:
                    probe.lines.append(
                        _("%(label)s: “%(name)s” in campaign “%(campaign)s”, %(status)s")
                        % {
                            "label": label,
                            "name": group.name,
                            "campaign": group.campaign_name,
                            "status": ad_group_status_text(group.status),
                        }
                    )
        if not probe.ok:
            probe.message = _(
                "Connected to the account “%(name)s”, but some watched ad groups were not found."
            ) % {"name": name}
    except Exception as err:  # noqa: BLE001
        return Probe(False, explain(err))
    return probe


# --- Stripe --------------------------------------------------------------------------------


def try_stripe() -> Probe:
    """List one Checkout Session with the key in force: the read a reminder's paid check needs."""
    key = connections.current().stripe_api_key.value
    if not key:
        return Probe(False, _("No Stripe API key is set (see above)."))
    try:
        stripe_checkout.check_key(
            key, base_url=settings.STRIPE_API_URL, timeout=settings.VENDOR_INTERACTIVE_TIMEOUT
        )
    except Exception as err:  # noqa: BLE001 (every failure becomes a sentence, never a 500)
        return Probe(False, explain(err))
    return Probe(True, _("Connected to Stripe: the API key may read Checkout Sessions."))


# --- E-mail --------------------------------------------------------------------------------


def send_test_mail(address: str) -> Probe:
    """One short mail to `address` (the signed-in user's), through the configured backend."""
    if not address:
        return Probe(
            False,
            _(
                "Your user account has no e-mail address: add one under “Users” first, then "
                "send the test mail."
            ),
        )
    message = EmailMessage(
        subject=_("Test mail from Elbkerzen Automation"),
        body=_(
            "This is the test mail from the set-up page. If you can read it, reminders and "
            "alerts reach their recipients."
        ),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[address],
    )
    try:
        # Django's SMTP backend waits forever without a timeout; the merchant waits on this.
        message.connection = get_connection(timeout=settings.VENDOR_INTERACTIVE_TIMEOUT)
        message.send()
    except Exception as err:  # noqa: BLE001
        return Probe(False, explain(err))
    return Probe(True, _("Test mail sent to %(address)s.") % {"address": address})
