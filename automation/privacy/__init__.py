"""Shopify's mandatory privacy topics and the pseudonyms that let redaction find a
customer's rows.

Imports intake's contract, shopify, platform and models; never ui.
"""
