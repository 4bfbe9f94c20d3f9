"""Reminders for abandoned checkouts: checkout versions, evaluate, the pure rules, claims,
the mail and its text, paid check, suppression, bounces, addresses, catch-up.

Imports intake (handler contract, rows), platform, models and the vendors (shopify, stripe);
never ui.
"""
