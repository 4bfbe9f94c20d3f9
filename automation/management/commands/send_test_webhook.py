"""Sign a body exactly like Shopify and post it, to try the intake by hand."""

import uuid
from pathlib import Path

import requests
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from automation.sources.shopify import sign

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "shopify"


def sample_path(topic: str) -> Path:
    """The bundled sample body for a topic (`orders/create` → orders_create.json)."""
    return SAMPLES / f"{topic.replace('/', '_')}.json"


class Command(BaseCommand):
    help = "Sign a webhook body like Shopify and POST it to the intake."

    def add_arguments(self, parser) -> None:
        parser.add_argument("topic", help="Shopify topic, e.g. inventory_levels/update")
        parser.add_argument("--file", type=Path, help="body to send (default: bundled sample)")
        parser.add_argument("--url", default="http://127.0.0.1:8000/webhooks/shopify/")
        parser.add_argument("--secret", help="signing secret (default: the first configured)")
        parser.add_argument("--shop", help="shop domain (default: the first allowed)")
        parser.add_argument("--webhook-id", help="X-Shopify-Webhook-Id (default: a new UUID)")

    def handle(self, *args, **options) -> None:
        topic = options["topic"]
        path = options["file"] or sample_path(topic)
        if not path.is_file():
            raise CommandError(f"no body for {topic}: {path} does not exist (use --file)")
        secret = options["secret"] or next(iter(settings.SHOPIFY_WEBHOOK_SECRETS), None)
        if not secret:
            raise CommandError("no secret: pass --secret or set SHOPIFY_WEBHOOK_SECRETS")
        shop = options["shop"] or next(iter(settings.SHOPIFY_SHOP_DOMAINS), "")
        body = path.read_bytes()
        headers = {
            "Content-Type": "application/json",
            "X-Shopify-Topic": topic,
            "X-Shopify-Hmac-Sha256": sign(body, secret),
            "X-Shopify-Shop-Domain": shop,
            "X-Shopify-Webhook-Id": options["webhook_id"] or str(uuid.uuid4()),
            "X-Shopify-Event-Id": str(uuid.uuid4()),
            "X-Shopify-Triggered-At": timezone.now().isoformat(),
            "X-Shopify-API-Version": "2026-07",
        }
        try:
            response = requests.post(options["url"], data=body, headers=headers, timeout=10)
        except requests.RequestException as err:
            raise CommandError(f"could not reach {options['url']}: {err}") from err
        self.stdout.write(f"{response.status_code} {response.reason}")
        self.stdout.write(response.text)
        if response.status_code >= 400:
            raise CommandError(f"the intake answered {response.status_code}")
