"""The connections the merchant sets up on the set-up page (Shopify app, Google Ads sign-in,
Stripe).

Secrets are stored sealed (automation.platform.secret_box), never as plain text; an environment
variable of the same name wins over every field here (automation.platform.connections decides).
"""

from django.db import models
from django.utils.translation import gettext_lazy as _

from automation.models.singleton import SingletonSettings


class ConnectionSettings(SingletonSettings):
    """The one row of connection settings; `*_sealed` columns hold Fernet tokens."""

    shopify_client_id = models.CharField(
        verbose_name=_("Shopify client id"),
        max_length=200,
        blank=True,
        help_text=_("The client id of the shop's app in Shopify's Dev Dashboard."),
    )
    shopify_client_secret_sealed = models.TextField(
        blank=True,
        editable=False,
        help_text=_("The app's client secret, encrypted."),
    )
    shopify_admin_token_sealed = models.TextField(
        blank=True,
        editable=False,
        help_text=_(
            "The Admin API token (shpat_...) of an app made in the Shopify admin, encrypted."
        ),
    )
    stripe_api_key_sealed = models.TextField(
        blank=True,
        editable=False,
        help_text=_("Stripe's secret or restricted API key (sk_... or rk_...), encrypted."),
    )
    stripe_webhook_secret_sealed = models.TextField(
        blank=True,
        editable=False,
        help_text=_("The signing secret (whsec_...) of the Stripe webhook endpoint, encrypted."),
    )
    google_ads_developer_token_sealed = models.TextField(
        blank=True,
        editable=False,
        help_text=_("The developer token from the manager account's API Center, encrypted."),
    )
    google_ads_client_id = models.CharField(
        verbose_name=_("Google OAuth client id"),
        max_length=300,
        blank=True,
        help_text=_("The OAuth client (web application) from the Google Cloud console."),
    )
    google_ads_client_secret_sealed = models.TextField(
        blank=True,
        editable=False,
        help_text=_("The OAuth client's secret, encrypted."),
    )
    google_ads_refresh_token_sealed = models.TextField(
        blank=True,
        editable=False,
        help_text=_("The refresh token from signing in with Google, encrypted."),
    )
    google_ads_login_customer_id = models.CharField(
        verbose_name=_("manager account id"),
        max_length=10,
        blank=True,
        help_text=_("The manager account the calls go through (10 digits), if there is one."),
    )
    google_ads_customer_id = models.CharField(
        verbose_name=_("Google Ads account id"),
        max_length=10,
        blank=True,
        help_text=_("The account whose ad groups are switched (10 digits)."),
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("connection settings")
        verbose_name_plural = _("connection settings")

    def __str__(self) -> str:
        return str(_("Connection settings"))
