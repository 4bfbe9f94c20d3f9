"""Sign a bundled sample body exactly like Shopify or Stripe and post it, to try the intake by hand.

`--help` lists every topic with its sample (automation/samples/). A Stripe event type
(`checkout.session.expired`) goes to the Stripe intake, signed with Stripe's scheme
(`Stripe-Signature: t=...,v1=...`); a Shopify topic (`checkouts/create`) to the Shopify intake.
`--now` dates a checkout at this moment, so the reminder is due after the configured delay
instead of at once (the samples carry fixed dates in the past).
"""

import argparse
import json
import time
import uuid
from pathlib import Path

import requests
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, DjangoHelpFormatter
from django.urls import reverse
from django.utils import timezone

from automation.intake.sources import load_body, shopify, stripe
from automation.platform import connections

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SHOPIFY_SAMPLES = SAMPLES / "shopify"
STRIPE_SAMPLES = SAMPLES / "stripe"


def is_stripe(topic: str) -> bool:
    """Stripe names events with dots (`checkout.session.expired`), Shopify topics with a slash."""
    return "/" not in topic and "." in topic


def sample_path(topic: str) -> Path:
    """The bundled sample body for a topic (`orders/create` → shopify/orders_create.json)."""
    if is_stripe(topic):
        return STRIPE_SAMPLES / f"{topic.replace('.', '_')}.json"
    return SHOPIFY_SAMPLES / f"{topic.replace('/', '_')}.json"


def bundled_topics() -> list[tuple[str, Path]]:
    """Every topic with a sample: Shopify's from the file name, Stripe's from the event's type."""
    topics = []
    for path in sorted(SHOPIFY_SAMPLES.glob("*.json")):
        resource, _, event = path.stem.rpartition("_")
        topics.append((f"{resource}/{event}", path))
    for path in sorted(STRIPE_SAMPLES.glob("*.json")):
        topics.append((load_body(path.read_bytes())["type"], path))
    return topics


def topics_help() -> str:
    """The epilog of --help: one line per topic and its sample, relative to the project."""
    root = SAMPLES.parent.parent
    lines = ["topics and their sample bodies (--file sends another body):"]
    for topic, path in bundled_topics():
        vendor = "stripe " if is_stripe(topic) else "shopify"
        lines.append(f"  {vendor}  {topic:<26} {path.relative_to(root)}")
    return "\n".join(lines)


def dated_now(topic: str, body: bytes) -> bytes:
    """The body dated now: `created_at` and `updated_at` (Shopify), `created` (Stripe)."""
    payload = load_body(body)
    if is_stripe(topic):
        payload["created"] = int(time.time())
    elif topic.startswith("checkouts/"):
        now = timezone.localtime().isoformat(timespec="seconds")
        payload["created_at"] = payload["updated_at"] = now
    else:
        raise CommandError(f"--now dates checkouts only, not {topic}")
    return json.dumps(payload, ensure_ascii=False).encode()


class HelpFormatter(DjangoHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Django's option order, with the topic list's lines kept as written."""


class Command(BaseCommand):
    help = "Sign a webhook body like Shopify or Stripe and POST it to the intake."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs) -> argparse.ArgumentParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.formatter_class = HelpFormatter
        parser.epilog = topics_help()
        return parser

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "topic", help="Shopify topic (inventory_levels/update) or Stripe event type"
        )
        parser.add_argument("--file", type=Path, help="body to send (default: bundled sample)")
        parser.add_argument(
            "--now",
            action="store_true",
            help="date the checkout now, so the reminder comes after the configured delay",
        )
        parser.add_argument(
            "--url", help="intake URL (default: PUBLIC_BASE_URL + the vendor's webhook path)"
        )
        parser.add_argument("--secret", help="signing secret (default: the first configured)")
        parser.add_argument("--shop", help="Shopify shop domain (default: the first allowed)")
        parser.add_argument("--webhook-id", help="X-Shopify-Webhook-Id (default: a new UUID)")
        parser.add_argument(
            "--event-id", help="the Stripe event's id (default: a new one, so it is not a repeat)"
        )

    def handle(self, *args, **options) -> None:
        topic = options["topic"]
        path = options["file"] or sample_path(topic)
        if not path.is_file():
            raise CommandError(f"no body for {topic}: {path} does not exist (use --file)")
        body = path.read_bytes()
        if options["now"]:
            body = dated_now(topic, body)
        if is_stripe(topic):
            url, body, headers = self.stripe_request(body, options)
        else:
            url, headers = self.shopify_request(topic, body, options)
        try:
            response = requests.post(url, data=body, headers=headers, timeout=10)
        except requests.RequestException as err:
            raise CommandError(f"could not reach {url}: {err}") from err
        self.stdout.write(f"{response.status_code} {response.reason}")
        self.stdout.write(response.text)
        if response.status_code >= 400:
            raise CommandError(f"the intake answered {response.status_code}")

    def shopify_request(self, topic: str, body: bytes, options: dict) -> tuple[str, dict]:
        secret = options["secret"] or next(iter(connections.shopify_webhook_secrets()), None)
        if not secret:
            raise CommandError(
                "no secret: pass --secret, set SHOPIFY_WEBHOOK_SECRETS or enter the app's "
                "client secret on the set-up page"
            )
        shop = options["shop"] or next(iter(settings.SHOPIFY_SHOP_DOMAINS), "")
        headers = {
            "Content-Type": "application/json",
            "X-Shopify-Topic": topic,
            "X-Shopify-Hmac-Sha256": shopify.sign(body, secret),
            "X-Shopify-Shop-Domain": shop,
            "X-Shopify-Webhook-Id": options["webhook_id"] or str(uuid.uuid4()),
            "X-Shopify-Event-Id": str(uuid.uuid4()),
            "X-Shopify-Triggered-At": timezone.now().isoformat(),
            "X-Shopify-API-Version": settings.SHOPIFY_API_VERSION,
        }
        url = options["url"] or settings.PUBLIC_BASE_URL + reverse("shopify-webhook")
        return url, headers

    def stripe_request(self, body: bytes, options: dict) -> tuple[str, bytes, dict]:
        secret = options["secret"] or next(iter(connections.stripe_webhook_secrets()), None)
        if not secret:
            raise CommandError(
                "no secret: pass --secret, set STRIPE_WEBHOOK_SECRETS or enter the signing "
                "secret on the set-up page"
            )
        payload = load_body(body)
        payload["id"] = options["event_id"] or f"evt_test_{uuid.uuid4().hex}"
        body = json.dumps(payload, ensure_ascii=False).encode()
        # Stripe signs "{t}.{body}" and sends `t=<unix time>,v1=<hex HMAC-SHA256>`
        # (https://docs.stripe.com/webhooks#verify-manually); the intake checks t's age.
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "Stripe-Signature": f"t={timestamp},v1={stripe.sign(body, secret, timestamp)}",
        }
        url = options["url"] or settings.PUBLIC_BASE_URL + reverse("stripe-webhook")
        return url, body, headers
