"""A checkout as any sender describes it (Shopify's checkouts, Stripe's sessions), and the
parts of it both senders' parsers read the same way: the address, the first name, line items."""

import html
import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.utils.html import strip_tags

from automation.intake.sources.fields import amount, bounded, optional_id, text
from automation.platform.addresses import identifying_address, normalise_address
from automation.platform.exceptions import InvalidPayload

# A first name longer than this is cut: a greeting, not a place for text.
FIRST_NAME_MAX_CHARS = 40
# What of the raw name field the cleaning reads: room for markup around a real name, and
# short enough that the cleaning's regex and HTML parser cost nothing whatever is sent.
FIRST_NAME_INPUT_CHARS = 10 * FIRST_NAME_MAX_CHARS


@dataclass(frozen=True)
class CheckoutVersion:
    """One version of a checkout as a sender described it, validated."""

    source: str
    token: str
    updated_at: datetime
    shop_domain: str = ""
    # The normalised address (automation/platform/addresses.py), "" when none was given or it is
    # invalid.
    email: str = ""
    # An address was given that does not normalise: no reminder ("invalid e-mail").
    email_invalid: bool = False
    # The address the body names, read leniently, only for the redaction pseudonym.
    named_email: str = ""
    first_name: str = ""
    customer_id: int | None = None
    phone: str = ""
    accepts_marketing: bool = False
    completed_at: datetime | None = None
    recovery_url: str = ""
    total_price: Decimal = Decimal(0)
    currency: str = ""
    line_items: list[dict] = field(default_factory=list)


def email_fields(raw: str) -> dict:
    """The CheckoutVersion fields for the address a sender gave, parsed once, here."""
    if not raw.strip():
        return {}
    email = normalise_address(raw)
    return {
        "email": email or "",
        "email_invalid": email is None,
        "named_email": identifying_address(raw) or "",
    }


# A word of a name that is a link or points to one: a scheme (https:, javascript:), `//`, a
# `www.` host, an address, or a domain (`evil.example`, `evil.com/x`).
_LINK_WORD = re.compile(r"[a-z][a-z0-9+.-]*:\S|//|^www\.|@|[a-z0-9-]\.[a-z]{2,}", re.IGNORECASE)


def plain_first_name(value: object) -> str:
    """The first name as plain text for a greeting; "" when nothing of a name is left.

    Sign-up spam puts links and markup into name fields so that the shop's own mails carry
    them: tags (also ones hidden as entities) and link-like words are removed, control and
    format characters dropped, whitespace collapsed, and the rest cut to FIRST_NAME_MAX_CHARS.
    Only the first FIRST_NAME_INPUT_CHARS of the field are read.
    """
    if not isinstance(value, str):
        return ""
    name = bounded(value, FIRST_NAME_INPUT_CHARS)
    for _ in range(3):  # `&lt;b&gt;` is a tag once unescaped
        name = html.unescape(strip_tags(name))
    name = "".join(" " if ch.isspace() else ch for ch in name if ch.isprintable() or ch.isspace())
    words = name.replace("<", " ").replace(">", " ").split()
    name = " ".join(word for word in words if not _LINK_WORD.search(word))
    return name[:FIRST_NAME_MAX_CHARS].strip()


def line_item(raw: object) -> dict:
    """One line of a Shopify checkout, as the margin rules and the mail read it."""
    if not isinstance(raw, dict):
        raise InvalidPayload("line_items must be objects")
    quantity = raw.get("quantity")
    if type(quantity) is not int or not 0 <= quantity < 100_000:
        raise InvalidPayload("line item quantity must be a non-negative integer")
    return {
        "title": text(raw.get("title"), "line item title", 500),
        "product_id": optional_id(raw.get("product_id")),
        "variant_id": optional_id(raw.get("variant_id")),
        "sku": text(raw.get("sku"), "line item sku", 100),
        "vendor": text(raw.get("vendor"), "line item vendor", 100),
        "quantity": quantity,
        "price": str(amount(raw.get("price"), "line item price")),
    }
