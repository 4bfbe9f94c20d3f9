"""Evaluating an abandoned checkout: consent first, expected value decides, one reminder.

The webhook handlers that store checkouts are `handlers.py`, attribution is `attribution.py`.

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
from datetime import datetime, timedelta
from decimal import Decimal
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Count, F, Q
from django.utils import timezone

from automation.models import (
    CheckoutState,
    ReminderDecision,
    ReminderSettings,
    SuppressedAddress,
)
from automation.models import MarginRule as MarginRuleRow
from automation.platform import claims, mail_server
from automation.platform.addresses import address_key
from automation.platform.notes import TEMPLATES, Note, note, reason_fields
from automation.platform.pseudonyms import (
    email_ref,
    mask_email,
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


# --- due time ------------------------------------------------------------------------------


def reminder_due_at(checkout: CheckoutState, config: ReminderSettings) -> datetime:
    """When the reminder for this version is evaluated."""
    return checkout.updated_at + timedelta(minutes=config.reminder_delay_minutes)


# --- handlers ------------------------------------------------------------------------------


# --- attribution: which decision an order was the result of ---------------------------------


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


def record_decision(checkout: CheckoutState, *, overwrite: bool, **fields) -> ReminderDecision:
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
        record_decision(checkout, overwrite=False, arm=Arm.NONE, reason=reason)
        return f"skipped: {reason}"
    choice, inputs = decide(checkout, config)
    if choice.arm == Arm.NONE:
        record_decision(checkout, overwrite=False, **_choice_fields(choice, inputs))
        return "none"
    paid = paid_check.ask(checkout)
    if paid.paid == paid_check.Paid.UNKNOWN and paid.retry and not final_attempt:
        raise paid_check.PaidUnknown(str(paid.reason))
    if paid.paid != paid_check.Paid.NO:
        record_decision(
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
        record_decision(checkout, overwrite=False, arm=Arm.NONE, reason=CLAIM_TAKEN)
        return "skipped: claimed"
    if in_holdout(checkout.source, checkout.token, config.holdout_salt, config.holdout_share):
        # The checkout's claim is kept, as after a mail: a later version is not drawn again.
        # The address claim is not taken: no mail went out.
        record_decision(
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
        record_decision(checkout, overwrite=False, arm=Arm.NONE, reason=frequency_capped(config))
        return "skipped: frequency cap"

    decision = record_decision(checkout, overwrite=True, **_choice_fields(choice, inputs), error="")
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
