"""What processing did, kept as a code with its values and rendered in the reader's language.

A handler's note is written in a worker, whose language is not the reader's: storing text would
put English (or the worker's language) on every page. A `Note` is stored as JSON (`stored()`)
next to an English text kept for logs and the API, and `render()` formats it in the active
language when shown. Rows written before notes had codes carry only text and are shown as stored.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from zoneinfo import ZoneInfo

from django.utils import formats, timezone, translation
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy

# What jsonb cannot hold (NUL, lone surrogates): written as escapes, as `outcomes.storable` does.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# The shop's time zone: a date in a note is read by the merchant in Berlin.
SHOP_ZONE = ZoneInfo("Europe/Berlin")

TEMPLATES = {
    # inbox
    "no_handler": _("no handler for %(topic)s"),
    # checkouts and orders
    "checkout_invalid_email": _("checkout stored; no reminder: %(reason)s"),
    "checkout_newer_stored": _("a newer version of this checkout is stored"),
    "session_newer_stored": _("a newer version of this session is stored"),
    "checkout_completed": _("checkout completed: no reminder"),
    "order_without_token": _("order without checkout_token"),
    "checkout_marked_completed": _("checkout marked completed"),
    "session_marked_completed": _("checkout session marked completed"),
    "evaluation_scheduled": _("reminder evaluation scheduled for %(at)s"),
    "evaluation_enqueued": _("reminder evaluation enqueued"),
    "invalid_email": _("invalid e-mail"),
    "not_attributed": _("no reminder decision to attribute"),
    "order_attributed_already": _("order attributed already"),
    "attributed_to_decision": _("attributed to reminder decision %(decision)s (%(arm)s, %(by)s)"),
    "arm_none": _("no mail"),
    "arm_holdout": _("holdout (no mail, control group)"),
    "arm_plain": _("plain reminder"),
    "arm_discount": _("reminder with discount"),
    "attributed_by_checkout": _("same checkout"),
    "attributed_by_address": _("same address"),
    # stock and catalogue
    "item_not_watched": _("inventory item %(item)s not watched"),
    "levels_newer_stored": _("newer levels are stored; this one is from %(at)s"),
    "stock_not_tracked": _("stock not tracked (available is null): stored, no action"),
    "total_available": _("total available %(total)s"),
    "label_total_available": _("%(label)s: total available %(total)s"),
    "set_with_delivery": _(
        "ad groups set with delivery %(delivery)s, the last stock level of its batch"
    ),
    "still_stocked": _(
        "Shopify still stocks inventory item %(item)s at location %(location)s: kept"
    ),
    "level_removed": _("level removed"),
    "no_level_stored": _("no level stored"),
    "location_disconnected_unwatched": _(
        "location %(location)s disconnected: %(what)s; not watched"
    ),
    "location_disconnected": _("location %(location)s disconnected"),
    "product_not_watched": _("product %(product)s not watched"),
    "product_newer_stored": _("a newer state of product %(product)s is stored"),
    "product_switched_off": _("product %(product)s stored; not watched (switched off)"),
    "product_still_exists": _("Shopify still has product %(product)s: kept"),
    "product_deleted_unwatched": _("product %(product)s deleted in Shopify; not watched"),
    "product_deleted": _("product %(product)s deleted in Shopify: no longer watched: %(labels)s"),
    "ad_group_unchanged": _("ad group %(ad_group)s %(status)s unchanged"),
    "ad_group_held": _("ad group %(ad_group)s %(status)s held"),
    "ad_group_missing": _("ad group %(ad_group)s missing in Google Ads: skipped"),
    "manual_holds": _("manual state holds: %(held)s"),
    "manual_held": _("%(label)s (%(status)s)"),
    "status_enabled": _("ENABLED"),
    "status_paused": _("PAUSED"),
    "state_enabled": _("enabled"),
    "state_paused": _("paused"),
    # the mail service's tracking events
    "mail_suppressed": _("%(service)s %(kind)s: %(address)s suppressed"),
    "mail_not_suppressed": _("%(service)s %(kind)s: %(address)s not suppressed"),
    "mail_suppressed_already": _("%(service)s %(kind)s: %(address)s was already suppressed"),
    "kind_hard_bounce": _("hard bounce"),
    "kind_soft_bounce": _("soft bounce"),
    "kind_complaint": _("complaint"),
    "kind_unsubscribe": _("unsubscribe"),
    # privacy
    "customer_redacted": _(
        "customer redacted (by %(by)s): %(rows)s rows deleted, %(bodies)s bodies dropped"
    ),
    "identifier_id": _("id"),
    "identifier_email": _("e-mail"),
    "identifier_phone": _("phone"),
    "data_request_recorded": _("data request %(request)s recorded for %(address)s"),
    # shop/redact: whether the shop's Admin API confirms the uninstall
    "access_not_configured": _(
        "Shopify Admin API not configured, so the uninstall cannot be confirmed (set %(settings)s)"
    ),
    "access_other_shop": _(
        "no Admin API credentials for the shop %(shop)s (the configured ones belong to "
        "%(admin_shop)s), so its uninstall cannot be confirmed"
    ),
    "access_app_uninstalled": _("the app is no longer installed on the shop"),
    "access_credentials_refused": _("Shopify refused the credentials: %(error)s"),
    "access_token_revoked": _("the shop's Admin API refuses our token (HTTP 401): it was revoked"),
    "access_new_token_refused": _(
        "the shop's Admin API refused a token Shopify had just issued (HTTP 401): "
        "the app still seems installed, so this is no confirmation"
    ),
    "access_http_error": _(
        "Shopify Admin API answered HTTP %(status)s, which does not confirm an uninstall: %(error)s"
    ),
    "access_still_accepted": _("the shop's Admin API still accepts our access"),
    "shop_redacted": _(
        "shop redacted (%(reason)s): %(checkouts)s checkout rows, %(deliveries)s deliveries"
    ),
    "shop_redact_refused_installed": _(
        "shop/redact refused, nothing deleted: %(reason)s (the app is still installed)"
    ),
    "shop_redact_refused": _("shop/redact refused, nothing deleted: %(reason)s"),
    "alerted_already": _("%(note)s; merchant already alerted"),
    "alert_not_sent": _("%(note)s; the alert could not be sent"),
    "alerted": _("%(note)s; merchant alerted"),
    # why an ad group got its status (automation/stock/rule.py's reasons)
    "rule_in_stock": _("%(label)s: %(stock)s available > %(level)s"),
    "rule_sold_out": _("%(label)s: %(stock)s available ≤ %(level)s"),
    "rule_all_sold_out": _("%(label)s: all variants sold out (%(stock)s available ≤ %(level)s)"),
    "rule_below_resume": _("%(label)s: %(stock)s available, runs again only above %(level)s"),
    "rule_product_inactive": _("%(label)s: the product is %(status)s in Shopify"),
    "rule_untracked": _("%(label)s: Shopify does not track the stock of %(variant)s"),
    "rule_keeps_selling": _("%(label)s: Shopify keeps selling %(variant)s when it is sold out"),
    "rule_no_variants": _("%(label)s: no variants known yet"),
    "rule_stock_unknown": _("%(label)s: no stock known yet"),
    "rule_stock_partly_unknown": _(
        "%(label)s: %(stock)s available, no stock known yet for %(unknown)s"
    ),
    "rule_manual_paused": _("manually paused by %(who)s: %(why)s"),
    "rule_manual_enabled": _("manually enabled by %(who)s: %(why)s"),
    "rule_promotion_ended": _("promotion “%(name)s” ended"),
    "rule_promotion_not_started": _("promotion “%(name)s” has not started"),
    "rule_promotion_running": _("promotion “%(name)s” is running"),
    "rule_not_controlled": _("no watched product or promotion controls it"),
    "rule_where": _("%(reason)s (%(where)s)"),
    "product_archived": _("archived"),
    "product_draft": _("draft"),
    "product_unlisted": _("unlisted"),
    # what was sent to Google Ads, and why
    "ads_drift": _("drift: Google Ads had %(real)s; %(reason)s"),
    "ads_had": _("Google Ads had %(real)s; %(reason)s"),
    "manual_released": _("manual control released by %(who)s. %(reason)s"),
    "held_change_applied": _("held change applied by %(who)s: %(reason)s"),
    "held_by_brake": _("%(reason)s (held: safety brake)"),
    "dry_run_not_sent": _("%(reason)s – dry run: not sent to Google Ads"),
    "brake_engaged": _(
        "%(sent)s ad groups paused within %(minutes)s minutes; the limit is %(allowed)s "
        "(%(share)s %% of %(watched)s watched ad groups, at most %(count)s)"
    ),
    # why a checkout got the reminder it got, or none
    "checkout_completed_skip": _("checkout completed"),
    "no_address": _("no e-mail address"),
    "no_marketing_consent": _("no marketing consent (UWG §7)"),
    "address_bounced": _("address bounced for good (reported by the mail service)"),
    "address_complained": _("address marked the mail as spam (reported by the mail service)"),
    "address_unsubscribed": _("address unsubscribed"),
    "claim_taken": _("claim for this checkout already taken"),
    "no_recovery_link": _("no recovery link"),
    "no_mail_server": _("no mail server configured"),
    "imprint_missing": _("imprint missing"),
    "holdout_drawn": _(
        "holdout: drawn for the control group (%(share)s %%); would have sent %(arm)s"
    ),
    "choice_plain_no_discount": _("plain: ΔE %(plain)s; discount unavailable (%(why)s)"),
    "choice_none_no_discount": _("none: plain ΔE %(plain)s ≤ 0; discount unavailable (%(why)s)"),
    "choice_discount": _("discount: ΔE %(discount)s > plain %(plain)s"),
    "choice_plain": _("plain: ΔE %(plain)s ≥ discount %(discount)s"),
    "choice_none": _("none: plain ΔE %(plain)s and discount ΔE %(discount)s ≤ 0"),
    "no_reason_given": _("no reason given"),
    "no_discount_code": _("no discount code configured"),
    "recent_discount": ngettext_lazy(
        "address got a discount within %(days)d day",
        "address got a discount within %(days)d days",
        "days",
    ),
    "recovery_link_not_allowed": _("recovery link not allowed: %(why)s"),
    "link_characters": _("characters a link does not have"),
    "link_not_url": _("not a URL"),
    "link_scheme": _("%(scheme)s: is not https"),
    "link_not_https": _("not an https link"),
    "link_user_name": _("a user name before the host"),
    "link_port": _("port %(port)s"),
    "link_no_host": _("no host"),
    "link_other_host": _("host %(host)s is not the shop's"),
    "paid_cannot_ask": _(
        "not sent: cannot ask %(vendor)s whether the buyer paid meanwhile (%(why)s)"
    ),
    "paid_failed": _(
        "not sent: %(vendor)s could not say whether the buyer paid meanwhile (%(error)s)"
    ),
    "paid_no_admin_access": _("no Admin API access: set %(settings)s"),
    "paid_other_shop": _("our Admin API access is for %(ours)s, not %(shop)s"),
    "paid_set_stripe_key": _("set STRIPE_API_KEY"),
    "paid_shopify_order": _("bought meanwhile: Shopify has order %(order)s"),
    "paid_stripe_complete": _(
        "bought meanwhile: Stripe reports the session complete (payment %(payment)s)"
    ),
    "frequency_capped": ngettext_lazy(
        "address got a reminder within %(days)d day",
        "address got a reminder within %(days)d days",
        "days",
    ),
}
# Codes whose text depends on a count, and the parameter that holds it.
PLURALS = {"frequency_capped": "days", "recent_discount": "days"}
# Codes that join their `parts` (notes or text) with "; ".
JOINED = "joined"


@dataclass(frozen=True)
class Note:
    """A note as a code and its values: text, numbers, datetimes, other notes, lists of them."""

    code: str
    params: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.code != JOINED and self.code not in TEMPLATES:
            raise KeyError(f"unknown note code {self.code!r}")

    def stored(self) -> dict:
        """The JSON kept on the row."""
        return {"code": self.code, "params": {k: _dump(v) for k, v in self.params.items()}}

    def english(self) -> str:
        """The text column's value: English whatever the worker's language."""
        with translation.override("en"):
            return render(self.stored())

    def __str__(self) -> str:
        return render(self.stored())

    def __bool__(self) -> bool:
        return True


def note(code: str, **params: object) -> Note:
    """A note of a registered code."""
    return Note(code, params)


def join(*parts: "Note | str | None") -> "Note | str":
    """The parts that say something, joined with "; " when shown; one part stays itself."""
    kept = [part for part in parts if part]
    if not kept:
        return ""
    if len(kept) == 1:
        return kept[0]  # type: ignore[return-value]
    return Note(JOINED, {"parts": kept})


def text_of(value: "Note | str") -> str:
    """The English text column's value for a note or plain text."""
    return value.english() if isinstance(value, Note) else value


def stored_of(value: "Note | str") -> dict | None:
    """The JSON for a note; None for plain text (shown as written)."""
    return value.stored() if isinstance(value, Note) else None


def render(stored: Mapping | None, fallback: str = "") -> str:
    """The stored note in the active language; `fallback` (the stored text) without a known code."""
    if not isinstance(stored, Mapping):
        return fallback
    code = stored.get("code")
    params = stored.get("params") or {}
    if code == JOINED:
        return "; ".join(_shown(part) for part in params.get("parts", ()))
    template = TEMPLATES.get(str(code))
    if template is None:
        return fallback
    try:
        values = {name: _shown(value) for name, value in params.items()}
        if str(code) in PLURALS:
            counted = PLURALS[str(code)]
            return str(template % {**values, counted: int(params[counted])})
        return str(template) % values
    except (KeyError, TypeError, ValueError):
        return fallback


def shown(stored: Mapping | None, text: str) -> str:
    """What a page shows for a row's note and its stored text."""
    return render(stored, fallback=text) if stored else text


def reason_fields(value: "Note | str") -> dict:
    """The `reason` text (English, cut to the column) and `reason_note` of a row."""
    return {"reason": text_of(value)[:500], "reason_note": stored_of(value)}


def reason_shown(row: object) -> str:
    """A row's reason in the reader's language (its stored text when it has no note)."""
    return shown(getattr(row, "reason_note", None), getattr(row, "reason", ""))


# --- values ---------------------------------------------------------------------------------


def restored(stored: Mapping) -> Note:
    """A stored note as a Note again, to wrap it in another (a held change's reason)."""
    return Note(str(stored["code"]), dict(stored.get("params") or {}))


def _dump(value: object) -> object:
    if isinstance(value, Mapping) and value.keys() & {"$note", "$time", "$decimal"}:
        return dict(value)  # stored already (a restored note's values)
    if isinstance(value, Note):
        return {"$note": value.stored()}
    if isinstance(value, datetime):
        return {"$time": value.isoformat()}
    if isinstance(value, Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, (list, tuple)):
        return [_dump(item) for item in value]
    if isinstance(value, str):
        return _UNSTORABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", value)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    return str(value)


def _shown(value: object) -> str:
    if isinstance(value, Mapping):
        if "$note" in value:
            return render(value["$note"])
        if "$time" in value:
            try:
                moment = datetime.fromisoformat(str(value["$time"]))
            except ValueError:
                return str(value["$time"])
            if timezone.is_aware(moment):
                moment = moment.astimezone(SHOP_ZONE)
            return formats.date_format(moment, "DATETIME_FORMAT")
        if "$decimal" in value:
            try:
                return formats.localize(Decimal(str(value["$decimal"])))
            except (InvalidOperation, ValueError):
                return str(value["$decimal"])
        return str(value)
    if isinstance(value, list):
        return ", ".join(_shown(item) for item in value)
    if value is None:
        return "?"
    if isinstance(value, float):
        return formats.localize(value)
    return str(value)  # ids and counts as they are: an id never gets a thousands separator


def codes() -> Sequence[str]:
    """Every registered code (for the catalogue test)."""
    return list(TEMPLATES)
