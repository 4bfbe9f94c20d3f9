"""Models, one module per concept."""

from .ads import AdGroupAction
from .deliveries import Delivery
from .inventory import StockLevel, WatchedItem

__all__ = ["AdGroupAction", "Delivery", "StockLevel", "WatchedItem"]
