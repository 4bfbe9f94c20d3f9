"""The Elbkerzen shop the day plays in: catalog, margin rules, reminder settings, secrets.

The harness writes these into the chaos database and the truth reads the very same values, so
the expected reminder arm is computed with the merchant's rules, not with a copy of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from automation.reminders.rules import DEFAULT_HOLDOUT_SHARE, MarginRule, Probabilities

SHOP_DOMAIN = "elbkerzen.myshopify.com"
SHOPIFY_SECRET = "chaos_shopify_secret"  # noqa: S105 (a throwaway secret of the run)
STRIPE_SECRET = "whsec_chaos_secret"  # noqa: S105 (a throwaway secret of the run)
ALERT_EMAIL = "inhaberin@elbkerzen.example"
CUSTOMER_ID = "1234567890"
PUBLIC_BASE_URL = "https://automation.elbkerzen.example"
TIME_ZONE = "Europe/Berlin"
DISCOUNT_CODE = "ELBE10"
REMINDER_DELAY_SECONDS = 60  # ReminderSettings.reminder_delay_minutes = 1: 60 min compressed
FIRST_ITEM_ID = 45_035_996_273_704_000  # above 2**53, as real inventory item ids can be
FIRST_LOCATION_ID = 24_826_418
FIRST_AD_GROUP_ID = 7_100_000_000
PROMOTION_AD_GROUP_ID = "7200000001"
BROKEN_AD_GROUP_ID = "7999999999"  # removed in Google Ads before the day: it must be skipped
INITIAL_AD_GROUP_STATUS = "ENABLED"  # what Google Ads has at the start: the ads were running

HOLDOUT_SHARE = DEFAULT_HOLDOUT_SHARE  # ReminderSettings' default: 10 % get no mail, drawn
HOLDOUT_SALT = "chaos"  # ReminderSettings.holdout_salt: which checkouts the draw holds out
PROBABILITIES = Probabilities()  # the ReminderSettings defaults: p0 .04, plain .08, discount .11
DEFAULT_MARGIN_RATE = Decimal("0.40")
IMPRINT = "Elbkerzen Chaos-Tag, Hafenstraße 1, 20457 Hamburg"  # no reminder is sent without one


@dataclass(frozen=True)
class Product:
    """One catalog line a basket can hold."""

    title: str
    price: Decimal
    product_id: int
    variant_id: int
    sku: str
    vendor: str


CATALOG: dict[str, Product] = {
    "winterzauber": Product(
        "Winterzauber Duftkerze",
        Decimal("24.90"),
        9100000000101,
        9200000000101,
        "EK-WZ",
        "Elbkerzen",
    ),
    "elbnebel": Product(
        "Elbnebel Stumpenkerze",
        Decimal("14.50"),
        9100000000102,
        9200000000102,
        "EK-EN",
        "Elbkerzen",
    ),
    "teelichter": Product(
        "Bienenwachs-Teelichter",
        Decimal("8.90"),
        9100000000103,
        9200000000103,
        "IL-TL",
        "Imkerei Lange",
    ),
    "streichhoelzer": Product(
        "Streichhölzer lang",
        Decimal("3.50"),
        9100000000104,
        9200000000104,
        "GS-STREICH",
        "Zündwerk",
    ),
    "gutschein": Product(
        "Geschenkgutschein",
        Decimal("25.00"),
        9100000000105,
        9200000000105,
        "GUTSCHEIN",
        "Elbkerzen",
    ),
}

# Baskets by margin: own candles (55 %: discount wins), beeswax (default 40 %: discount, just),
# matches (20 %: plain wins), gift cards (0 %: nothing is worth a mail), and mixed ones.
BASKETS: dict[str, tuple[str, ...]] = {
    "own candles": ("winterzauber", "elbnebel"),
    "beeswax": ("teelichter",),
    "matches": ("streichhoelzer",),
    "gift card": ("gutschein",),
    "mixed": ("winterzauber", "teelichter", "streichhoelzer", "gutschein"),
}

MARGIN_RULES: tuple[MarginRule, ...] = (
    MarginRule(rate=Decimal("0.55"), vendor="Elbkerzen"),
    MarginRule(rate=Decimal("0.20"), sku="GS-STREICH"),
    MarginRule(rate=Decimal("0.00"), product_id=CATALOG["gutschein"].product_id),
)
"""Listed in this order in the database too: the first listed wins a tie of specificity."""
