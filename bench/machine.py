"""What the numbers were measured on, and how busy the machine was around them.

Why: these machines are shared and noisy; a table without the CPU, the versions and the
background load it ran next to cannot be compared with the next one.
"""

import os
import platform
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path


def cpu_busy(seconds: float = 1.0) -> float:
    """Fraction of all CPUs busy over `seconds` (from /proc/stat), whoever is using them."""

    def sample() -> tuple[int, int]:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields), idle

    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    spent = total1 - total0
    return 1.0 - (idle1 - idle0) / spent if spent else 0.0


def wait_for_quiet(limit: float, threshold: float = 0.35) -> float:
    """Wait up to `limit` seconds for other work to calm down; returns the last busy share."""
    deadline = time.monotonic() + limit
    busy = cpu_busy()
    while busy > threshold and time.monotonic() < deadline:
        print(f"machine {busy:.0%} busy with other work; waiting (up to {limit:.0f} s)", flush=True)
        time.sleep(4)
        busy = cpu_busy()
    return busy


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _command_version(argv: list[str], pattern: str) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except OSError:
        return "not installed"
    found = re.search(pattern, out.stdout + out.stderr)
    return found.group(1) if found else "unknown"


def describe() -> dict[str, str]:
    """CPU, memory, OS and every version that shapes the numbers."""
    from django.db import connection

    from bench.env import redis

    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        postgres = cursor.fetchone()[0]
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return {
        "CPU": f"{os.cpu_count()} × {model} (nproc {os.cpu_count()})",
        "memory": f"{mem_kb / 1024 / 1024:.1f} GiB",
        "OS": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "Python": platform.python_version(),
        "Django": _version("django"),
        "gunicorn": _version("gunicorn"),
        "rq / django-rq": f"{_version('rq')} / {_version('django-rq')}",
        "redis-py / psycopg": f"{_version('redis')} / {_version('psycopg')}",
        "PostgreSQL": postgres,
        "Redis": str(redis().info("server").get("redis_version", "unknown")),
        "wrk": _command_version(["wrk", "--version"], r"wrk (\S+)"),
        "py-spy": _command_version(
            [str(Path(sys.executable).with_name("py-spy")), "--version"], r"py-spy (\S+)"
        ),
        "load average at start": load,
    }
