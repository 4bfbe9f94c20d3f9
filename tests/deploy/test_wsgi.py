"""The WSGI module a gunicorn worker imports."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_worker_has_the_urlconf_and_views_loaded_before_its_first_request():
    code = (
        "import sys, elbkerzen.wsgi; "
        "print(all(m in sys.modules for m in ('elbkerzen.urls', 'automation.intake.views')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
