"""The RQ worker class the service runs (`--worker-class automation.platform.workers.Worker`)."""

import os

from rq.defaults import DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT
from rq.scheduler import RQScheduler
from rq.worker import SimpleWorker

from automation.platform.db_timeouts import worker_timeouts


class ParentBoundScheduler(RQScheduler):
    """RQ's scheduler process, ending soon after the worker that forked it is gone.

    RQ stops it only from the worker's teardown (`Worker.stop_scheduler`), which a worker killed
    with SIGKILL never runs: the orphan would hold the scheduler lock for ever.
    """

    _parent_pid: int | None = None

    def start(self):
        self._parent_pid = os.getpid()  # the worker, read before the fork
        return super().start()

    def orphaned(self) -> bool:
        """Whether the worker that started this scheduler process has died."""
        return self._parent_pid is not None and os.getppid() != self._parent_pid

    def heartbeat(self) -> None:
        # Once a second (`interval`). Stops as RQ does on SIGTERM (`request_stop`, then `stop`:
        # locks released, death registered), so the restarted worker's scheduler takes over.
        if self.orphaned():
            self.log.warning("Scheduler: its worker (PID %s) is gone, stopping", self._parent_pid)
            self.request_stop()
            return
        super().heartbeat()


class Worker(SimpleWorker):
    """A SimpleWorker that does RQ's maintenance every 30 s instead of every 10 minutes, and
    whose scheduler process does not outlive it.

    SimpleWorker runs jobs in its own process: no fork per job, warm database connections and
    Google Ads client (docs/PERFORMANCE.md, "SimpleWorker instead of a fork per job").
    Maintenance is what restarts the scheduler after a Redis restart and hands abandoned jobs
    of a killed worker back: ten minutes of waiting for that is too long for a sold-out product.

    While it works, its database connections wait at most WORKER_DB_LOCK_TIMEOUT_MS for a lock
    and WORKER_DB_STATEMENT_TIMEOUT_MS per statement (automation/platform/db_timeouts.py).
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("maintenance_interval", 30)
        super().__init__(*args, **kwargs)

    def _start_scheduler(
        self,
        burst: bool = False,
        logging_level: str | None = "INFO",
        date_format: str = DEFAULT_LOGGING_DATE_FORMAT,
        log_format: str = DEFAULT_LOGGING_FORMAT,
    ) -> None:
        """RQ's `Worker._start_scheduler` (rq 3.0, rq/worker/base.py), with ParentBoundScheduler
        in place of RQScheduler; RQ has no setting for the scheduler's class."""
        self.scheduler = ParentBoundScheduler(
            self.queues,
            connection=self.connection,
            logging_level=logging_level if logging_level is not None else self.log.level,
            date_format=date_format,
            log_format=log_format,
            serializer=self.serializer,
        )
        self.scheduler.acquire_locks()
        if self.scheduler.acquired_locks:
            if burst:
                try:
                    self.scheduler.register_birth()
                    self.scheduler.enqueue_scheduled_jobs()
                finally:
                    self.scheduler.release_locks()
                    self.scheduler.register_death()
            else:
                self.scheduler.start()

    def work(self, *args: object, **kwargs: object) -> bool:
        with worker_timeouts():
            return super().work(*args, **kwargs)
