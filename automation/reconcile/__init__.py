"""The nightly reconciliation: read Shopify's true levels and push them through the stock
path, repair drift, heal webhook subscriptions.

Imports stock, shopify, google_ads, platform and models; never ui.
"""
