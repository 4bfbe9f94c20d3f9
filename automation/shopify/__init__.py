"""Shopify's Admin API: access tokens and the GraphQL client (cost bucket, retries,
queries, webhook subscriptions).

Imports platform and models only.
"""
