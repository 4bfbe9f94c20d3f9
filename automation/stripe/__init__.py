"""Stripe's API: the checkout sessions the paid check and the set-up page ask for.

Imports platform only.
"""
