"""Models, one module per concept."""

from automation.models.ads import (
    AdGroupAction,
    AdGroupState,
    BrakeEpisode,
    BrakeSettings,
    HeldChange,
)
from automation.models.alerts import AlertSlot
from automation.models.catalogue import Location, Product, Variant
from automation.models.checkouts import (
    CheckoutState,
    Claim,
    DataRequest,
    MarginRule,
    ReminderDecision,
    ReminderSettings,
    SuppressedAddress,
)
from automation.models.connections import ConnectionSettings
from automation.models.dashboard import DashboardSettings
from automation.models.deliveries import Delivery
from automation.models.inventory import StockLevel
from automation.models.promotions import Promotion, PromotionAdGroup
from automation.models.reconcile import ReconcileRun
from automation.models.watched import AdGroup, WatchedProduct

__all__ = [
    "AdGroup",
    "AdGroupAction",
    "AdGroupState",
    "AlertSlot",
    "BrakeEpisode",
    "BrakeSettings",
    "CheckoutState",
    "Claim",
    "ConnectionSettings",
    "DashboardSettings",
    "DataRequest",
    "Delivery",
    "HeldChange",
    "Location",
    "MarginRule",
    "Product",
    "Promotion",
    "PromotionAdGroup",
    "ReconcileRun",
    "ReminderDecision",
    "ReminderSettings",
    "StockLevel",
    "SuppressedAddress",
    "Variant",
    "WatchedProduct",
]
