"""Every webhook delivery as received, and what became of it."""

from django.db import models
from django.db.models import Q


class Delivery(models.Model):
    """One signed webhook delivery, stored before we answer so nothing accepted is ever lost."""

    class Source(models.TextChoices):
        SHOPIFY = "shopify", "Shopify"
        STRIPE = "stripe", "Stripe"

    class Status(models.TextChoices):
        RECEIVED = "received", "received"
        PROCESSING = "processing", "processing"
        DONE = "done", "done"
        IGNORED = "ignored", "ignored"
        STALE = "stale", "stale"
        FAILED = "failed", "failed (will retry)"
        DEAD = "dead", "dead (gave up)"
        INVALID = "invalid", "invalid"

    source = models.CharField(max_length=16, choices=Source.choices)
    shop_domain = models.CharField(
        max_length=255, blank=True, help_text="The Shopify shop that sent it (empty for Stripe)."
    )
    topic = models.CharField(max_length=255, help_text="Shopify topic header or Stripe event type.")
    webhook_id = models.CharField(
        max_length=255, blank=True, help_text="X-Shopify-Webhook-Id: Shopify's id per delivery."
    )
    event_id = models.CharField(
        max_length=255,
        blank=True,
        help_text="X-Shopify-Event-Id (shared by one merchant action) or the Stripe event id.",
    )
    triggered_at = models.DateTimeField(
        null=True, blank=True, help_text="When the sender says it triggered the delivery."
    )
    api_version = models.CharField(max_length=32, blank=True)
    body = models.BinaryField(
        null=True, help_text="The raw body exactly as signed; dropped after the retention period."
    )
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.RECEIVED, db_index=True
    )
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    processing_started_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    customer_ref = models.CharField(
        max_length=64,
        blank=True,
        db_index=True,
        help_text="Pseudonym of the customer's e-mail, so a redaction request finds the body.",
    )
    duplicate_count = models.PositiveIntegerField(
        default=0, help_text="How often the sender delivered this same message again."
    )

    class Meta:
        verbose_name_plural = "deliveries"
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
        ]
        indexes = [models.Index(fields=["status", "received_at"], name="delivery_status_received")]

    def __str__(self) -> str:
        return f"{self.source} {self.topic} #{self.pk} ({self.status})"
