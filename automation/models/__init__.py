"""Models, one module per concept."""

from .ads import AdGroupAction, AdGroupState, BrakeEpisode, BrakeSettings, HeldChange
from .checkouts import (
    CheckoutState,
    Claim,
    DataRequest,
    MarginRule,
    ReminderDecision,
    ReminderSettings,
    SuppressedAddress,
)
from .dashboard import DashboardSettings
from .deliveries import Delivery
from .inventory import StockLevel, WatchedItem
from .promotions import Promotion, PromotionAdGroup
from .reconcile import ReconcileRun

__all__ = [
    "AdGroupAction",
    "AdGroupState",
    "BrakeEpisode",
    "BrakeSettings",
    "CheckoutState",
    "Claim",
    "DashboardSettings",
    "DataRequest",
    "Delivery",
    "HeldChange",
    "MarginRule",
    "Promotion",
    "PromotionAdGroup",
    "ReconcileRun",
    "ReminderDecision",
    "ReminderSettings",
    "StockLevel",
    "SuppressedAddress",
    "WatchedItem",
]
