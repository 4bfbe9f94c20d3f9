"""What tests lean on besides the stand-ins: vendor data obtained and checked (Shopify's schema)."""
