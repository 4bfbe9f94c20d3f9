"""gunicorn settings read from the working directory: metrics across worker processes."""


def child_exit(server, worker) -> None:
    """Let Prometheus' multiprocess collector forget a dead worker's live gauges."""
    import os

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
