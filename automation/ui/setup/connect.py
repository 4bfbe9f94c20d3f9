"""Entering the connection settings on the set-up page: one form per connection.

Secrets are password inputs that are never filled back: left empty, the stored secret stays.
A secret of a known shape is checked by its prefix before it is stored (Shopify's Admin API
token `shpat_`, Stripe's secret `sk_` or restricted `rk_` key, Stripe's signing secret
`whsec_`), so a value pasted into the wrong box is refused with the reason.
A value the environment sets is not offered for editing (the environment wins anyway); the
page shows it as "from the environment (NAME)". Saving goes through connections.store.
"""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.http import QueryDict
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from automation.platform import connections


@dataclass(frozen=True)
class Entry:
    """One setting as the page shows it: its input, or where it comes from instead."""

    name: str
    label: str
    secret: bool
    value: connections.Value
    field: forms.BoundField | None = None  # the input, unless the environment sets it

    @property
    def editable(self) -> bool:
        return not self.value.from_environment

    @property
    def shown(self) -> str:
        """What the page may show: a plain value, or only whether a secret is set."""
        if self.secret:
            if self.value.unreadable:
                return _("stored, but not readable with this SECRET_KEY: enter it again")
            return _("set") if self.value else _("not set")
        return self.value.value or _("not set")


class ConnectionForm(forms.Form):
    """The settings of one connection; subclasses name them in `names`."""

    names: tuple[str, ...] = ()
    secrets: frozenset[str] = frozenset()

    def __init__(self, data: QueryDict | None = None) -> None:
        super().__init__(data)
        values = connections.current()
        self.entries: list[Entry] = []
        for name in self.names:
            field = self.fields[name]
            value = getattr(values, name)
            if value.from_environment:
                del self.fields[name]
                bound = None
            else:
                if name not in self.secrets:
                    field.initial = value.value
                bound = self[name]
            self.entries.append(Entry(name, str(field.label), name in self.secrets, value, bound))

    def save(self) -> list[str]:
        """Store what was entered (an empty secret keeps the stored one); the names changed."""
        changes = {}
        for name, value in self.cleaned_data.items():
            if name in self.secrets and not value:
                continue
            changes[name] = value
        if changes:
            connections.store(**changes)
        return sorted(changes)


def _secret(label: str, help_text: str, validators: list | None = None) -> forms.CharField:
    return forms.CharField(
        label=label,
        required=False,
        strip=True,
        max_length=500,
        help_text=help_text,
        validators=validators or [],
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )


def starts_with(prefixes: tuple[str, ...], message: str):
    """A validator: the value begins with one of `prefixes` (empty is left to "keep")."""

    def validate(value: str) -> None:
        if value and not value.startswith(prefixes):
            raise forms.ValidationError(message, code="prefix")

    return validate


def stripe_key(value: str) -> None:
    """A Stripe secret (sk_) or restricted (rk_) key; a publishable key (pk_) is refused with
    why: it only identifies the account in a browser and cannot read a Checkout Session."""
    if value.startswith("pk_"):
        raise forms.ValidationError(
            _(
                "This is the publishable key (pk_...): it is meant for the browser and cannot "
                "read Checkout Sessions. Enter the secret key (sk_...) or a restricted key "
                "(rk_...) from the Stripe Dashboard under Developers → API keys."
            ),
            code="publishable",
        )
    starts_with(
        ("sk_", "rk_"),
        _("A Stripe API key starts with sk_ (secret key) or rk_ (restricted key)."),
    )(value)


class ShopifyConnectionForm(ConnectionForm):
    """The Dev Dashboard app's client id and secret, or an older app's Admin API token."""

    names = ("shopify_client_id", "shopify_client_secret", "shopify_admin_token")
    secrets = frozenset({"shopify_client_secret", "shopify_admin_token"})

    shopify_client_id = forms.CharField(
        label=gettext_lazy("Client id"), required=False, max_length=200, strip=True
    )
    shopify_client_secret = _secret(
        gettext_lazy("Client secret"), gettext_lazy("Leave empty to keep the stored secret.")
    )
    shopify_admin_token = _secret(
        gettext_lazy("Admin API access token"),
        gettext_lazy(
            "Only for an app created in the Shopify admin (before 2026): its token starts "
            "with shpat_ and wins over the client id and secret. Leave empty to keep the "
            "stored token."
        ),
        [
            starts_with(
                ("shpat_",),
                gettext_lazy("A Shopify Admin API access token starts with shpat_."),
            )
        ],
    )


class GoogleAdsConnectionForm(ConnectionForm):
    """The developer token and the OAuth client; the refresh token comes from signing in."""

    names = ("google_ads_developer_token", "google_ads_client_id", "google_ads_client_secret")
    secrets = frozenset({"google_ads_developer_token", "google_ads_client_secret"})

    google_ads_developer_token = _secret(
        gettext_lazy("Developer token"), gettext_lazy("Leave empty to keep the stored token.")
    )
    google_ads_client_id = forms.CharField(
        label=gettext_lazy("OAuth client id"), required=False, max_length=300, strip=True
    )
    google_ads_client_secret = _secret(
        gettext_lazy("OAuth client secret"),
        gettext_lazy("Leave empty to keep the stored secret."),
    )


class StripeConnectionForm(ConnectionForm):
    """The API key (asked whether a buyer paid meanwhile) and the webhook's signing secret."""

    names = ("stripe_api_key", "stripe_webhook_secret")
    secrets = frozenset(names)

    stripe_api_key = _secret(
        gettext_lazy("API key"),
        gettext_lazy(
            "The secret key (sk_...) or a restricted key (rk_...) that may read Checkout "
            "Sessions. Leave empty to keep the stored key."
        ),
        [stripe_key],
    )
    stripe_webhook_secret = _secret(
        gettext_lazy("Webhook signing secret"),
        gettext_lazy(
            "Shown at the webhook endpoint in the Stripe Dashboard, starts with whsec_. "
            "Leave empty to keep the stored secret."
        ),
        [
            starts_with(
                ("whsec_",),
                gettext_lazy("A Stripe webhook signing secret starts with whsec_."),
            )
        ],
    )


FORMS: dict[str, type[ConnectionForm]] = {
    "shopify": ShopifyConnectionForm,
    "google_ads": GoogleAdsConnectionForm,
    "stripe": StripeConnectionForm,
}
"""Section key → its connection form."""
