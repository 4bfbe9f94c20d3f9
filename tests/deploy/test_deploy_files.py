"""The image and the compose file, and the proxy they publish.

Docker cannot run on these machines, so the files are read as Docker reads them: .dockerignore
with Docker's matching rules, docker-compose.yml as YAML, the Dockerfile's CMD and ENV lines;
the nginx template is filled in as the nginx image does (tests/deploy/test_slow_clients.py runs it).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from bench.servers import NGINX_TEMPLATE, render_template

ROOT = Path(__file__).resolve().parents[2]
APP_SERVICES = ("web", "webhooks", "worker", "cron")
# What Shopify, Stripe, the mail service and the probes call: the webhook pool serves it.
WEBHOOK_POOL_PATHS = ("/webhooks/", "/anymail/", "/unsubscribe/", "/healthz", "/metrics")


def dockerignore_patterns() -> list[tuple[bool, re.Pattern]]:
    """(excludes?, regex) per line of .dockerignore, as Docker reads it.

    Docker's rules (docs.docker.com/build/concepts/context/#dockerignore-files): Go's
    filepath.Match (`*` and `?` stay within one path element), `**` for any number of elements,
    a leading `!` re-includes, the last matching line wins, and a pattern that matches a
    directory excludes everything under it.
    """
    patterns = []
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        line = line.lstrip("!").strip("/")
        regex = ""
        for part in re.split(r"(\*\*/?|\*|\?)", line):
            if part.startswith("**"):
                regex += "(?:.*/)?" if part.endswith("/") else ".*"
            elif part == "*":
                regex += "[^/]*"
            elif part == "?":
                regex += "[^/]"
            else:
                regex += re.escape(part)
        patterns.append((not include, re.compile(rf"{regex}(?:/.*)?")))
    return patterns


def excluded(path: str) -> bool:
    verdict = False
    for excludes, pattern in dockerignore_patterns():
        if pattern.fullmatch(path):
            verdict = excludes
    return verdict


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        ".env.production",
        "var/db.sqlite3",
        "var/admin-password.txt",
        "var/static/admin/css/base.css",
        ".venv/bin/python",
        ".git/HEAD",
        "automation/__pycache__/models.cpython-311.pyc",
        "test-results/junit.xml",
        ".pytest_cache/README.md",
        "db.sqlite3",
    ],
)
def test_the_build_context_leaves_out_secrets_local_data_and_caches(path):
    assert excluded(path), f"{path} would be copied into the image"


@pytest.mark.parametrize(
    "path",
    [
        "manage.py",
        "requirements.txt",
        "gunicorn.conf.py",
        "automation/models/__init__.py",
        "elbkerzen/settings.py",
        "templates/automation/dashboard.html",
        ".env.example",
    ],
)
def test_the_build_context_keeps_what_the_image_runs(path):
    assert not excluded(path), f"{path} is missing from the image"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def dockerfile_line(keyword: str) -> str:
    """One instruction of the Dockerfile, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line for line in text.splitlines() if line.startswith(f"{keyword} ")]
    assert len(lines) == 1, lines
    return lines[0]


def test_only_the_proxy_is_published_gunicorn_is_not(compose):
    services = compose["services"]
    published = {name for name, service in services.items() if service.get("ports")}
    assert published == {"proxy"}
    assert services["web"].get("expose") == ["8000"]
    assert services["webhooks"].get("expose") == ["8000"]


def test_the_proxy_runs_the_committed_template_with_every_variable_set(compose):
    proxy = compose["services"]["proxy"]
    assert proxy["image"].startswith("nginx:")
    template = NGINX_TEMPLATE.relative_to(ROOT)
    assert f"./{template}:/etc/nginx/templates/default.conf.template:ro" in proxy["volumes"]
    used = set(re.findall(r"\$\{(\w+)\}", NGINX_TEMPLATE.read_text()))
    assert used == set(proxy["environment"])
    rendered = render_template(NGINX_TEMPLATE.read_text(), proxy["environment"])
    assert "${" not in rendered
    assert "server web:8000;" in rendered
    assert "server webhooks:8000;" in rendered
    assert "listen 80 default_server;" in rendered
    for variable, service in (
        ("ELBKERZEN_UPSTREAM", "web"),
        ("ELBKERZEN_WEBHOOKS_UPSTREAM", "webhooks"),
    ):
        host, port = proxy["environment"][variable].split(":")
        assert host == service and port in compose["services"][service]["expose"]
        assert service in proxy["depends_on"]
    assert proxy["ports"] == [f"80:{proxy['environment']['ELBKERZEN_LISTEN']}"]


def nginx_directives(text: str) -> str:
    """The config without its comments."""
    return re.sub(r"#[^\n]*", "", text)


def nginx_locations(text: str) -> dict[str, str]:
    """`location` (with its modifier) → the upstream its proxy_pass names."""
    text = nginx_directives(text)
    return {
        match.group(1).strip(): match.group(2)
        for match in re.finditer(r"location\s+([^{]+?)\s*\{\s*proxy_pass http://(\w+);", text)
    }


def test_webhooks_and_probes_go_to_their_own_pool_everything_else_to_the_admins():
    locations = nginx_locations(NGINX_TEMPLATE.read_text())
    webhook_pool = {
        location.removeprefix("= ")
        for location, upstream in locations.items()
        if upstream == "elbkerzen_webhooks"
    }
    assert webhook_pool == set(WEBHOOK_POOL_PATHS)
    assert locations["= /healthz"] == locations["= /metrics"] == "elbkerzen_webhooks"  # exact
    assert locations["/"] == "elbkerzen_web"
    assert set(locations.values()) == {"elbkerzen_web", "elbkerzen_webhooks"}


def test_the_webhook_pool_paths_are_the_services_own_urls():
    """Every path routed to the webhook pool is one Django serves (or the mail webhooks')."""
    from django.urls import Resolver404, resolve

    for path in ("/webhooks/shopify/", "/webhooks/stripe/", "/unsubscribe/x/", "/healthz"):
        resolve(path)
    resolve("/metrics")
    with pytest.raises(Resolver404):
        resolve("/webhooks/admin/")


def test_every_location_passes_the_forwarded_headers():
    """proxy_set_header is inherited only by locations that set none of their own."""
    text = nginx_directives(NGINX_TEMPLATE.read_text())
    blocks = re.findall(r"location[^{]+\{([^}]*)\}", text)
    assert len(blocks) == len(WEBHOOK_POOL_PATHS) + 1
    for block in blocks:
        assert "proxy_set_header" not in block, block


def test_web_counts_the_address_the_proxy_saw(compose):
    """One proxy in front: throttling reads the caller from the X-Forwarded-For it sets."""
    assert compose["services"]["web"]["environment"]["TRUSTED_PROXY_COUNT"] == "1"
    assert compose["services"]["webhooks"]["environment"]["TRUSTED_PROXY_COUNT"] == "1"
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in NGINX_TEMPLATE.read_text()


def test_the_proxy_takes_every_body_the_intake_takes():
    size = re.search(r"client_max_body_size (\d+)m;", NGINX_TEMPLATE.read_text())
    assert size, "client_max_body_size must be set (nginx's default is 1 MiB)"
    assert int(size.group(1)) * 1024 * 1024 > settings.WEBHOOK_MAX_BODY_BYTES


def test_the_proxy_buffers_requests_and_sets_the_forwarded_headers():
    text = NGINX_TEMPLATE.read_text()
    for directive in (
        "proxy_request_buffering on;",
        "proxy_buffering on;",
        "proxy_set_header X-Forwarded-Proto $scheme;",
        "proxy_set_header X-Forwarded-For $remote_addr;",
        "proxy_set_header Host $host;",
    ):
        assert directive in text


def test_web_worker_and_cron_start_after_the_migration_has_finished(compose):
    services = compose["services"]
    assert services["migrate"]["command"] == "python manage.py migrate --noinput"
    for name in APP_SERVICES:
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }, name
        assert "migrate" not in str(services[name].get("command", "")), name


def test_web_runs_the_images_gunicorn_command_with_its_timeout(compose):
    cmd = json.loads(dockerfile_line("CMD").removeprefix("CMD "))
    assert cmd[0] == "gunicorn" and "--timeout" in cmd
    for pool in ("web", "webhooks"):  # the image's CMD, timeout included
        assert "command" not in compose["services"][pool], pool


def test_web_worker_and_cron_share_one_prometheus_directory(compose):
    env = dockerfile_line("ENV")
    directory = re.search(r"PROMETHEUS_MULTIPROC_DIR=(\S+)", env).group(1)
    mounts = {name: compose["services"][name].get("volumes", []) for name in APP_SERVICES}
    volumes = {
        name: {m.split(":")[0] for m in mine if m.split(":")[1] == directory}
        for name, mine in mounts.items()
    }
    assert all(len(found) == 1 for found in volumes.values()), volumes
    shared = {found.pop() for found in volumes.values()}
    assert len(shared) == 1 and next(iter(shared)) in compose["volumes"], shared


# Two containers' processes with the same pid (each container has its own pid namespace; the
# worker's main process is pid 1 in its container, as is cron's), both writing to the shared
# directory at once. os.getpid is replaced to stand in for the pid namespace; HOST for the
# container's hostname.
SAME_PID_IN_TWO_CONTAINERS = """
import os, sys
os.getpid = lambda: 1
from automation.platform import metrics_process
metrics_process.HOST = sys.argv[1]
from automation.platform import metrics
child = metrics.JOB_SECONDS.labels("probe")
print("ready", flush=True)
sys.stdin.readline()
child.observe(0.1)
print("done", flush=True)
"""


def test_histograms_of_two_containers_with_the_same_pid_both_reach_metrics(tmp_path):
    from prometheus_client.multiprocess import MultiProcessCollector

    env = os.environ | {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", SAME_PID_IN_TWO_CONTAINERS, host],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for host in ("worker-container", "cron-container")
    ]
    try:
        for child in children:  # both have opened their files before either observes
            assert child.stdout.readline().strip() == "ready"
        for child in children:
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            assert child.stdout.readline().strip() == "done"
            child.wait(30)
    finally:
        for child in children:
            child.kill()
            child.wait()

    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["histogram_cron-container-1.db", "histogram_worker-container-1.db"]
    merged = MultiProcessCollector.merge([str(p) for p in tmp_path.iterdir()])
    counts = [
        s.value
        for metric in merged
        for s in metric.samples
        if s.name == "elbkerzen_job_seconds_count" and dict(s.labels).get("job") == "probe"
    ]
    assert counts == [2.0]


def test_gunicorn_forgets_a_dead_workers_live_gauges_by_host_and_pid(tmp_path, monkeypatch):
    import runpy
    from types import SimpleNamespace

    from automation.platform.metrics_process import process_identifier

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    dead = tmp_path / f"gauge_livesum_{process_identifier(4242)}.db"
    alive = tmp_path / f"gauge_livesum_{process_identifier(4243)}.db"
    dead.touch()
    alive.touch()
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))

    config["child_exit"](None, SimpleNamespace(pid=4242))

    assert not dead.exists()
    assert alive.exists()
