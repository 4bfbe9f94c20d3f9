"""Abandoned checkouts: their newest state, the merchant's rules, every decision, and claims."""

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ..addresses import address_key, identifying_address
from ..decisions import (
    DEFAULT_DISCOUNT_RATE,
    DEFAULT_MARGIN_RATE,
    DEFAULT_P0,
    DEFAULT_P_DISCOUNT,
    DEFAULT_P_PLAIN,
    DISCOUNT_COOLDOWN_DAYS,
)

_fraction = [MinValueValidator(Decimal(0)), MaxValueValidator(Decimal(1))]


class CheckoutState(models.Model):
    """The newest version of one checkout; written only through the stale guard."""

    class Source(models.TextChoices):
        SHOPIFY = "shopify", _("Shopify")
        STRIPE = "stripe", _("Stripe")

    source = models.CharField(verbose_name=_("source"), max_length=16, choices=Source.choices)
    token = models.CharField(
        verbose_name=_("token"),
        max_length=255,
        help_text=_("Shopify checkout token or Stripe session id."),
    )
    shop_domain = models.CharField(verbose_name=_("shop domain"), max_length=255, blank=True)
    email = models.EmailField(verbose_name=_("email"), max_length=254, blank=True)
    first_name = models.CharField(verbose_name=_("first name"), max_length=100, blank=True)
    customer_id_ref = models.CharField(
        verbose_name=_("customer id ref"),
        max_length=64,
        blank=True,
        db_index=True,
        help_text=_("Pseudonym of the Shopify customer id, so a redaction request finds it."),
    )
    phone_ref = models.CharField(
        verbose_name=_("phone ref"),
        max_length=64,
        blank=True,
        db_index=True,
        help_text=_("Pseudonym of the customer's phone number, so a redaction request finds it."),
    )
    accepts_marketing = models.BooleanField(
        verbose_name=_("accepts marketing"),
        default=False,
        help_text=_("Marketing consent given at checkout (UWG §7): no consent, no mail."),
    )
    updated_at = models.DateTimeField(
        verbose_name=_("updated at"), help_text=_("The sender's timestamp of this version.")
    )
    completed_at = models.DateTimeField(
        verbose_name=_("completed at"),
        null=True,
        blank=True,
        help_text=_("Set once bought; a completed checkout never reopens."),
    )
    recovery_url = models.URLField(verbose_name=_("recovery url"), max_length=2000, blank=True)
    total_price = models.DecimalField(
        verbose_name=_("total price"), max_digits=12, decimal_places=2, default=Decimal(0)
    )
    currency = models.CharField(verbose_name=_("currency"), max_length=3, blank=True)
    line_items = models.JSONField(verbose_name=_("line items"), default=list, blank=True)
    recorded_at = models.DateTimeField(verbose_name=_("recorded at"), auto_now=True)

    class Meta:
        verbose_name = _("checkout")
        verbose_name_plural = _("checkouts")
        constraints = [
            models.UniqueConstraint(fields=["source", "token"], name="checkout_unique_token")
        ]
        indexes = [models.Index(fields=["email"])]

    def __str__(self) -> str:
        return gettext("%(source)s checkout %(token)s") % {
            "source": self.get_source_display(),
            "token": self.token[:12],
        }


class ReminderSettings(models.Model):
    """The one row of reminder settings the merchant tunes in the admin."""

    reminder_delay_minutes = models.PositiveIntegerField(
        verbose_name=_("reminder delay minutes"),
        default=60,
        help_text=_("How long after the last change to a checkout we decide about a reminder."),
    )
    frequency_cap_days = models.PositiveIntegerField(
        verbose_name=_("frequency cap days"),
        default=7,
        help_text=_("At most one reminder per e-mail address within this many days."),
    )
    p0 = models.DecimalField(
        verbose_name=_("p0"),
        max_digits=5,
        decimal_places=4,
        default=DEFAULT_P0,
        validators=_fraction,
        help_text=_("Share of abandoned checkouts that complete without any mail (0.04 = 4 %)."),
    )
    p_plain = models.DecimalField(
        verbose_name=_("p plain"),
        max_digits=5,
        decimal_places=4,
        default=DEFAULT_P_PLAIN,
        validators=_fraction,
        help_text=_("Share that complete after a plain reminder."),
    )
    p_discount = models.DecimalField(
        verbose_name=_("p discount"),
        max_digits=5,
        decimal_places=4,
        default=DEFAULT_P_DISCOUNT,
        validators=_fraction,
        help_text=_("Share that complete after a reminder with a discount code."),
    )
    discount_rate = models.DecimalField(
        verbose_name=_("discount rate"),
        max_digits=5,
        decimal_places=4,
        default=DEFAULT_DISCOUNT_RATE,
        validators=_fraction,
        help_text=_("The discount the code gives, as a share of the basket (0.10 = 10 %)."),
    )
    default_margin_rate = models.DecimalField(
        verbose_name=_("default margin rate"),
        max_digits=5,
        decimal_places=4,
        default=DEFAULT_MARGIN_RATE,
        validators=_fraction,
        help_text=_(
            "Your margin on products no margin rule matches (0.40 = 40 percent of the price)."
        ),
    )
    discount_code = models.CharField(
        verbose_name=_("discount code"),
        max_length=64,
        blank=True,
        help_text=_(
            "The code to put into discount reminders (create it in Shopify first). "
            "Empty: no discount reminders are sent."
        ),
    )
    discount_cooldown_days = models.PositiveIntegerField(
        verbose_name=_("discount cooldown days"),
        default=DISCOUNT_COOLDOWN_DAYS,
        help_text=_("At most one discount per e-mail address within this many days."),
    )

    class Meta:
        verbose_name = _("reminder settings")
        verbose_name_plural = _("reminder settings")

    def __str__(self) -> str:
        return gettext("Reminder settings")

    @classmethod
    def load(cls) -> "ReminderSettings":
        """The single settings row, created with the defaults on first use."""
        settings, _ = cls.objects.get_or_create(pk=1)
        return settings


class MarginRule(models.Model):
    """The margin of some products, matched by variant, product, SKU or vendor."""

    rate = models.DecimalField(
        verbose_name=_("rate"),
        max_digits=5,
        decimal_places=4,
        validators=_fraction,
        help_text=_("Your margin as a share of the price (0.55 = 55 %)."),
    )
    variant_id = models.BigIntegerField(
        verbose_name=_("variant id"),
        null=True,
        blank=True,
        help_text=_("One variant (most specific)."),
    )
    product_id = models.BigIntegerField(
        verbose_name=_("product id"),
        null=True,
        blank=True,
        help_text=_("All variants of a product."),
    )
    sku = models.CharField(
        verbose_name=_("sku"),
        max_length=100,
        blank=True,
        help_text=_("Lines with exactly this SKU."),
    )
    vendor = models.CharField(
        verbose_name=_("vendor"),
        max_length=100,
        blank=True,
        help_text=_('Everything from this vendor, e.g. "Elbkerzen".'),
    )
    note = models.CharField(
        verbose_name=_("note"), max_length=200, blank=True, help_text=_('E.g. "own candles".')
    )

    class Meta:
        verbose_name = _("margin rule")
        verbose_name_plural = _("margin rules")
        ordering = ["pk"]

    def __str__(self) -> str:
        matcher = next(
            f"{self._meta.get_field(name).verbose_name} {value}"
            for name in ("variant_id", "product_id", "sku", "vendor")
            if (value := getattr(self, name)) not in (None, "")
        )
        return f"{matcher}: {self.rate:.0%}"

    def clean(self) -> None:
        set_fields = [
            name
            for name in ("variant_id", "product_id", "sku", "vendor")
            if getattr(self, name) not in (None, "")
        ]
        if len(set_fields) != 1:
            raise ValidationError(_("Fill in exactly one of variant, product, SKU or vendor."))


class ReminderDecision(models.Model):
    """One evaluation of one checkout version: what we chose and why, for the merchant to read."""

    class Arm(models.TextChoices):
        NONE = "none", _("no mail")
        PLAIN = "plain", _("plain reminder")
        DISCOUNT = "discount", _("reminder with discount")

    checkout = models.ForeignKey(
        CheckoutState,
        on_delete=models.CASCADE,
        related_name="decisions",
        verbose_name=_("checkout"),
    )
    checkout_version = models.DateTimeField(
        verbose_name=_("checkout version"),
        help_text=_("The checkout's updated_at that was evaluated."),
    )
    email = models.EmailField(verbose_name=_("email"), max_length=254, blank=True)
    inputs = models.JSONField(
        verbose_name=_("inputs"), default=dict, help_text=_("Basket, rules and probabilities used.")
    )
    margin = models.DecimalField(
        verbose_name=_("margin"), max_digits=12, decimal_places=2, null=True
    )
    discount_cost = models.DecimalField(
        verbose_name=_("discount cost"), max_digits=12, decimal_places=2, null=True
    )
    delta_plain = models.DecimalField(
        verbose_name=_("delta plain"), max_digits=12, decimal_places=4, null=True
    )
    delta_discount = models.DecimalField(
        verbose_name=_("delta discount"), max_digits=12, decimal_places=4, null=True
    )
    arm = models.CharField(verbose_name=_("arm"), max_length=8, choices=Arm.choices)
    reason = models.CharField(verbose_name=_("reason"), max_length=500)
    decided_at = models.DateTimeField(verbose_name=_("decided at"), auto_now_add=True)
    sent_at = models.DateTimeField(verbose_name=_("sent at"), null=True, blank=True)
    error = models.TextField(verbose_name=_("error"), blank=True)

    class Meta:
        verbose_name = _("reminder decision")
        verbose_name_plural = _("reminder decisions")
        ordering = ["-decided_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["checkout", "checkout_version"], name="decision_unique_version"
            )
        ]
        indexes = [models.Index(fields=["email", "sent_at"])]

    def __str__(self) -> str:
        return f"{self.checkout}: {self.get_arm_display()}"


class Claim(models.Model):
    """An action taken at most once: the database's unique key decides who may do it."""

    key = models.CharField(verbose_name=_("key"), max_length=255, unique=True)
    created_at = models.DateTimeField(verbose_name=_("created at"))
    expires_at = models.DateTimeField(verbose_name=_("expires at"), db_index=True)

    class Meta:
        verbose_name = _("claim")
        verbose_name_plural = _("claims")

    def __str__(self) -> str:
        return self.key


class SuppressedAddress(models.Model):
    """An address that must never get a reminder again (unsubscribed or added by the merchant)."""

    email = models.EmailField(
        verbose_name=_("email"), max_length=254, unique=True, help_text=_("Stored in lower case.")
    )
    reason = models.CharField(verbose_name=_("reason"), max_length=100, default="unsubscribe link")
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("suppressed address")
        verbose_name_plural = _("suppressed addresses")

    def __str__(self) -> str:
        return self.email

    def save(self, *args, **kwargs) -> None:
        # An unsubscribe link made before addresses were normalised may name a spelling like
        # `"kim" <kim@example.org>`: suppress the address it names rather than miss it.
        self.email = identifying_address(self.email) or self.email.strip().lower()
        super().save(*args, **kwargs)

    def clean(self) -> None:
        """The merchant enters one plain address (`kim@example.org`); it is stored as the key
        the reminders compare (automation/addresses.py)."""
        key = address_key(self.email)
        if key is None:
            raise ValidationError(
                {"email": _("Enter one address like kim@example.org, without a name or brackets.")}
            )
        self.email = key


class DataRequest(models.Model):
    """A customer's data request from Shopify (`customers/data_request`) for the merchant."""

    shop_domain = models.CharField(verbose_name=_("shop domain"), max_length=255)
    customer_email = models.EmailField(verbose_name=_("customer email"), max_length=254, blank=True)
    customer_id = models.BigIntegerField(verbose_name=_("customer id"), null=True, blank=True)
    orders_requested = models.JSONField(
        verbose_name=_("orders requested"), default=list, blank=True
    )
    received_at = models.DateTimeField(verbose_name=_("received at"), auto_now_add=True)
    handled = models.BooleanField(
        verbose_name=_("handled"),
        default=False,
        help_text=_("Tick once you have sent the customer their data."),
    )

    class Meta:
        verbose_name = _("data request")
        verbose_name_plural = _("data requests")

    def __str__(self) -> str:
        return gettext("data request %(customer)s") % {
            "customer": self.customer_email or self.customer_id
        }
