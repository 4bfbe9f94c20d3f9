"""Every webhook delivery as received, and what became of it."""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class Delivery(models.Model):
    """One signed webhook delivery, stored before we answer so nothing accepted is ever lost."""

    class Source(models.TextChoices):
        SHOPIFY = "shopify", _("Shopify")
        STRIPE = "stripe", _("Stripe")
        # The merchant's mail service (Brevo, Postmark) through anymail's tracking webhooks.
        MAIL_SERVICE = "mail_service", _("mail service")

    class Status(models.TextChoices):
        RECEIVED = "received", _("received")
        PROCESSING = "processing", _("processing")
        DONE = "done", _("done")
        IGNORED = "ignored", _("ignored")
        STALE = "stale", _("stale")
        FAILED = "failed", _("failed (will retry)")
        DEAD = "dead", _("dead (gave up)")
        INVALID = "invalid", _("invalid")
        # A well-formed request we would not carry out, e.g. a `shop/redact` while the shop's
        # Admin API still accepts our access (privacy.handle_shop_redact): nothing was changed.
        REFUSED = "refused", _("refused")

    source = models.CharField(verbose_name=_("source"), max_length=16, choices=Source.choices)
    shop_domain = models.CharField(
        verbose_name=_("shop domain"),
        max_length=255,
        blank=True,
        help_text=_("The Shopify shop that sent it (empty for Stripe)."),
    )
    topic = models.CharField(
        verbose_name=_("topic"),
        max_length=255,
        help_text=_("Shopify topic header or Stripe event type."),
    )
    webhook_id = models.CharField(
        verbose_name=_("webhook id"),
        max_length=255,
        blank=True,
        help_text=_("X-Shopify-Webhook-Id: Shopify's id per delivery."),
    )
    event_id = models.CharField(
        verbose_name=_("event id"),
        max_length=255,
        blank=True,
        help_text=_("X-Shopify-Event-Id (shared by one merchant action) or the Stripe event id."),
    )
    triggered_at = models.DateTimeField(
        verbose_name=_("triggered at"),
        null=True,
        blank=True,
        help_text=_("When the sender says it triggered the delivery."),
    )
    api_version = models.CharField(verbose_name=_("api version"), max_length=32, blank=True)
    body = models.BinaryField(
        verbose_name=_("body"),
        null=True,
        help_text=_("The raw body exactly as signed; dropped after the retention period."),
    )
    received_at = models.DateTimeField(
        verbose_name=_("received at"), auto_now_add=True, db_index=True
    )
    status = models.CharField(
        verbose_name=_("status"),
        max_length=16,
        choices=Status.choices,
        default=Status.RECEIVED,
        db_index=True,
    )
    attempts = models.PositiveIntegerField(verbose_name=_("attempts"), default=0)
    result = models.TextField(
        verbose_name=_("result"),
        blank=True,
        help_text=_("What processing did, e.g. “total available 3”; errors go to “last error”."),
    )
    # The result as a code with its values (automation/platform/notes.py), shown in the reader's
    # language; `result` keeps the English text. Null for rows written before, shown as stored.
    result_note = models.JSONField(verbose_name=_("result note"), null=True, blank=True)
    last_error = models.TextField(verbose_name=_("last error"), blank=True)
    processing_started_at = models.DateTimeField(
        verbose_name=_("processing started at"), null=True, blank=True
    )
    processed_at = models.DateTimeField(verbose_name=_("processed at"), null=True, blank=True)
    customer_ref = models.CharField(
        verbose_name=_("customer ref"),
        max_length=64,
        blank=True,
        help_text=_("Pseudonym of the customer's e-mail, so a redaction request finds the body."),
    )
    # Shopify's customers/redact names the customer by id and may carry only a phone
    # (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance): keep a pseudonym
    # of each, so the request finds the body whichever of them it carries.
    customer_id_ref = models.CharField(
        verbose_name=_("customer id ref"),
        max_length=64,
        blank=True,
        help_text=_("Pseudonym of the Shopify customer id, so a redaction request finds the body."),
    )
    phone_ref = models.CharField(
        verbose_name=_("phone ref"),
        max_length=64,
        blank=True,
        help_text=_(
            "Pseudonym of the customer's phone number, so a redaction request finds the body."
        ),
    )
    duplicate_count = models.PositiveIntegerField(
        verbose_name=_("duplicate count"),
        default=0,
        help_text=_("How often the sender delivered this same message again."),
    )

    class Meta:
        verbose_name = _("delivery")
        verbose_name_plural = _("deliveries")
        ordering = ["-received_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["shop_domain", "topic", "webhook_id"],
                condition=Q(source="shopify"),
                name="delivery_unique_shopify_webhook",
            ),
            models.UniqueConstraint(
                fields=["event_id"],
                condition=Q(source="stripe") & ~Q(event_id=""),
                name="delivery_unique_stripe_event",
            ),
            # One row per mail-service event: the intake's key
            # (automation/intake/sources/mail_service.py).
            models.UniqueConstraint(
                fields=["topic", "webhook_id"],
                condition=Q(source="mail_service"),
                name="delivery_unique_mail_service_event",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "received_at"], name="delivery_status_received"),
            # Partial: a redaction looks bodies up by a pseudonym, never by "", and most
            # deliveries (stock levels, anonymous checkouts) carry none. Indexed in full, every
            # claim and outcome UPDATE added an entry for "" to each such index, the costliest
            # part of PostgreSQL's work per inventory job (docs/PERFORMANCE.md, "Partial
            # pseudonym indexes").
            models.Index(
                fields=["customer_ref"], condition=~Q(customer_ref=""), name="delivery_customer_ref"
            ),
            models.Index(
                fields=["customer_id_ref"],
                condition=~Q(customer_id_ref=""),
                name="delivery_customer_id_ref",
            ),
            models.Index(
                fields=["phone_ref"], condition=~Q(phone_ref=""), name="delivery_phone_ref"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_source_display()} {self.topic} #{self.pk} ({self.get_status_display()})"
