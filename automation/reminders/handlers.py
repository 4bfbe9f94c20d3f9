"""The reminders' webhook handlers: store a checkout's newest version and schedule its
evaluation, mark it completed, attribute an order. Registered with `@handles`."""

from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from automation.intake.handling import Outcome, handles
from automation.intake.sources.checkout_version import CheckoutVersion
from automation.intake.sources.shopify_checkouts import OrderEvent
from automation.models import (
    CheckoutState,
    Delivery,
    ReminderDecision,
    ReminderSettings,
)
from automation.platform.notes import join, note
from automation.platform.pseudonyms import (
    customer_id_ref,
    customer_refs,
    phone_ref,
)
from automation.reminders.attribution import Order, attribute_order
from automation.reminders.checkouts import INVALID_EMAIL, record_decision, reminder_due_at
from automation.reminders.follow_ups import ScheduleEvaluation


def store_checkout(version: CheckoutVersion) -> CheckoutState | None:
    """Write the version unless a later one is stored; None when it is stale.

    A conditional UPDATE whose row count decides, and an INSERT the unique key protects; a
    stored completion is kept (a completed checkout never becomes open again).
    """
    fields = {
        "shop_domain": version.shop_domain,
        "email": version.email,
        "first_name": version.first_name,
        "accepts_marketing": version.accepts_marketing,
        "updated_at": version.updated_at,
        "recovery_url": version.recovery_url,
        "total_price": version.total_price,
        "currency": version.currency,
        "line_items": version.line_items,
    }
    # A later version without a customer id or phone keeps the known pseudonyms: a redaction
    # must still find the checkout.
    refs = {
        "customer_id_ref": customer_id_ref(version.customer_id),
        "phone_ref": phone_ref(version.phone),
    }
    fields.update({name: ref for name, ref in refs.items() if ref})
    same = CheckoutState.objects.filter(source=version.source, token=version.token)

    def update() -> int:
        return same.filter(updated_at__lte=version.updated_at).update(
            **fields, completed_at=Coalesce(F("completed_at"), Value(version.completed_at))
        )

    if not update():
        try:
            with transaction.atomic():
                CheckoutState.objects.create(
                    source=version.source,
                    token=version.token,
                    completed_at=version.completed_at,
                    **fields,
                )
        except IntegrityError:
            if not update():
                return None
    return same.get()


def mark_completed(source: str, token: str, when: datetime, shop_domain: str = "") -> bool:
    """Record a purchase; creates a completed placeholder if the checkout is not known yet."""
    # Only the order's own shop completes a checkout (or one whose shop is not known).
    same = CheckoutState.objects.filter(source=source, token=token).filter(
        Q(shop_domain=shop_domain) | Q(shop_domain="")
    )
    if same.filter(completed_at__isnull=True).update(completed_at=when):
        return True
    if same.exists():
        return False
    try:
        with transaction.atomic():
            CheckoutState.objects.create(
                source=source,
                token=token,
                shop_domain=shop_domain,
                updated_at=when,
                completed_at=when,
            )
    except IntegrityError:
        return bool(same.filter(completed_at__isnull=True).update(completed_at=when))
    return True


def _remember_customer(delivery: Delivery, version: CheckoutVersion) -> None:
    """Link the body to its customer by pseudonyms, so `customers/redact` can drop it."""
    refs = customer_refs(version.named_email, version.customer_id, version.phone)
    if refs:
        Delivery.objects.filter(pk=delivery.pk).update(**refs)


def _remember_order_customer(delivery: Delivery, order: OrderEvent) -> None:
    """An order body names its customer like a checkout does (`email`, `phone`, `customer`)."""
    refs = customer_refs(order.named_email, order.customer_id, order.phone)
    if refs:
        Delivery.objects.filter(pk=delivery.pk).update(**refs)


def _skip_invalid_email(checkout: CheckoutState) -> Outcome:
    """Decide at once: the address was refused at the edge and is not stored, so a later
    evaluation could only say "no e-mail address"."""
    record_decision(checkout, overwrite=False, arm=ReminderDecision.Arm.NONE, reason=INVALID_EMAIL)
    return Outcome(
        Delivery.Status.DONE, note("checkout_invalid_email", reason=note("invalid_email"))
    )


@handles("shopify", "checkouts/create", "checkouts/update")
def handle_shopify_checkout(version: CheckoutVersion, delivery: Delivery) -> Outcome:
    """Store the newest checkout version and schedule its evaluation."""
    _remember_customer(delivery, version)
    checkout = store_checkout(version)
    if checkout is None:
        return Outcome(Delivery.Status.STALE, note("checkout_newer_stored"))
    if checkout.completed_at:
        return Outcome(Delivery.Status.DONE, note("checkout_completed"))
    if version.email_invalid:
        return _skip_invalid_email(checkout)
    due = reminder_due_at(checkout, ReminderSettings.load())
    return Outcome(
        Delivery.Status.DONE,
        note("evaluation_scheduled", at=due),
        follow_ups=(ScheduleEvaluation(checkout, due),),
    )


@handles("shopify", "orders/create")
def handle_order(order: OrderEvent, delivery: Delivery) -> Outcome:
    """An order for a checkout completes it (no reminder after that) and is attributed to the
    reminder decision it followed, by checkout or by address."""
    _remember_order_customer(delivery, order)
    when = order.created_at or timezone.now()
    attributed = attribute_order(
        Order(
            ref=f"shopify:order:{order.order_id}",
            source=CheckoutState.Source.SHOPIFY,
            shop_domain=delivery.shop_domain,
            token=order.checkout_token,
            email=order.named_email,
            placed_at=when,
            value=order.total_price,
        ),
        ReminderSettings.load(),
    )
    if not order.checkout_token:
        if attributed:
            return Outcome(Delivery.Status.DONE, join(note("order_without_token"), attributed))
        return Outcome(Delivery.Status.IGNORED, note("order_without_token"))
    mark_completed(CheckoutState.Source.SHOPIFY, order.checkout_token, when, delivery.shop_domain)
    return Outcome(
        Delivery.Status.DONE,
        join(note("checkout_marked_completed"), attributed or note("not_attributed")),
    )


@handles("stripe", "checkout.session.expired")
def handle_stripe_expired(version: CheckoutVersion, delivery: Delivery) -> Outcome:
    """Stripe reports expiry late already: evaluate at once."""
    _remember_customer(delivery, version)
    checkout = store_checkout(version)
    if checkout is None:
        return Outcome(Delivery.Status.STALE, note("session_newer_stored"))
    if version.email_invalid:
        return _skip_invalid_email(checkout)
    return Outcome(
        Delivery.Status.DONE,
        note("evaluation_enqueued"),
        follow_ups=(ScheduleEvaluation(checkout, timezone.now()),),
    )


@handles("stripe", "checkout.session.completed")
def handle_stripe_completed(version: CheckoutVersion, delivery: Delivery) -> Outcome:
    """A paid session completes its checkout and is attributed like a Shopify order."""
    _remember_customer(delivery, version)
    attributed = attribute_order(
        Order(
            ref=f"stripe:{version.token}",
            source=CheckoutState.Source.STRIPE,
            shop_domain=version.shop_domain,
            token=version.token,
            email=version.email,
            placed_at=version.updated_at,
            value=version.total_price,
        ),
        ReminderSettings.load(),
    )
    mark_completed(
        CheckoutState.Source.STRIPE, version.token, version.updated_at, version.shop_domain
    )
    return Outcome(
        Delivery.Status.DONE,
        join(note("session_marked_completed"), attributed or note("not_attributed")),
    )
