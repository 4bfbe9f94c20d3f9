"""Shopify's Admin API: `access` (which token, which shop, who owns the webhooks), `tokens`
(static and client-credentials tokens), `transport` (one paced, retried GraphQL request: the
cost bucket and our errors), `queries` (the GraphQL documents and `ShopifyAdmin`, the client)
and `subscriptions` (healing the webhook subscriptions).

Imports platform and models only.
"""
