"""Abandoned checkouts: their newest state, the merchant's rules, every decision, and claims."""

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Lower
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from automation.models.singleton import SingletonSettings
from automation.platform.addresses import address_key, identifying_address
from automation.reminders.mail_text import (
    DEFAULT_BODY,
    DEFAULT_GREETING,
    DEFAULT_SUBJECT,
    validate_body,
    validate_greeting,
    validate_header_text,
    validate_subject,
)
from automation.reminders.rules import (
    DEFAULT_ATTRIBUTION_WINDOW_DAYS,
    DEFAULT_DISCOUNT_RATE,
    DEFAULT_HOLDOUT_SHARE,
    DEFAULT_MARGIN_RATE,
    DEFAULT_MIN_DECISIONS_PER_ARM,
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


class ReminderSettings(SingletonSettings):
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
        verbose_name=_("completion rate without a mail"),
        max_digits=5,
        decimal_places=4,
        default=DEFAULT_P0,
        validators=_fraction,
        help_text=_("Share of abandoned checkouts that complete without any mail (0.04 = 4 %)."),
    )
    p_plain = models.DecimalField(
        verbose_name=_("completion rate after a plain reminder"),
        max_digits=5,
        decimal_places=4,
        default=DEFAULT_P_PLAIN,
        validators=_fraction,
        help_text=_("Share that complete after a plain reminder."),
    )
    p_discount = models.DecimalField(
        verbose_name=_("completion rate after a discount reminder"),
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

    class ProbabilitySource(models.TextChoices):
        CONFIGURED = "configured", _("the configured probabilities")
        MEASURED = "measured", _("the measured rates, once every arm has enough decisions")

    holdout_share = models.DecimalField(
        verbose_name=_("holdout share"),
        max_digits=5,
        decimal_places=4,
        default=DEFAULT_HOLDOUT_SHARE,
        validators=_fraction,
        help_text=_(
            "Share of the checkouts that would get a reminder which get none, drawn at random, "
            "so we can measure what reminders really add (0.10 = 10 %). Consent and "
            "unsubscribes always come first."
        ),
    )
    holdout_salt = models.CharField(
        verbose_name=_("control group draw code"),
        max_length=64,
        blank=True,
        help_text=_(
            "Mixed into the draw. The same checkout always draws the same; change this only to "
            "draw a new control group."
        ),
    )
    attribution_window_days = models.PositiveIntegerField(
        verbose_name=_("attribution window days"),
        default=DEFAULT_ATTRIBUTION_WINDOW_DAYS,
        validators=[MinValueValidator(1)],
        help_text=_(
            "An order counts as the result of a decision if it completes the same checkout, or "
            "comes from the same address within this many days."
        ),
    )
    probabilities_from = models.CharField(
        verbose_name=_("decide with"),
        max_length=16,
        choices=ProbabilitySource.choices,
        default=ProbabilitySource.CONFIGURED,
        help_text=_(
            "Measured rates are used only once every arm (holdout, plain, discount) has the "
            "minimum number of decisions below; until then the configured probabilities."
        ),
    )
    min_decisions_per_arm = models.PositiveIntegerField(
        verbose_name=_("minimum decisions per arm"),
        default=DEFAULT_MIN_DECISIONS_PER_ARM,
        validators=[MinValueValidator(1)],
        help_text=_("Decisions each arm needs before its measured rate may decide."),
    )

    mail_sender_name = models.CharField(
        verbose_name=_("sender name"),
        max_length=100,
        blank=True,
        validators=[validate_header_text],
        help_text=_(
            "The name buyers see as the sender; the address stays DEFAULT_FROM_EMAIL. "
            "Empty: the shop's name."
        ),
    )
    mail_subject = models.CharField(
        verbose_name=_("subject"),
        max_length=200,
        default=DEFAULT_SUBJECT,
        validators=[validate_header_text, validate_subject],
        help_text=_("Placeholders: {vorname}, {shop}."),
    )
    mail_greeting = models.CharField(
        verbose_name=_("greeting"),
        max_length=200,
        default=DEFAULT_GREETING,
        validators=[validate_header_text, validate_greeting],
        help_text=_(
            "The first line. Placeholders: {vorname}, {shop}; without a first name the space "
            'before {vorname} goes too ("Hallo,").'
        ),
    )
    mail_body = models.TextField(
        verbose_name=_("text"),
        default=DEFAULT_BODY,
        validators=[validate_body],
        help_text=_(
            "Plain text, no HTML; a blank line starts a new paragraph. Placeholders: "
            "{vorname}, {shop}, {warenkorb} (the basket), {link} (needed: back to the basket), "
            "{rabattcode} (needed: the discount code; its line appears only in reminders with "
            "discount), {rabatt} (the discount in percent). {warenkorb} and {link} on a line of "
            "their own become the basket table and the button."
        ),
    )
    mail_imprint = models.TextField(
        verbose_name=_("imprint"),
        blank=True,
        help_text=_(
            "Your provider identification for the footer of every reminder (Impressum, § 5 "
            "DDG): name, address, how to reach you, register and VAT id where you have them. "
            "No reminder is sent while this is empty. Have the text checked: we are not "
            "lawyers. The unsubscribe link is always added below it."
        ),
    )

    class Meta:
        verbose_name = _("reminder settings")
        verbose_name_plural = _("reminder settings")

    def __str__(self) -> str:
        return gettext("Reminder settings")


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
        HOLDOUT = "holdout", _("holdout (no mail, control group)")
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
    reason_note = models.JSONField(verbose_name=_("reason note"), null=True, blank=True)
    decided_at = models.DateTimeField(verbose_name=_("decided at"), auto_now_add=True)
    sent_at = models.DateTimeField(verbose_name=_("sent at"), null=True, blank=True)
    error = models.TextField(verbose_name=_("error"), blank=True)

    class AttributedBy(models.TextChoices):
        CHECKOUT = "checkout", _("same checkout")
        ADDRESS = "address", _("same address")

    converted_at = models.DateTimeField(
        verbose_name=_("converted at"),
        null=True,
        blank=True,
        help_text=_("When an order attributed to this decision was placed."),
    )
    order_value = models.DecimalField(
        verbose_name=_("order value"),
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text=_("The attributed order's total."),
    )
    order_ref = models.CharField(
        verbose_name=_("order"),
        max_length=300,
        blank=True,
        help_text=_("The attributed order (Shopify order id or Stripe session id)."),
    )
    attributed_by = models.CharField(
        verbose_name=_("attributed by"),
        max_length=8,
        choices=AttributedBy.choices,
        blank=True,
    )

    class Meta:
        verbose_name = _("reminder decision")
        verbose_name_plural = _("reminder decisions")
        ordering = ["-decided_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["checkout", "checkout_version"], name="decision_unique_version"
            ),
            # An order is attributed once, however often its webhook arrives.
            models.UniqueConstraint(
                fields=["order_ref"],
                condition=~models.Q(order_ref=""),
                name="decision_unique_order",
            ),
        ]
        indexes = [
            models.Index(fields=["email", "sent_at"]),
            models.Index(Lower("email"), "decided_at", name="decision_address_time"),
        ]

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
    """An address that must never get a reminder again: unsubscribed, bounced for good, marked
    as spam, or added by the merchant."""

    class Reason(models.TextChoices):
        UNSUBSCRIBE_LINK = "unsubscribe link", _("unsubscribe link")
        HARD_BOUNCE = "hard bounce", _("hard bounce (reported by the mail service)")
        SPAM_COMPLAINT = "spam complaint", _("spam complaint (reported by the mail service)")
        SERVICE_UNSUBSCRIBE = "service unsubscribe", _("unsubscribed at the mail service")

    email = models.EmailField(
        verbose_name=_("email"), max_length=254, unique=True, help_text=_("Stored in lower case.")
    )
    # Free text: the merchant writes their own ("asked by phone"); the codes above are what the
    # unsubscribe link and the mail service's events write, shown translated in the admin.
    reason = models.CharField(
        verbose_name=_("reason"), max_length=100, default=Reason.UNSUBSCRIBE_LINK.value
    )
    detail = models.CharField(
        verbose_name=_("detail"),
        max_length=255,
        blank=True,
        help_text=_("What the mail service reported, e.g. the receiving server's answer."),
    )
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
        the reminders compare (automation/platform/addresses.py)."""
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
