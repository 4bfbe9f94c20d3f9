"""What each connection has and lacks, from settings and the database only (no vendor call).

A section's light: green when it is ready, yellow when it works in part or only as a dry run,
red when something it needs is missing. Secrets appear only as "set" or "not set".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Max
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.timezone import localtime
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from automation.google_ads import adapter as google_ads
from automation.models import AdGroup, Delivery, ReminderSettings
from automation.platform import alerts, connections
from automation.reminders import mail as reminder_mail
from automation.shopify import access as shopify_access
from automation.shopify import subscriptions


class Light(enum.StrEnum):
    """A traffic light; the value is the CSS class suffix."""

    GREEN = "green"
    YELLOW = "yellow"
    RED = "red"

    @property
    def label(self) -> str:
        return {
            Light.GREEN: _("ready"),
            Light.YELLOW: _("partly ready"),
            Light.RED: _("not ready"),
        }[self]


@dataclass(frozen=True)
class Link:
    """A place to go from a section: its German words and where it leads."""

    text: str
    url: str


@dataclass
class Section:
    """One connection on the set-up page: its light, what it has, and what is missing."""

    key: str
    title: str
    light: Light = Light.GREEN
    facts: list[tuple[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    result: object = None  # the probe of a test button just pressed (probes.Probe)
    form: object = None  # the connection's settings form (connect.ConnectionForm), if editable
    signed_in: bool = False  # Google Ads: credentials complete, an account may be chosen

    def lack(self, text: str, light: Light = Light.RED) -> None:
        """Something is missing; the light turns `light` unless it is already worse."""
        self.missing.append(text)
        if light is Light.RED or self.light is Light.GREEN:
            self.light = light


def is_set(value: object) -> str:
    return _("set") if value else _("not set")


MAIL_BACKENDS_THAT_SEND = frozenset({"django.core.mail.backends.smtp.EmailBackend"})


SHOPIFY_ABANDONED_CHECKOUT_HELP = (
    "https://help.shopify.com/de/manual/promoting-marketing/create-marketing/"
    "migrate-abandoned-checkout"
)
"""Shopify's help page on its abandoned-checkout e-mail (English original: help.shopify.com/en/
manual/promoting-marketing/create-marketing/migrate-abandoned-checkout): the automation under
Marketing → Automations is turned off on its summary page; the older one lives under
Settings → Checkout until Shopify removes it."""


def shopify() -> Section:
    """Webhook secret, shop domain, Admin API access and who owns the webhook subscriptions."""
    section = Section("shopify", _("Shopify"))
    secrets = connections.shopify_webhook_secrets()
    section.facts.append((_("Webhook secret"), is_set(secrets)))
    if not secrets:
        section.lack(
            _(
                "The webhook secret is missing: enter the app's client secret below (or set "
                "SHOPIFY_WEBHOOK_SECRETS to it), or every webhook from Shopify is refused."
            )
        )
    domains = settings.SHOPIFY_SHOP_DOMAINS
    section.facts.append((_("Shop domain"), ", ".join(domains) or _("not set")))
    if not domains:
        section.lack(_("The shop's domain is missing: set SHOPIFY_SHOP_DOMAINS."))
    kind = shopify_access.access()
    access_text = {
        shopify_access.Access.STATIC: _("access token (app created in the Shopify admin)"),
        shopify_access.Access.CLIENT_CREDENTIALS: _("client id and client secret"),
        None: _("not set"),
    }[kind]
    section.facts.append((_("Admin API access"), access_text))
    if kind is None:
        section.lack(
            _(
                "Admin API access is missing: enter the client id and client secret of the "
                "app from Shopify's Dev Dashboard below, or the Admin API access token "
                "(shpat_...) of an app created in the Shopify admin (or set SHOPIFY_CLIENT_ID "
                "and SHOPIFY_CLIENT_SECRET, or SHOPIFY_ADMIN_TOKEN). Without it there is no "
                "nightly stock check and no product search."
            ),
            Light.YELLOW,
        )
    else:
        section.facts.append((_("Shop address for the Admin API"), settings.SHOPIFY_ADMIN_URL))
    section.facts.append((_("Webhook address"), subscriptions.callback_url()))
    if is_local(settings.PUBLIC_BASE_URL):
        section.lack(
            _(
                "PUBLIC_BASE_URL is a local address (%(url)s): Shopify, Stripe and Google cannot "
                "reach it. Set it to the service's public https address."
            )
            % {"url": settings.PUBLIC_BASE_URL},
            Light.YELLOW,
        )
    managed = shopify_access.webhooks_managed_by()
    section.facts.append(
        (
            _("Webhook subscriptions"),
            _("set up by this service")
            if managed is shopify_access.WebhookManager.API
            else _("declared in the app's shopify.app.toml"),
        )
    )
    section.facts.append((_("Last webhook received"), last_delivery(Delivery.Source.SHOPIFY)))
    # We cannot read whether Shopify's own reminder is on: the page always says where it is.
    section.notes.append(
        _(
            "Switch off Shopify's own abandoned-checkout e-mail, or buyers get two reminders: "
            "in the Shopify admin under Marketing → Automations, the automation “Abandoned "
            "checkout” (turn it off on its page); in older shops under Settings → Checkout, "
            "“Automatically send abandoned checkout emails”."
        )
    )
    section.links.append(
        Link(_("Shopify help: abandoned-checkout e-mails"), SHOPIFY_ABANDONED_CHECKOUT_HELP)
    )
    return section


def google_ads_section() -> Section:
    """Dry run or live, the account id, and whether credentials are there."""
    section = Section("google_ads", _("Google Ads"))
    live = settings.ADS_BACKEND == "google"
    section.facts.append(
        (_("Mode"), _("live: ad groups are really changed") if live else _("dry run"))
    )
    if not live:
        section.lack(
            _(
                "Dry run: ad groups are only logged, never changed. Set ADS_BACKEND=google "
                "once the connection test succeeds."
            ),
            Light.YELLOW,
        )
    values = connections.current()
    customer = values.google_ads_customer_id.value
    section.facts.append((_("Account (customer id)"), customer or _("not set")))
    if values.google_ads_login_customer_id:
        section.facts.append(
            (_("Manager account (login customer id)"), values.google_ads_login_customer_id.value)
        )
    source = credentials_source(values)
    section.signed_in = source is not None
    section.facts.append(
        (
            _("Credentials"),
            {
                "file": _("set (configuration file)"),
                "environment": _("set (GOOGLE_ADS_* variables)"),
                "database": _("set (entered on this page)"),
                None: _("not set"),
            }[source],
        )
    )
    if source is None:
        section.lack(
            _(
                "Not connected: enter the developer token and the OAuth client below, then "
                "press “Connect with Google” (or set GOOGLE_ADS_DEVELOPER_TOKEN, "
                "GOOGLE_ADS_CLIENT_ID, GOOGLE_ADS_CLIENT_SECRET and GOOGLE_ADS_REFRESH_TOKEN, "
                "or GOOGLE_ADS_CONFIGURATION_FILE_PATH)."
            ),
        )
    if not customer:
        section.lack(
            _(
                "The Google Ads account is missing: choose it below after connecting "
                "(or set GOOGLE_ADS_CUSTOMER_ID, 10 digits)."
            ),
            Light.RED if live or source is None else Light.YELLOW,
        )
    mapped = AdGroup.objects.filter(watched_products__enabled=True).distinct().count()
    section.facts.append((_("Ad groups watched"), str(mapped)))
    return section


def email(user_email: str) -> Section:
    """How mail leaves (backend), who sends it, where the test mail goes (who gets alerts:
    `notifications`)."""
    section = Section("email", _("E-mail"))
    backend = settings.EMAIL_BACKEND
    sends = backend in MAIL_BACKENDS_THAT_SEND
    section.facts.append(
        (
            _("Delivery"),
            _("mail server %(host)s") % {"host": settings.EMAIL_HOST}
            if sends
            else _("not sent (%(backend)s)") % {"backend": backend.rsplit(".", 2)[-2]},
        )
    )
    if sends:
        section.facts.append((_("Mail server password"), is_set(settings.EMAIL_HOST_PASSWORD)))
    else:
        section.lack(
            _(
                "Mails are not sent, only shown in the log: set EMAIL_URL to your mail "
                "server (e.g. smtp+tls://user:password@host:587)."
            ),
            Light.YELLOW,
        )
    sender = settings.DEFAULT_FROM_EMAIL
    section.facts.append((_("Sender"), sender))
    if sender.endswith((".example", ".example>")):
        section.lack(
            _("The sender is an example address: set DEFAULT_FROM_EMAIL to your shop's address."),
            Light.YELLOW,
        )
    section.facts.append((_("Test mail goes to"), user_email or _("(your account has no address)")))
    config = ReminderSettings.load()
    missing_imprint = reminder_mail.imprint_missing(config)
    section.facts.append((_("Imprint in reminders"), is_set(not missing_imprint)))
    settings_url = reverse("admin:automation_remindersettings_change", args=[config.pk])
    if missing_imprint:
        section.lack(
            _(
                "The imprint is missing: no reminder is sent until you enter it in the "
                "reminder settings (German law wants the sender's identification in every "
                "commercial e-mail)."
            )
        )
        section.links.append(Link(_("Enter the imprint"), settings_url))
    section.links.append(
        Link(_("Preview the reminder"), reverse("admin:automation_remindersettings_preview"))
    )
    return section


def notifications(show_addresses: bool) -> Section:
    """Who receives the alerts (ALERT_EMAILS, else the staff users' addresses); red when
    nobody would. The addresses (people's) only with `show_addresses`, else their number."""
    section = Section("alerts", _("Alerts"))
    to = alerts.recipients()
    if settings.ALERT_EMAILS:
        source = _("ALERT_EMAILS")
    else:
        source = _("the e-mail addresses of the staff users (ALERT_EMAILS is not set)")
    section.facts.append((_("Alerts go to"), source))
    if show_addresses:
        shown = ", ".join(to) or _("nobody")
    else:
        shown = ngettext("%(count)d address", "%(count)d addresses", len(to)) % {"count": len(to)}
    section.facts.append((_("Recipients"), shown))
    if not to:
        section.lack(
            _(
                "Nobody receives alerts (the safety brake holding pauses, deliveries given up): "
                "enter your e-mail address, or set ALERT_EMAILS."
            )
        )
        section.links.append(Link(_("Enter your e-mail address"), reverse("setup-email")))
        if show_addresses:
            section.links.append(
                Link(_("Users and their addresses"), reverse("admin:auth_user_changelist"))
            )
    return section


def stripe() -> Section:
    """The signing secret, the API key (asked whether a buyer paid meanwhile) and the last
    event that arrived."""
    section = Section("stripe", _("Stripe"))
    secrets = connections.stripe_webhook_secrets()
    section.facts.append((_("Webhook signing secret"), is_set(secrets)))
    section.facts.append((_("Last event received"), last_delivery(Delivery.Source.STRIPE)))
    if not secrets:
        section.lack(
            _(
                "Not set up (only needed if customers pay through Stripe Checkout): enter the "
                "endpoint's signing secret (whsec_...) below, or set STRIPE_WEBHOOK_SECRETS."
            ),
            Light.YELLOW,
        )
        return section
    if not connections.current().stripe_api_key:
        section.lack(
            _(
                "The Stripe API key is missing: enter a secret or restricted key (sk_... or "
                "rk_...) below, or set STRIPE_API_KEY. Without it no reminder goes out for a "
                "Stripe checkout, since nobody can ask Stripe whether the buyer paid meanwhile."
            ),
            Light.YELLOW,
        )
    if not Delivery.objects.filter(source=Delivery.Source.STRIPE).exists():
        section.lack(
            _("No event has arrived yet: check that the endpoint in Stripe points to %(url)s.")
            % {"url": stripe_webhook_url()},
            Light.YELLOW,
        )
    return section


def stripe_webhook_url() -> str:
    """Where the Stripe endpoint must point: our public address of the Stripe intake."""
    return f"{settings.PUBLIC_BASE_URL}{reverse('stripe-webhook')}"


def is_local(url: str) -> bool:
    """Whether `url` points at this machine (no vendor can send there)."""
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "0.0.0.0", "::1") or host.startswith("127.")  # noqa: S104


def credentials_source(values: connections.Connection) -> str | None:
    """Where the Ads client's credentials come from: "file", "environment", "database" or None.

    Complete means a developer token and a refresh token (the OAuth client comes with it).
    """
    if google_ads.credentials_source() == "file":
        return "file"
    needed = (values.google_ads_developer_token, values.google_ads_refresh_token)
    if not all(needed):
        return None
    if all(value.from_environment for value in needed):
        return "environment"
    return "database"


def last_delivery(source: str) -> str:
    """When the newest delivery of `source` arrived, and its topic; "none yet" without one."""
    newest = Delivery.objects.filter(source=source).aggregate(at=Max("received_at"))["at"]
    if newest is None:
        return _("none yet")
    delivery = (
        Delivery.objects.filter(source=source, received_at=newest).only("topic", "status").first()
    )
    when = date_format(localtime(newest), "DATETIME_FORMAT")
    return f"{when} ({delivery.topic}, {delivery.get_status_display()})" if delivery else when


def sections(user_email: str, *, alert_recipients: bool = True) -> list[Section]:
    """Every section, in the order the merchant sets them up."""
    return [
        shopify(),
        google_ads_section(),
        email(user_email),
        notifications(alert_recipients),
        stripe(),
    ]
