"""The REST API under /api/: token-authenticated, for staff."""
