"""RQ entry points: each takes ids, calls one function, and is safe to run twice."""

from rq import get_current_job

from . import inbox


def process_delivery(delivery_id: int) -> str:
    """Process one stored delivery; the last RQ attempt turns a failure into `dead`."""
    job = get_current_job()
    final_attempt = job is None or not job.retries_left
    return inbox.process(delivery_id, final_attempt=final_attempt)


def sweep_deliveries() -> int:
    """Enqueue deliveries that missed their job (Redis outage, killed worker)."""
    return inbox.sweep()
