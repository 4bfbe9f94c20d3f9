"""gunicorn settings read from the working directory: metrics across worker processes."""


def child_exit(server, worker) -> None:
    """Let Prometheus' multiprocess collector forget a dead worker's live gauges.

    The files carry `<hostname>-<pid>`, not the bare pid (automation/platform/metrics_process.py).
    """
    import os

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        from automation.platform.metrics_process import process_identifier

        multiprocess.mark_process_dead(process_identifier(worker.pid))
