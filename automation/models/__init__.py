"""Models, one module per concept."""

from .ads import AdGroupAction, AdGroupState, BrakeEpisode, BrakeSettings, HeldChange
from .alerts import AlertSlot
from .catalogue import Location, Product, Variant
from .checkouts import (
    CheckoutState,
    Claim,
    DataRequest,
    MarginRule,
    ReminderDecision,
    ReminderSettings,
    SuppressedAddress,
)
from .connections import ConnectionSettings
from .dashboard import DashboardSettings
from .deliveries import Delivery
from .inventory import StockLevel
from .promotions import Promotion, PromotionAdGroup
from .reconcile import ReconcileRun
from .watched import AdGroup, WatchedProduct

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
