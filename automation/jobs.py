"""RQ entry points: each takes ids, calls one function, and is safe to run twice."""

from datetime import datetime

from rq import get_current_job

from . import checkouts, inbox


def process_delivery(delivery_id: int) -> str:
    """Process one stored delivery; the last RQ attempt turns a failure into `dead`."""
    job = get_current_job()
    final_attempt = job is None or not job.retries_left
    return inbox.process(delivery_id, final_attempt=final_attempt)


def sweep_deliveries() -> int:
    """Enqueue deliveries that missed their job (Redis outage, killed worker)."""
    return inbox.sweep()


def evaluate_checkout(checkout_id: int, version: str) -> str:
    """Decide about one checkout version and send at most one reminder."""
    return checkouts.evaluate(checkout_id, datetime.fromisoformat(version))
