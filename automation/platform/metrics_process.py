"""Name each process's Prometheus files by host and pid, so containers can share one directory.

Why: prometheus_client's multiprocess mode keeps one file per process, named by `os.getpid()`
(`histogram_<pid>.db`, prometheus_client/values.py, `MultiProcessValue(process_identifier=
os.getpid)`). docker-compose.yml mounts one directory into web, worker and cron so the worker's
job and reaction histograms reach the /metrics that gunicorn serves; but every container has its
own pid namespace, so the worker's pid 1 and a cron or web process with pid 1 would write the
same file and overwrite each other's counts. The library lets the identifier be replaced
("when called in simultaneously running processes it MUST return distinct values"); the
container's hostname (its id under Docker) plus the pid is distinct across containers.

No underscore in the identifier: the collector splits file names on `_` and reads a gauge
file's pid from the third part (prometheus_client/multiprocess.py, `_read_metrics`).
"""

import os
import socket

from prometheus_client import values

HOST = socket.gethostname().replace("_", "-")


def process_identifier(pid: int | None = None) -> str:
    """`<hostname>-<pid>` of this process, or of `pid` on this host (gunicorn's dead worker)."""
    return f"{HOST}-{os.getpid() if pid is None else pid}"


def name_files_by_host_and_pid() -> None:
    """Make metrics created from now on write `<type>_<hostname>-<pid>.db`.

    Must run before the first metric is created (automation/platform/metrics.py calls it first);
    only in multiprocess mode (PROMETHEUS_MULTIPROC_DIR set), as prometheus_client itself decides.
    """
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        values.ValueClass = values.MultiProcessValue(process_identifier)
