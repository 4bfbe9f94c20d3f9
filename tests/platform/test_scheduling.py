"""One scheduling module: every enqueue by dotted path, one job id per piece of work, one retry
table per capability; and the import contract that keeps dependencies pointing one way."""

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from automation.models import CheckoutState, Promotion
from automation.platform import scheduling

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_delivery_job_names_its_entry_point_by_path_with_the_delivery_retry_table(
    queue, settings
):
    settings.DELIVERY_RETRY_INTERVALS = [5, 6]
    assert scheduling.enqueue_delivery(4242, attempts_made=1)
    job = queue.fetch_job(scheduling.job_id_for(4242))
    assert job.func_name == scheduling.PROCESS_DELIVERY == "automation.jobs.process_delivery"
    assert job.retries_left == 1  # the one retry left after one attempt
    assert job.retry_intervals == [6]


def test_a_reminder_evaluation_is_one_job_per_checkout_version_on_its_own_retry_table(
    queue, settings
):
    settings.REMINDER_RETRY_INTERVALS = [7, 8, 9]
    checkout = CheckoutState.objects.create(
        source=CheckoutState.Source.SHOPIFY, token="t-1", updated_at=timezone.now()
    )
    at = timezone.now() + timedelta(hours=1)
    assert scheduling.schedule_evaluation(checkout, at=at) == at
    assert scheduling.schedule_evaluation(checkout, at=at) == at  # replaces, does not add
    assert queue.scheduled_job_registry.get_job_ids() == [scheduling.evaluation_job_id(checkout)]
    job = queue.fetch_job(scheduling.evaluation_job_id(checkout))
    assert job.func_name == "automation.jobs.evaluate_checkout"
    assert job.args == (checkout.pk, checkout.updated_at.isoformat())
    assert job.retry_intervals == [7, 8, 9]


def test_promotion_edges_retry_on_their_own_setting_not_the_deliveries(queue, settings):
    settings.DELIVERY_RETRY_INTERVALS = [1]
    settings.PROMOTION_RETRY_INTERVALS = [30, 90]
    promotion = Promotion.objects.create(
        name="Adventsaktion",
        start_at=timezone.now() + timedelta(hours=1),
        end_at=timezone.now() + timedelta(hours=2),
    )
    scheduling.schedule_promotion(promotion)
    for edge in ("start", "end"):
        job = queue.fetch_job(scheduling.promotion_job_id(promotion.pk, edge))
        assert job.func_name == "automation.jobs.run_promotion_edge"
        assert job.retries_left == 2
        assert job.retry_intervals == [30, 90]
    scheduling.cancel_promotion(promotion.pk)
    assert queue.scheduled_job_registry.get_job_ids() == []


def test_unset_the_promotion_retry_table_is_the_deliveries_as_before():
    from elbkerzen import settings as project  # the environment's values, not a test override

    assert project.PROMOTION_RETRY_INTERVALS == project.DELIVERY_RETRY_INTERVALS


def test_the_import_contract_holds():
    """Views and admin → inbox → handlers → the handler contract and scheduling → rules and
    effects → adapters; the inbox, the contract and scheduling import no capability."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    found = subprocess.run(  # noqa: S603 (our own venv's tool, no input)
        [str(lint_imports), "--no-cache"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 0, found.stdout + found.stderr
    assert "0 broken" in found.stdout
