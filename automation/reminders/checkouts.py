"""Abandoned checkouts: newest state wins, consent first, expected value decides, one reminder.

A reminder is evaluated REMINDER_DELAY after a checkout's last update (RQ's scheduler); the
evaluation exits quietly when the checkout changed since, so a checkout that keeps changing is
evaluated once, after it settles. A claim per checkout and one per address make the mail go
out at most once, whatever repeats or crashes: we prefer a missing reminder to two.

A share of the checkouts that would get a reminder is held out (no mail, arm `holdout`), and
every order is attributed to the decision it followed, so each arm's completion rate is
measured (`arm_counts`) and can replace the guessed probabilities once there is enough data.
"""

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, Count, F, Q, Value, When
from django.db.models.functions import Coalesce, Lower
from django.utils import timezone

from automation.intake.handling import Outcome, handles
from automation.intake.sources.checkout_version import CheckoutVersion
from automation.intake.sources.shopify_checkouts import OrderEvent
from automation.models import (
    CheckoutState,
    Delivery,
    ReminderDecision,
    ReminderSettings,
    SuppressedAddress,
)
from automation.models import MarginRule as MarginRuleRow
from automation.platform import claims, mail_server, scheduling
from automation.platform.addresses import address_key
from automation.platform.notes import TEMPLATES, Note, join, note, reason_fields
from automation.platform.pseudonyms import (
    customer_id_ref,
    customer_refs,
    email_ref,
    mask_email,
    phone_ref,
    pseudonym_secrets,
)
from automation.reminders import mail as reminder_mail
from automation.reminders import paid_check, suppression
from automation.reminders.rules import (
    MEASURED_ARMS,
    NO_DISCOUNT_CODE,
    ArmCounts,
    Basket,
    Line,
    MarginRule,
    Probabilities,
    ProbabilityChoice,
    ReminderChoice,
    choose_probabilities,
    choose_reminder,
    in_holdout,
    recent_discount,
)

logger = logging.getLogger(__name__)

Arm = ReminderDecision.Arm
CHECKOUT_CLAIM_TTL = timedelta(days=30)
# The skip reason of a checkout whose address does not normalise (automation/platform/addresses.py).
# Reasons are stored in the active language: the shop's (LANGUAGE_CODE) in the worker.
INVALID_EMAIL = note("invalid_email")
# The skip reason of a checkout that came without an address (from Shopify: most likely no
# access to protected customer data); the notice bar looks for it (automation/ui/notices.py).
NO_ADDRESS = note("no_address")
# Shopify served every checkout on checkout.shopify.com until July 2017, and on the domain the
# buyer shops on since: "the new format will be https://#{shop_domain}/#{shop.id}/checkouts/
# #{checkout.token}. If the merchant forces redirects to their primary shop domain, then all
# checkouts will occur on the primary domain" (https://shopify.dev/changelog/checkouts-will-
# occur-at-the-shop-domain-instead-of-checkout-shopify-com). `abandoned_checkout_url` is "the
# URL for the buyer to recover their checkout" (https://shopify.dev/docs/api/admin-graphql/
# latest/objects/AbandonedCheckout): on the shop's myshopify.com domain, its custom domain
# (SHOP_STOREFRONT_DOMAINS) or, in old links, Shopify's former checkout host.
SHOPIFY_CHECKOUT_HOSTS = frozenset({"checkout.shopify.com"})
# Stripe's recovery link: "after_expiration.recovery.url that you can embed in cart abandonment
# emails", shown as https://buy.stripe.com/r/live_asAb1724 (https://docs.stripe.com/payments/
# checkout/abandoned-carts); checkout.stripe.com is Checkout's own host (the session `url` in
# stripe/openapi's fixtures3.json, copied to tests/fixtures/stripe/). A custom domain for
# Checkout (https://docs.stripe.com/payments/checkout/custom-domains) goes into
# SHOP_STOREFRONT_DOMAINS.
STRIPE_CHECKOUT_HOSTS = frozenset({"buy.stripe.com", "checkout.stripe.com"})


# --- the stale guard ---------------------------------------------------------------------


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


# --- due time ------------------------------------------------------------------------------


def reminder_due_at(checkout: CheckoutState, config: ReminderSettings) -> datetime:
    """When the reminder for this version is evaluated."""
    return checkout.updated_at + timedelta(minutes=config.reminder_delay_minutes)


# --- handlers ------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class ScheduleEvaluation:
    """Follow-up: evaluate this checkout version's reminder at `at`.

    Run by the inbox after the handler's transaction commits, so the job never runs before the
    version it evaluates is visible.
    """

    checkout: CheckoutState
    at: datetime

    def run(self) -> None:
        scheduling.schedule_evaluation(self.checkout, at=self.at)


def _skip_invalid_email(checkout: CheckoutState) -> Outcome:
    """Decide at once: the address was refused at the edge and is not stored, so a later
    evaluation could only say "no e-mail address"."""
    _record(checkout, overwrite=False, arm=Arm.NONE, reason=INVALID_EMAIL)
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


# --- attribution: which decision an order was the result of ---------------------------------


@dataclass(frozen=True)
class Order:
    """An order as attribution reads it, whichever sender reported it."""

    ref: str
    """Unique per order ("shopify:order:<id>", "stripe:<session id>"): attributed once."""
    source: str
    token: str
    """The checkout it completes, "" when none (a draft or POS order)."""
    email: str
    placed_at: datetime
    value: Decimal | None
    shop_domain: str = ""
    """The shop that took the order: only its own checkouts' decisions may claim it."""


def _attributable(decisions):
    """Open decisions made before the order; measured arms first (they are what we count),
    then the newest."""
    measured_first = Case(When(arm__in=MEASURED_ARMS, then=Value(0)), default=Value(1))
    return decisions.filter(converted_at__isnull=True).order_by(
        measured_first, "-decided_at", "-pk"
    )


def attribute_order(order: Order, config: ReminderSettings) -> Note | str:
    """Record the order on the decision for the same checkout, else on the newest one for the
    same address within the attribution window; a note of what happened, "" when none fits.
    Only decisions about checkouts of the order's own shop (source and shop domain) count: one
    buyer may shop at two shops that deliver here.

    At-least-once safe: an order is recorded at most once (the unique `order_ref`; a repeat
    finds the first decision converted, tries the next and is refused by the key), and a
    decision converts at most once (the conditional UPDATE on `converted_at IS NULL`).
    """
    if ReminderDecision.objects.filter(order_ref=order.ref).exists():
        return note("order_attributed_already")
    before = ReminderDecision.objects.filter(
        decided_at__lte=order.placed_at,
        checkout__source=order.source,
        checkout__shop_domain=order.shop_domain,
    )
    candidates = []
    if order.token:
        candidates.append(
            (
                ReminderDecision.AttributedBy.CHECKOUT,
                _attributable(
                    before.filter(checkout__source=order.source, checkout__token=order.token)
                ),
            )
        )
    key = address_key(order.email) if order.email else None
    if key:
        since = order.placed_at - timedelta(days=config.attribution_window_days)
        same_address = before.alias(address=Lower("email")).filter(
            address=key, decided_at__gte=since
        )
        candidates.append((ReminderDecision.AttributedBy.ADDRESS, _attributable(same_address)))
    for attributed_by, decisions in candidates:
        decision = decisions.first()
        if decision is None:
            continue
        try:
            with transaction.atomic():
                won = ReminderDecision.objects.filter(
                    pk=decision.pk, converted_at__isnull=True
                ).update(
                    converted_at=order.placed_at,
                    order_value=order.value,
                    order_ref=order.ref,
                    attributed_by=attributed_by,
                )
        except IntegrityError:
            return note("order_attributed_already")
        if won:
            return note(
                "attributed_to_decision",
                decision=decision.pk,
                arm=note(f"arm_{decision.arm}"),
                by=note(f"attributed_by_{attributed_by}"),
            )
    return ""


# --- evaluation ----------------------------------------------------------------------------


def checkout_claim_key(checkout: CheckoutState) -> str:
    return f"reminder:{checkout.source}:{checkout.token}"


def address_claim_key(email: str, *, secret: str | None = None) -> str:
    """The frequency cap's claim: one per address_key, whatever the spelling."""
    return f"reminder-to:{email_ref(address_key(email) or email, secret=secret)}"


def address_claimed(email: str) -> bool:
    """Whether the cap's claim is taken under SECRET_KEY or a key it replaced (a rotation)."""
    return any(
        claims.is_claimed(address_claim_key(email, secret=secret)) for secret in pseudonym_secrets()
    )


CLAIM_TAKEN = note("claim_taken")
# Stored as the decision's reason when production has no mail server.
NO_MAIL_SERVER = note("no_mail_server")
# Stored as the decision's reason while the reminder settings have no imprint (Impressum).
IMPRINT_MISSING = note("imprint_missing")


def holdout_reason(config: ReminderSettings, would_send: str) -> Note:
    """Why a checkout that would have got a reminder got none: it was drawn for the holdout."""
    share = (config.holdout_share * 100).quantize(Decimal(1))
    arm = f"arm_{would_send}"
    return note("holdout_drawn", share=share, arm=note(arm) if arm in TEMPLATES else would_send)


def frequency_capped(config: ReminderSettings) -> Note:
    return note("frequency_capped", days=config.frequency_cap_days)


def recovery_link_hosts(checkout: CheckoutState) -> frozenset[str]:
    """The hosts a checkout's recovery link may point to: the shop's own and its vendor's."""
    own = set(settings.SHOP_STOREFRONT_DOMAINS)
    if checkout.source == CheckoutState.Source.STRIPE:
        return frozenset(own | STRIPE_CHECKOUT_HOSTS)
    shops = {domain.lower() for domain in [*settings.SHOPIFY_SHOP_DOMAINS, checkout.shop_domain]}
    return frozenset(own | (shops - {""}) | SHOPIFY_CHECKOUT_HOSTS)


def recovery_link_problem(url: str, hosts: frozenset[str]) -> Note | str:
    """Why `url` may not go into a mail, or "" when it may.

    Only an https link to one of `hosts`, without a user name or another port: a body is
    signed by the sender but written by whoever made the checkout, and a `javascript:` link
    reached the HTML part. The reason names the host at most, never the rest of the link
    (its key opens the buyer's checkout).
    """
    if not url.isascii() or any(not ch.isprintable() or ch in " \\" for ch in url):
        return _link_refused(note("link_characters"))
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return _link_refused(note("link_not_url"))
    if parts.scheme != "https":
        named = re.fullmatch(r"[a-z][a-z0-9+.-]{0,15}", parts.scheme)
        return _link_refused(
            note("link_scheme", scheme=parts.scheme) if named else note("link_not_https")
        )
    if "@" in parts.netloc:
        return _link_refused(note("link_user_name"))
    if port not in (None, 443):
        return _link_refused(note("link_port", port=port))
    if not parts.hostname:
        return _link_refused(note("link_no_host"))
    if parts.hostname not in hosts:
        return _link_refused(note("link_other_host", host=parts.hostname[:100]))
    return ""


def _link_refused(why: Note) -> Note:
    return note("recovery_link_not_allowed", why=why)


def suppressed_reason(reason: str) -> Note:
    """The decision's reason for an address on the suppression list, by why it is there."""
    if reason == SuppressedAddress.Reason.HARD_BOUNCE:
        return note("address_bounced")
    if reason == SuppressedAddress.Reason.SPAM_COMPLAINT:
        return note("address_complained")
    return note("address_unsubscribed")


def skip_reason(checkout: CheckoutState, config: ReminderSettings) -> Note | str:
    """Why this checkout gets no reminder at all, or "" when it may get one."""
    if checkout.completed_at:
        return note("checkout_completed_skip")
    if not checkout.email:
        return NO_ADDRESS
    key = address_key(checkout.email)
    if key is None:  # stored before addresses were normalised at the edge
        return INVALID_EMAIL
    if not checkout.accepts_marketing:
        return note("no_marketing_consent")
    if (suppressed := suppression.reason_for(key)) is not None:
        return suppressed_reason(suppressed)
    if address_claimed(key):
        return frequency_capped(config)
    if claims.is_claimed(checkout_claim_key(checkout)):
        return CLAIM_TAKEN
    if not checkout.recovery_url:
        return note("no_recovery_link")
    if problem := recovery_link_problem(checkout.recovery_url, recovery_link_hosts(checkout)):
        return problem
    if mail_server.mail_server_problem():
        return NO_MAIL_SERVER
    if reminder_mail.imprint_missing(config):
        return IMPRINT_MISSING
    return ""


def _discount_block(checkout: CheckoutState, config: ReminderSettings) -> Note | str:
    """Why the discount arm is unavailable, or "" when it may be offered."""
    if not config.discount_code.strip():
        return NO_DISCOUNT_CODE
    since = timezone.now() - timedelta(days=config.discount_cooldown_days)
    recent = ReminderDecision.objects.filter(
        email__iexact=checkout.email, arm=Arm.DISCOUNT, sent_at__gte=since
    )
    if recent.exists():
        return recent_discount(config.discount_cooldown_days)
    return ""


def arm_counts(window_days: int, *, now: datetime | None = None) -> dict[str, ArmCounts]:
    """Decisions and conversions per measured arm, over decisions whose attribution window
    has closed (a younger one may still convert): holdout decisions, and mails that were
    sent; a conversion counts when its order came within the window."""
    window = timedelta(days=window_days)
    closed = ReminderDecision.objects.filter(decided_at__lte=(now or timezone.now()) - window)
    counted = Q(arm=Arm.HOLDOUT) | Q(arm__in=[Arm.PLAIN, Arm.DISCOUNT], sent_at__isnull=False)
    rows = (
        closed.filter(counted)
        .values_list("arm")
        .annotate(
            n=Count("pk"),
            k=Count("pk", filter=Q(converted_at__lte=F("decided_at") + window)),
        )
        .order_by()
    )
    found = {arm: ArmCounts(n, k) for arm, n, k in rows}
    return {arm: found.get(arm, ArmCounts(0, 0)) for arm in MEASURED_ARMS}


def configured_probabilities(config: ReminderSettings) -> Probabilities:
    """The probabilities the merchant entered in the reminder settings."""
    return Probabilities(
        p0=config.p0,
        p_plain=config.p_plain,
        p_discount=config.p_discount,
        discount_rate=config.discount_rate,
    )


def probabilities_in_use(
    config: ReminderSettings, *, now: datetime | None = None
) -> ProbabilityChoice:
    """The probabilities decisions use now: measured or configured, as the settings say and
    the data allow (decisions.choose_probabilities)."""
    configured = configured_probabilities(config)
    use_measured = config.probabilities_from == ReminderSettings.ProbabilitySource.MEASURED
    return choose_probabilities(
        configured,
        arm_counts(config.attribution_window_days, now=now) if use_measured else {},
        use_measured=use_measured,
        minimum=config.min_decisions_per_arm,
    )


def decide(checkout: CheckoutState, config: ReminderSettings) -> tuple[ReminderChoice, dict]:
    """The expected-value choice for this checkout, and the inputs to keep with it."""
    basket = Basket(
        total=checkout.total_price,
        lines=tuple(
            Line(
                price=Decimal(line["price"]),
                quantity=line["quantity"],
                variant_id=line.get("variant_id"),
                product_id=line.get("product_id"),
                sku=line.get("sku", ""),
                vendor=line.get("vendor", ""),
            )
            for line in checkout.line_items
        ),
    )
    rows = list(MarginRuleRow.objects.all())
    rules = [
        MarginRule(
            rate=row.rate,
            variant_id=row.variant_id,
            product_id=row.product_id,
            sku=row.sku,
            vendor=row.vendor,
        )
        for row in rows
    ]
    in_use = probabilities_in_use(config)
    probabilities = in_use.probabilities
    blocked = _discount_block(checkout, config)
    choice = choose_reminder(
        basket,
        rules,
        probabilities,
        default_rate=config.default_margin_rate,
        discount_available=not blocked,
        discount_unavailable_reason=blocked,
    )
    inputs = {
        "total": str(checkout.total_price),
        "currency": checkout.currency,
        "lines": checkout.line_items,
        "margin_rules": [
            {"rate": str(rule.rate), "matches": str(row)}
            for rule, row in zip(rules, rows, strict=True)
        ],
        "default_margin_rate": str(config.default_margin_rate),
        "p0": str(probabilities.p0),
        "p_plain": str(probabilities.p_plain),
        "p_discount": str(probabilities.p_discount),
        "discount_rate": str(probabilities.discount_rate),
        "probabilities_from": in_use.source,
        "probabilities_reason": in_use.reason,
        "discount_available": not blocked,
    }
    return choice, inputs


def _record(checkout: CheckoutState, *, overwrite: bool, **fields) -> ReminderDecision:
    """One decision row per checkout version; a later run only overwrites it to send."""
    lookup = {"checkout": checkout, "checkout_version": checkout.updated_at}
    fields.setdefault("email", checkout.email)
    if "reason" in fields:
        fields.update(reason_fields(fields.pop("reason")))
    if overwrite:
        decision, _ = ReminderDecision.objects.update_or_create(**lookup, defaults=fields)
    else:
        decision, _ = ReminderDecision.objects.get_or_create(**lookup, defaults=fields)
    return decision


def _choice_fields(choice: ReminderChoice, inputs: dict) -> dict:
    return {
        "inputs": inputs,
        "margin": choice.margin,
        "discount_cost": choice.discount_cost,
        "delta_plain": choice.delta_plain,
        "delta_discount": choice.delta_discount,
        "arm": choice.arm,
        "reason": choice.reason_note or choice.reason,
    }


def evaluate(checkout_id: int, version: datetime, *, final_attempt: bool = True) -> str:
    """Decide about one checkout version and send at most one reminder; returns what happened.

    Before any mail (and before the holdout draw, so both arms leave out the same buyers) the
    vendor is asked whether the buyer paid meanwhile; when it cannot say, a run that is not
    the `final_attempt` raises PaidUnknown for RQ to retry, and the final one skips.
    """
    checkout = CheckoutState.objects.filter(pk=checkout_id).first()
    if checkout is None:
        return "gone"
    if checkout.updated_at != version:
        return "superseded"
    config = ReminderSettings.load()
    reason = skip_reason(checkout, config)
    if reason:
        _record(checkout, overwrite=False, arm=Arm.NONE, reason=reason)
        return f"skipped: {reason}"
    choice, inputs = decide(checkout, config)
    if choice.arm == Arm.NONE:
        _record(checkout, overwrite=False, **_choice_fields(choice, inputs))
        return "none"
    paid = paid_check.ask(checkout)
    if paid.paid == paid_check.Paid.UNKNOWN and paid.retry and not final_attempt:
        raise paid_check.PaidUnknown(str(paid.reason))
    if paid.paid != paid_check.Paid.NO:
        _record(
            checkout,
            overwrite=False,
            **{
                **_choice_fields(choice, {**inputs, "would_send": choice.arm}),
                "arm": Arm.NONE,
                "reason": paid.reason,
            },
        )
        return f"skipped: {paid.reason}"

    checkout_key = checkout_claim_key(checkout)
    address_key = address_claim_key(checkout.email)
    if not claims.claim_once(checkout_key, CHECKOUT_CLAIM_TTL):
        _record(checkout, overwrite=False, arm=Arm.NONE, reason=CLAIM_TAKEN)
        return "skipped: claimed"
    if in_holdout(checkout.source, checkout.token, config.holdout_salt, config.holdout_share):
        # The checkout's claim is kept, as after a mail: a later version is not drawn again.
        # The address claim is not taken: no mail went out.
        _record(
            checkout,
            overwrite=False,
            **{
                **_choice_fields(choice, {**inputs, "would_send": choice.arm}),
                "arm": Arm.HOLDOUT,
                "reason": holdout_reason(config, choice.arm),
            },
        )
        return "holdout"
    if not claims.claim_once(address_key, timedelta(days=config.frequency_cap_days)):
        claims.release(checkout_key)
        _record(checkout, overwrite=False, arm=Arm.NONE, reason=frequency_capped(config))
        return "skipped: frequency cap"

    decision = _record(checkout, overwrite=True, **_choice_fields(choice, inputs), error="")
    try:
        reminder_mail.send(checkout, choice.arm, config)
    except Exception as err:
        claims.release(checkout_key)
        claims.release(address_key)
        ReminderDecision.objects.filter(pk=decision.pk).update(
            error=f"{type(err).__name__}: {err}"[:2000]
        )
        raise
    ReminderDecision.objects.filter(pk=decision.pk).update(sent_at=timezone.now())
    logger.info(
        "sent %s reminder to %s for checkout %s",
        choice.arm,
        mask_email(checkout.email),
        checkout.pk,
    )
    return f"sent {choice.arm}"
