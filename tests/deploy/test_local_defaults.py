"""`manage.py` runs in the `make run` setup without extra variables.

The local defaults live in one committed file, .env.local: settings reads it whenever no
SECRET_KEY is set (a deployment always sets one), and the Makefile's run target sets nothing
of its own. So a command typed by hand sees what the running service sees.
"""

import os
import subprocess
import sys
from pathlib import Path

from automation.intake.sources import shopify

ROOT = Path(__file__).resolve().parents[2]
LOCAL_DEFAULTS = ROOT / ".env.local"
# The local defaults `make run` relies on; only .env.local holds them.
LOCAL_VARIABLES = ("DEBUG", "SHOPIFY_WEBHOOK_SECRETS", "STRIPE_WEBHOOK_SECRETS")


def bare_environment() -> dict[str, str]:
    """The shell of a merchant who typed `make run`: none of the service's variables set."""
    settings_variables = {
        *LOCAL_VARIABLES,
        "SECRET_KEY",
        "PROMETHEUS_MULTIPROC_DIR",
        "DATABASE_URL",
        "REDIS_URL",
        "LANGUAGE_CODE",
        "DJANGO_SETTINGS_MODULE",
    }
    return {key: value for key, value in os.environ.items() if key not in settings_variables}


def manage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=bare_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_local_defaults_are_one_committed_file():
    lines = dict(
        line.split("=", 1)
        for line in LOCAL_DEFAULTS.read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert lines["DEBUG"] == "1"
    assert lines["SHOPIFY_WEBHOOK_SECRETS"] == "demo_secret"
    assert lines["STRIPE_WEBHOOK_SECRETS"] == "whsec_demo"
    assert "PROMETHEUS_MULTIPROC_DIR" in lines
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", ".env.local"], cwd=ROOT, capture_output=True
    )
    assert tracked.returncode == 0, ".env.local must be committed"


def test_the_makefile_keeps_no_second_copy_of_the_defaults():
    makefile = (ROOT / "Makefile").read_text()
    for variable in LOCAL_VARIABLES:
        assert f"export {variable}" not in makefile
    assert "demo_secret" not in makefile and "whsec_demo" not in makefile


def test_send_test_webhook_help_runs_without_extra_variables():
    result = manage("send_test_webhook", "--help")
    assert result.returncode == 0, result.stderr
    assert "checkout.session.expired" in result.stdout


def test_send_test_webhook_signs_with_the_local_secret_without_extra_variables(httpserver):
    # Given an intake stand-in that records what it receives
    httpserver.expect_request("/webhooks/shopify/", method="POST").respond_with_data("ok")
    # When the merchant sends a sample by hand, naming no secret
    result = manage(
        "send_test_webhook",
        "inventory_levels/update",
        "--url",
        httpserver.url_for("/webhooks/shopify/"),
    )
    # Then it was signed with the demo secret `make run`'s intake checks
    assert result.returncode == 0, result.stderr
    ((request, _),) = httpserver.log
    assert request.headers["X-Shopify-Hmac-Sha256"] == shopify.sign(
        request.get_data(), "demo_secret"
    )


def test_a_command_sees_the_settings_the_running_service_sees():
    # Settings as a command sees them: DEBUG on, the demo secrets, a shared metrics directory
    script = (
        "from django.conf import settings; import os; "
        "print(settings.DEBUG, settings.SHOPIFY_WEBHOOK_SECRETS, settings.STRIPE_WEBHOOK_SECRETS,"
        " os.environ['PROMETHEUS_MULTIPROC_DIR'])"
    )
    result = manage("shell", "-v", "0", "-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "True",
        "['demo_secret']",
        "['whsec_demo']",
        str(ROOT / "var" / "prometheus"),
    ]


def test_a_deployment_with_its_own_secret_key_never_reads_the_local_defaults():
    environment = bare_environment() | {"SECRET_KEY": "production-key"}
    script = (
        "from django.conf import settings; print(settings.DEBUG, settings.SHOPIFY_WEBHOOK_SECRETS)"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", script],
        cwd=ROOT,
        env=environment | {"DEBUG": "1"},  # DEBUG only so settings need no mail server here
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "[]"]


def test_the_image_leaves_the_local_defaults_out():
    from tests.deploy.test_deploy_files import excluded

    assert excluded(".env.local"), "the Docker build context would copy .env.local"
