"""Google Ads: the adapter (the only module importing google.ads), the OAuth web flow and
ad-group status changes with their log.

Imports platform and models only.
"""
