"""Start gunicorn and RQ workers as the product runs them, and always stop them again.

Why: every number is only comparable when it comes from the Dockerfile's server setup (four sync
workers) and the Procfile's worker (SimpleWorker with the scheduler); and a bench that leaves
servers behind skews the next measurement on a shared, noisy machine.
"""

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from bench.env import ROOT, child_env

GUNICORN_WORKERS = 4
# The proxy docker-compose.yml puts in front of gunicorn: this file, as the nginx image runs it.
NGINX_TEMPLATE = ROOT / "deploy" / "nginx" / "default.conf.template"
# What the nginx image's entrypoint replaces in a template: `$NAME` or `${NAME}` where NAME is
# set in the environment; everything else (nginx's own `$host`, ...) stays. Its perl line:
# s|\$(\{)?($ENV{NGINX_ENVSUBST_FILTER}\w*)(?(1)\})|$ENV{$2} // $&|ge
# (github.com/nginxinc/docker-nginx, entrypoint/20-envsubst-on-templates.sh).
TEMPLATE_VARIABLE = re.compile(r"\$(\{)?(\w+)(?(1)\})")


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Processes:
    """Children started by the bench, each in its own process group, stopped on every exit."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.children: list[subprocess.Popen] = []

    def __enter__(self) -> "Processes":
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_all()

    def start(self, name: str, argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
        """Run `argv` with its output in `<log_dir>/<name>.log`."""
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 (closed with the child)
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self.children.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen, grace: float = 15.0) -> None:
        """SIGTERM the child's own process group, SIGKILL it after `grace` seconds."""
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        with contextlib.suppress(ProcessLookupError):  # leftovers of the group (gunicorn workers)
            os.killpg(proc.pid, signal.SIGKILL)
        if proc in self.children:
            self.children.remove(proc)

    def stop_all(self) -> None:
        """Stop every child still running, newest first."""
        for proc in reversed(list(self.children)):
            self.stop(proc)


def children_of(pid: int) -> list[int]:
    """Direct children of a process (gunicorn's workers), from /proc."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def start_gunicorn(
    procs: Processes,
    root: Path = ROOT,
    name: str = "gunicorn",
    env: dict[str, str] | None = None,
    ready_path: str = "/bench/bare/",
    ready_statuses: tuple[int, ...] = (200,),
) -> "Server":
    """The Dockerfile's command on a free local port, with the bench settings; waits until up.

    `env` replaces the bench's environment (the slow-client test points it at the test
    database); `ready_path` answering one of `ready_statuses` means the workers are up.
    """
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "elbkerzen.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(GUNICORN_WORKERS),
        "--access-logfile",
        "/dev/null",  # the Dockerfile logs each request to stdout: keep the cost, not the file
        "--timeout",
        "30",
    ]
    # The bench's gunicorn serves webhooks only, as compose's `webhooks` pool does.
    env = child_env(root) | {"WEBHOOK_POOL": "true"} if env is None else env
    proc = procs.start(name, argv, root, env)
    server = Server(proc, port)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {proc.returncode}; see {name}.log")
        if len(children_of(proc.pid)) >= GUNICORN_WORKERS and server.answers(
            ready_path, ready_statuses
        ):
            return server
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not come up within 60 s; see {name}.log")


class Server:
    """A running gunicorn: its master process and port."""

    def __init__(self, proc: subprocess.Popen, port: int) -> None:
        self.proc = proc
        self.port = port

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def answers(self, path: str, statuses: tuple[int, ...] = (200,)) -> bool:
        """True when GET `path` answers with one of `statuses`."""
        try:
            with urllib.request.urlopen(self.url(path), timeout=2) as response:
                return response.status in statuses
        except urllib.error.HTTPError as err:
            return err.code in statuses
        except OSError:
            return False

    def worker_pids(self) -> list[int]:
        return children_of(self.proc.pid)


def start_rq_workers(procs: Processes, count: int, root: Path = ROOT) -> list[subprocess.Popen]:
    """The Procfile's worker command, `count` times; waits until all registered in Redis."""
    from rq import Worker

    from bench.env import redis

    argv = [
        sys.executable,
        "manage.py",
        "rqworker",
        "default",
        "--with-scheduler",
        "--worker-class",
        "rq.worker.SimpleWorker",
    ]
    workers = [procs.start(f"rqworker-{n}", argv, root, child_env(root)) for n in range(count)]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(proc.poll() is not None for proc in workers):
            raise RuntimeError("an RQ worker exited at start; see rqworker-*.log")
        if Worker.count(connection=redis()) >= count:
            return workers
        time.sleep(0.2)
    raise RuntimeError("RQ workers did not register within 60 s; see rqworker-*.log")


def install_signal_handlers() -> None:
    """SIGTERM/SIGHUP end the bench like Ctrl-C does, so every `finally` stops the children."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)


def nginx_binary() -> str | None:
    """Debian's nginx, also when /usr/sbin is not on PATH (a non-root shell)."""
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def render_template(text: str, environment: Mapping[str, str]) -> str:
    """Fill in a template the way the nginx image does at start: set variables only."""
    return TEMPLATE_VARIABLE.sub(lambda m: environment.get(m.group(2), m.group(0)), text)


def nginx_main_config(directory: Path, site: Path) -> str:
    """The nginx image's own nginx.conf around our site, with every path in `directory`.

    As in the image: `worker_processes auto`, 1024 connections per worker, and the site
    included inside `http`, where the image includes /etc/nginx/conf.d/*.conf.
    """
    return f"""worker_processes auto;
daemon off;
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{
    worker_connections 1024;
}}
http {{
    access_log {directory}/access.log;
    client_body_temp_path {directory}/client_body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    sendfile on;
    keepalive_timeout 65;
    include {site};
}}
"""


def start_nginx(
    procs: Processes,
    upstream_port: int,
    directory: Path,
    ready_path: str = "/bench/bare/",
    ready_statuses: tuple[int, ...] = (200,),
    name: str = "nginx",
    webhooks_port: int | None = None,
) -> "Server":
    """The committed proxy config in front of 127.0.0.1:`upstream_port`; waits until it answers.

    The same template docker-compose.yml mounts, filled in as the image does, with the
    upstreams and the listening port being the only differences. `webhooks_port` is the
    webhook pool's gunicorn; unset, one gunicorn serves both pools' paths.
    """
    binary = nginx_binary()
    if binary is None:
        raise RuntimeError("nginx is not installed (apt-get install nginx)")
    port = free_port()
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)  # run as root, nginx's workers run as nobody and must read in here
    site = directory / "default.conf"
    site.write_text(
        render_template(
            NGINX_TEMPLATE.read_text(),
            {
                **os.environ,  # the image fills in from the container's whole environment
                "ELBKERZEN_UPSTREAM": f"127.0.0.1:{upstream_port}",
                "ELBKERZEN_WEBHOOKS_UPSTREAM": f"127.0.0.1:{webhooks_port or upstream_port}",
                "ELBKERZEN_LISTEN": str(port),
            },
        )
    )
    main = directory / "nginx.conf"
    main.write_text(nginx_main_config(directory, site))
    argv = [binary, "-p", str(directory), "-e", str(directory / "error.log"), "-c", str(main)]
    proc = procs.start(name, argv, directory, dict(os.environ))
    server = Server(proc, port)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with {proc.returncode}; see {name}.log")
        if server.answers(ready_path, ready_statuses):
            return server
        time.sleep(0.1)
    raise RuntimeError(f"nginx did not answer within 20 s; see {name}.log")
