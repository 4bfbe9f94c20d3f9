"""Reminders for abandoned checkouts: the webhook handlers and their follow-up, the evaluation,
the pure rules, attribution and the results per arm, the mail and its text, the paid check,
suppression, bounces, the unsubscribe page and the catch-up.

Imports intake (the handler contract and sources), platform, models and the vendors (shopify,
stripe); never ui.
"""
