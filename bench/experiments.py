"""In-process A/B of the recommended product changes, one at a time and together.

Why: wrk compares whole servers, where a 10 % change drowns in a noisy machine's swings. Here
one process alternates short blocks of requests (or jobs) between variants and compares each
block with the product's block of the same round, so each change's own effect shows. The
variants swap product functions at run time (bench/proposal.py); no product file changes.
"""

import random
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bench.env import SECRET, SHOP, flush_redis, reset_tables


@dataclass
class Variant:
    """One way to run the intake or the job: health check on/off, which record and enqueue."""

    name: str
    health_check: bool
    record: Callable | None = None  # None: the product's
    enqueue: Callable | None = None


@dataclass
class Comparison:
    """Median cost per request (or job) of each variant and its median ratio to the product's."""

    title: str
    unit: str
    rounds: int
    per_round: int
    rows: list[tuple[str, float, float]] = field(default_factory=list)  # name, ms, × product

    def as_dict(self) -> dict:
        return {
            "title": self.title,
            "unit": self.unit,
            "rounds": self.rounds,
            "per_round": self.per_round,
            "rows": self.rows,
        }


def _checks_on() -> bool:
    from django.conf import settings

    return bool(settings.DATABASES["default"].get("CONN_HEALTH_CHECKS"))


def _on_off(flag: bool) -> str:
    return "on" if flag else "off"


def intake_variants() -> list[Variant]:
    """The product as configured, each recommended change alone, and all of them together.

    Variants are relative to the product's current state, so a change the product has adopted
    shows as ≈ 1.00× and the opposite variant shows what it saved.
    """
    from bench import proposal

    checks = _checks_on()
    return [
        Variant(f"product as is (health check {_on_off(checks)})", health_check=checks),
        Variant(f"health check {_on_off(not checks)}", health_check=not checks),
        Variant("record: lone INSERT in autocommit", health_check=checks, record=proposal.record),
        Variant(
            "enqueue in one Redis round trip",
            health_check=checks,
            enqueue=proposal.enqueue_delivery,
        ),
        Variant(
            "all of them (= `proposed`)",
            health_check=False,
            record=proposal.record,
            enqueue=proposal.enqueue_delivery,
        ),
    ]


def _compare(
    title: str, unit: str, variants: list[Variant], rounds: int, run: Callable[[Variant], float]
) -> Comparison:
    """Rounds of one block per variant (order rotated); ratios paired within each round."""
    for variant in variants:
        run(variant)  # warm-up, not counted
    times: dict[str, list[float]] = {v.name: [] for v in variants}
    for number in range(rounds):
        shift = number % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            times[variant.name].append(run(variant))
        reset_tables()
        flush_redis()
    base = times[variants[0].name]
    comparison = Comparison(title, unit, rounds, 0)
    for variant in variants:
        mine = times[variant.name]
        ratio = statistics.median(m / b for m, b in zip(mine, base, strict=True))
        comparison.rows.append((variant.name, statistics.median(mine), ratio))
    return comparison


def intake(rounds: int, per_round: int) -> Comparison:
    """POST /webhooks/shopify/ through Django's test client, as gunicorn would call it."""
    from django.db import close_old_connections, connection
    from django.test import Client

    from automation import inbox
    from automation.sources.shopify import sign
    from bench.intake import BODY, TOPIC

    warnings.filterwarnings("ignore", message="No directory at")  # static files: not built here
    client = Client()
    headers = {
        "HTTP_X_SHOPIFY_TOPIC": TOPIC,
        "HTTP_X_SHOPIFY_HMAC_SHA256": sign(BODY, SECRET),
        "HTTP_X_SHOPIFY_SHOP_DOMAIN": SHOP,
        "HTTP_HOST": "127.0.0.1",
    }
    product_record, product_enqueue = inbox.record, inbox.enqueue_delivery
    counter = 0

    def run(variant: Variant) -> float:
        nonlocal counter
        inbox.enqueue_delivery = variant.enqueue or product_enqueue
        if variant.record is None:
            inbox.record = product_record
        else:  # the proposal's record enqueues with what it is given
            proposed, enqueue = variant.record, variant.enqueue or product_enqueue
            inbox.record = lambda incoming: proposed(incoming, enqueue=enqueue)
        spent = 0.0
        try:
            for _ in range(per_round):
                counter += 1
                close_old_connections()  # gunicorn's request_started: re-arms the health check
                connection.ensure_connection()
                connection.health_check_enabled = variant.health_check
                started = time.perf_counter()
                response = client.post(
                    "/webhooks/shopify/",
                    data=BODY,
                    content_type="application/json",
                    HTTP_X_SHOPIFY_WEBHOOK_ID=f"ab-{counter}",
                    **headers,
                )
                spent += time.perf_counter() - started
                if response.status_code != 200:
                    raise RuntimeError(f"{variant.name}: {response.status_code} {response.content}")
        finally:
            inbox.record, inbox.enqueue_delivery = product_record, product_enqueue
            connection.health_check_enabled = connection.settings_dict["CONN_HEALTH_CHECKS"]
        return spent / per_round * 1000

    result = _compare(
        "intake request, in-process (Django test client, no HTTP server)",
        "ms/request",
        intake_variants(),
        rounds,
        run,
    )
    result.per_round = per_round
    return result


def job(rounds: int, per_round: int) -> Comparison:
    """`jobs.process_delivery` called directly on stored deliveries (no RQ around it)."""
    from django.db import connection

    from automation.jobs import process_delivery
    from automation.models import Delivery
    from bench import reaction

    items = reaction.watch_items()
    rng = random.Random(5)
    counter = 0

    def run(variant: Variant) -> float:
        nonlocal counter
        now = datetime.now(UTC)
        rows = []
        for _ in range(per_round):
            counter += 1
            rows.append(
                Delivery(
                    source="shopify",
                    shop_domain=SHOP,
                    topic=reaction.TOPIC,
                    webhook_id=f"job-ab-{counter}",
                    triggered_at=now,
                    body=reaction.level_body(counter, items, now, rng),
                )
            )
        ids = [row.pk for row in Delivery.objects.bulk_create(rows)]
        connection.ensure_connection()
        connection.health_check_enabled = variant.health_check
        try:
            started = time.perf_counter()
            for pk in ids:
                process_delivery(pk)
            spent = time.perf_counter() - started
        finally:
            connection.health_check_enabled = connection.settings_dict["CONN_HEALTH_CHECKS"]
        return spent / per_round * 1000

    checks = _checks_on()
    variants = [
        Variant(f"product as is (health check {_on_off(checks)})", checks),
        Variant(f"health check {_on_off(not checks)}", not checks),
    ]
    result = _compare("inventory delivery job, in-process (no RQ)", "ms/job", variants, rounds, run)
    result.per_round = per_round
    return result
