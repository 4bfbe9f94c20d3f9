"""The intake as the profiles suggest it: the product's effects with fewer round trips.

Why: measured next to the product's intake (same server, same run, and in-process A/B), this
shows what each recommended product change buys before anyone makes it. Each function mirrors
the product function it would replace and names the round trip it saves. Bench-only: the
product keeps its own code until someone changes it.
"""

import contextlib
from collections.abc import Callable

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from redis.exceptions import RedisError
from rq import Retry

from automation import inbox
from automation.models import Delivery
from automation.queues import default_queue, redis_client
from automation.sources import Incoming


def skip_health_check() -> None:
    """What `CONN_HEALTH_CHECKS = False` does for one request: no `SELECT 1` before the first query.

    Django re-arms the check at every request start (and every job start, via
    `close_old_connections`); the check costs one PostgreSQL round trip each time.
    """
    connection.health_check_done = True


def enqueue_delivery(delivery_id: int) -> bool:
    """`inbox.enqueue_delivery` in one Redis round trip instead of two.

    RQ's `enqueue_job` sends `SADD rq:queues` in a pipeline of its own and then the job's
    MULTI/EXEC; given the caller's pipeline it sends both in one.
    """
    from automation.jobs import process_delivery

    intervals = list(settings.DELIVERY_RETRY_INTERVALS)
    try:
        with redis_client().pipeline() as pipe:
            default_queue().enqueue_call(
                process_delivery,
                args=(delivery_id,),
                job_id=inbox.job_id_for(delivery_id),
                retry=Retry(max=len(intervals), interval=intervals),
                timeout=settings.DELIVERY_JOB_TIMEOUT,
                result_ttl=0,
                description=f"process delivery {delivery_id}",
                pipeline=pipe,
            )
            pipe.execute()
    except RedisError:
        return False
    return True


def record(
    incoming: Incoming, enqueue: Callable[[int], bool] = inbox.enqueue_delivery
) -> Delivery | None:
    """`inbox.record` as recommended, with the enqueue as a parameter so a proposal can plug in.

    The lone INSERT commits by itself: psycopg 3 sends BEGIN and COMMIT as round trips of their
    own, so an atomic block costs two of them around one statement that is atomic anyway. A
    savepoint stays where a caller's transaction needs one (tests, eager runs), so an
    IntegrityError cannot poison it.
    """
    invalid = bool(incoming.invalid_reason)
    savepoint = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    try:
        with savepoint:
            delivery = Delivery.objects.create(
                source=incoming.source,
                shop_domain=incoming.shop_domain,
                topic=incoming.topic,
                webhook_id=incoming.webhook_id,
                event_id=incoming.event_id,
                triggered_at=incoming.triggered_at,
                api_version=incoming.api_version,
                body=incoming.body,
                status=Delivery.Status.INVALID if invalid else Delivery.Status.RECEIVED,
                last_error=incoming.invalid_reason,
                processed_at=timezone.now() if invalid else None,
            )
    except IntegrityError:
        if not inbox._count_duplicate(incoming):
            raise
        return None
    if not invalid:
        transaction.on_commit(lambda: enqueue(delivery.pk))  # at once outside a transaction
    return delivery
