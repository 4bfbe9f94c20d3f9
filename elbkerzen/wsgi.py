"""WSGI entry point for gunicorn."""

import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "elbkerzen.settings")
application = get_wsgi_application()

# Import the URLconf, and with it the views, DRF and the API schema, while the worker boots:
# Django would do it on the worker's first request, which then waits for the import (a webhook
# from Shopify counts against its 5 s limit; docs/PERFORMANCE.md, "URLconf imported at boot").
import_module(settings.ROOT_URLCONF)
