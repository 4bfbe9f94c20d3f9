"""Bring the whole system up for one run, inject the process-level faults, and tear it all down.

Up: an SMTP sink, the Google Ads and Shopify Admin stand-ins (threads of this process), a fresh
PostgreSQL database, a private Redis, then gunicorn, the RQ workers and rqcron as production
runs them. Faults: Redis stopped and started again mid-run, one worker SIGKILLed in the middle
of a job. Down: everything this run started, also when it fails or is interrupted.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import requests
from redis import Redis

from chaos import burst, observe, payloads, shop
from chaos.generator import OrderPlaced, Scenario, WatchedAdGroup
from chaos.params import Params
from chaos.processes import ROOT, ChaosDatabase, PrivateRedis, Supervisor
from chaos.standins import (
    SHOPIFY_TOKEN,
    STRIPE_API_KEY,
    ChaosAds,
    MailSink,
    free_port,
    shopify_admin,
    stripe_api,
)

logger = logging.getLogger(__name__)

# RQ kills a delivery job after this; its Ads calls stop ADS_JOB_MARGIN earlier and leave the rest
# to the job's RQ retry (DELIVERY_RETRY_INTERVALS below), so RQ never kills one mid-retry.
DELIVERY_JOB_TIMEOUT = 6
ADS_JOB_MARGIN = 1
SWEEP_AFTER = 5


@dataclass
class KillRecord:
    """The worker killed mid-job and the job it was running."""

    at: float = 0.0
    pid: int | None = None
    job_id: str = ""
    delivery_id: int | None = None
    note: str = ""


@dataclass
class OutageRecord:
    """When the private Redis was really down."""

    down_at: float = 0.0
    up_at: float = 0.0


class Harness:
    """Owns every process, server and database of a run; `with Harness(...)` cleans up."""

    def __init__(self, params: Params, scenario: Scenario) -> None:
        self.params = params
        self.scenario = scenario
        self.run_dir = Path(tempfile.mkdtemp(prefix="chaos-run-"))
        self.database = ChaosDatabase(f"elbkerzen_chaos_{os.getpid()}")
        self.redis_server = PrivateRedis(free_port(), self.run_dir / "redis")
        self.mail = MailSink()
        self.ads = ChaosAds(params.transient_rate, params.long_rate_limit_rate, params.seed)
        self.web_port = free_port()
        self.supervisor: Supervisor | None = None
        self.kill = KillRecord()
        self.outage = OutageRecord()
        self.reconcile_output = ""
        self.failed = False
        self._stack = contextlib.ExitStack()
        self._threads: list[threading.Thread] = []
        self._cert = ""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def redis(self) -> Redis:
        return Redis(port=self.redis_server.port, socket_timeout=2, socket_connect_timeout=1)

    # --- up and down ------------------------------------------------------------------------

    def __enter__(self) -> Harness:
        atexit.register(self.close)
        try:
            self._start()
        except BaseException:
            self.failed = True
            self.close()
            raise
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self.failed = self.failed or kind is not None
        self.close()

    def _start(self) -> None:
        self.mail.start()
        self._stack.callback(self.mail.stop)
        self._stack.enter_context(self.ads)
        self._cert = os.environ.get("GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "")
        self._seed_google_ads()
        self.shopify = self._stack.enter_context(shopify_admin())
        self.stripe, self.stripe_url = self._stack.enter_context(stripe_api())
        self.database.create()
        self.redis_server.start()
        env = self._environment()
        observe.setup_django(env)
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        self._seed_shop()
        self.supervisor = Supervisor({**os.environ, **env}, self.run_dir)
        python = sys.executable
        self.supervisor.start(
            "gunicorn",
            [
                python,
                "-m",
                "gunicorn",
                "elbkerzen.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.web_port}",
                "--workers",
                "2",
                "--threads",
                "4",
                "--timeout",
                "30",
                "--graceful-timeout",
                "3",
                "--no-control-socket",  # gunicorn's default socket in $HOME is shared by all
            ],
        )
        verbosity = "1" if self.params.verbose else "0"
        for n in range(1, self.params.workers + 1):
            self.supervisor.start(
                f"worker{n}",
                [
                    python,
                    "-m",
                    "chaos.worker",
                    "rqworker",
                    "default",
                    "--with-scheduler",
                    "--worker-class",
                    "chaos.worker.ChaosWorker",
                    "--worker-ttl",  # an idle worker wakes (and runs maintenance) this often
                    str(max(self.params.maintenance_interval, 5) + 15),
                    "-v",
                    verbosity,
                ],
            )
        self.supervisor.start(
            "rqcron",
            [python, "manage.py", "rqcron", "automation.cron", "--logging-level", "WARNING"],
        )
        self._wait_ready()

    def _environment(self) -> dict[str, str]:
        """The production settings, pointed at the run's own servers, timers compressed."""
        return {
            "DEBUG": "0",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or "chaos-only-not-secret",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECURE_SSL_REDIRECT": "false",
            "DATABASE_URL": self.database.url,
            "REDIS_URL": self.redis_server.url,
            "TIME_ZONE": shop.TIME_ZONE,
            "SHOPIFY_WEBHOOK_SECRETS": shop.SHOPIFY_SECRET,
            "SHOPIFY_SHOP_DOMAINS": shop.SHOP_DOMAIN,
            # the recovery links of chaos/payloads.py: storefront and Stripe custom domain
            "SHOP_STOREFRONT_DOMAINS": "elbkerzen.example,pay.elbkerzen.example",
            "STRIPE_WEBHOOK_SECRETS": shop.STRIPE_SECRET,
            "ALERT_EMAILS": shop.ALERT_EMAIL,
            "EMAIL_URL": f"smtp://127.0.0.1:{self.mail.port}",
            "PUBLIC_BASE_URL": shop.PUBLIC_BASE_URL,
            "ADS_BACKEND": "google",
            "GOOGLE_ADS_CUSTOMER_ID": shop.CUSTOMER_ID,
            "ADS_CALL_TIMEOUT": "2",
            "ADS_BACKOFF_BASE": "0.05",
            "ADS_BACKOFF_CAP": "0.2",
            "DELIVERY_JOB_TIMEOUT": str(DELIVERY_JOB_TIMEOUT),
            "ADS_JOB_MARGIN": str(ADS_JOB_MARGIN),
            "DELIVERY_RETRY_INTERVALS": "1,1,2,2,3",
            "REMINDER_RETRY_INTERVALS": "1,2,3",
            "DELIVERY_SWEEP_AFTER": str(SWEEP_AFTER),
            "SHOPIFY_ADMIN_URL": self.shopify.base_url,
            "SHOPIFY_ADMIN_TOKEN": SHOPIFY_TOKEN,
            "STRIPE_API_URL": self.stripe_url,
            "STRIPE_API_KEY": STRIPE_API_KEY,
            "LOG_LEVEL": "INFO" if self.params.verbose else "WARNING",
            "CHAOS_ADS_ENDPOINT": self.ads.endpoint,
            "CHAOS_RQ_MAINTENANCE_INTERVAL": str(self.params.maintenance_interval),
            "PYTHONUNBUFFERED": "1",
        }

    def _seed_google_ads(self) -> None:
        """The account as the day finds it: every ad group running, the deleted one removed.

        Google Ads answers a status read for each ad group it has: one it does not answer
        for is unknown to the account, and the nightly run (which rqcron starts at boot)
        would mark it missing.
        """
        for group in self.scenario.watched:
            if not group.broken:
                self.ads.statuses[group.ad_group_id] = shop.INITIAL_AD_GROUP_STATUS
        self.ads.statuses[shop.PROMOTION_AD_GROUP_ID] = shop.INITIAL_AD_GROUP_STATUS
        self.ads.remove_ad_group(shop.BROKEN_AD_GROUP_ID)

    def _seed_shop(self) -> None:
        """The merchant's setup: reminder settings, margin rules, watched products."""
        from automation.models import MarginRule, ReminderSettings
        from tests.support.watching import ad_group, watch

        ReminderSettings.objects.update_or_create(
            pk=1,
            defaults={
                "reminder_delay_minutes": shop.REMINDER_DELAY_SECONDS // 60,
                "discount_code": shop.DISCOUNT_CODE,
                "p0": shop.PROBABILITIES.p0,
                "p_plain": shop.PROBABILITIES.p_plain,
                "p_discount": shop.PROBABILITIES.p_discount,
                "discount_rate": shop.PROBABILITIES.discount_rate,
                "default_margin_rate": shop.DEFAULT_MARGIN_RATE,
                "holdout_share": shop.HOLDOUT_SHARE,
                "holdout_salt": shop.HOLDOUT_SALT,
                "mail_imprint": shop.IMPRINT,
            },
        )
        for rule in shop.MARGIN_RULES:
            MarginRule.objects.create(
                rate=rule.rate,
                variant_id=rule.variant_id,
                product_id=rule.product_id,
                sku=rule.sku,
                vendor=rule.vendor,
            )
        # The day is compressed into minutes: the brake's 10-minute window would count all of
        # its sell-outs as one burst. It is off for the day; the burst (chaos/burst.py) turns it on.
        burst.configure_brake(False)
        # One watched product per item and pause level, counting the item's variant, with
        # the ad groups of that level (the deleted one shares its product with a live one).
        products: dict[tuple[int, int], list[WatchedAdGroup]] = {}
        for group in self.scenario.watched:
            ad_group(group.ad_group_id, shop.CUSTOMER_ID, name=group.label)
            products.setdefault((group.item, group.pause_at), []).append(group)
        for (item, pause_at), groups in products.items():
            watch(
                item,
                [group.ad_group_id for group in groups],
                label=groups[0].label,
                customer_id=shop.CUSTOMER_ID,
                pause_at=pause_at,
            )

    def _wait_ready(self, timeout: float = 60.0) -> None:
        """gunicorn answers and every worker has registered with Redis."""
        from rq import Worker

        deadline = time.monotonic() + timeout
        redis = self.redis()
        while time.monotonic() < deadline:
            with contextlib.suppress(requests.RequestException, ValueError):
                answer = requests.get(f"{self.base_url}/healthz", timeout=2).json()
                workers = len(Worker.all(connection=redis))
                if answer.get("database") == "ok" and workers >= self.params.workers:
                    return
            time.sleep(0.3)
        raise RuntimeError(
            f"the system did not come up within {timeout:.0f} s; logs in {self.run_dir}"
        )

    def close(self) -> None:
        """Stop everything this run started; keep the logs if failed or asked, the DB if asked."""
        atexit.unregister(self.close)
        for thread in self._threads:
            thread.join(timeout=1)
        self.ads.release()
        if self.supervisor is not None:
            self.supervisor.stop_all()
            self.supervisor = None
        self.redis_server.stop()
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        self._stack.close()
        if not self.params.keep:
            with contextlib.suppress(Exception):
                self.database.drop()
        if self._cert and self._cert.startswith(tempfile.gettempdir()):
            with contextlib.suppress(OSError):
                os.unlink(self._cert)
            self._cert = ""
        if self.failed or self.params.keep:
            print(f"logs kept in {self.run_dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    # --- the day's fixtures -----------------------------------------------------------------

    def create_promotion(self, t0: float) -> None:
        """A promotion running since an hour ago that ends at a local wall-clock second soon.

        It stands in for "ends at local midnight": the merchant types a Hamburg date and time,
        the product converts it and schedules the end.
        """
        from django.db import transaction

        from automation.models import Promotion, PromotionAdGroup
        from automation.promotions import edges as promotions

        end = payloads.instant(math.ceil(t0 + self.scenario.promotion_end), 0)
        start = (payloads.instant(t0, 0) - timedelta(hours=1)).replace(second=0, microsecond=0)
        with observe.db(), transaction.atomic():
            promotion = Promotion.objects.create(
                name="Adventsaktion (endet um Mitternacht)",
                time_zone=shop.TIME_ZONE,
                start_date=start.date(),
                start_time=start.time(),
                end_date=end.date(),
                end_time=end.time().replace(microsecond=0),
            )
            PromotionAdGroup.objects.create(
                promotion=promotion,
                customer_id=shop.CUSTOMER_ID,
                ad_group_id=shop.PROMOTION_AD_GROUP_ID,
            )
            promotions.save_and_schedule(promotion)

    def serve_true_stock(
        self, final_levels: dict[tuple[int, int], tuple[int, float]], t0: float
    ) -> None:
        """From now on Shopify's Admin API reports the day's true closing stock."""
        rows: dict[int, list] = {}
        for (item, location), (available, at) in sorted(final_levels.items()):
            rows.setdefault(item, []).append((location, available, payloads.iso(t0, at)))
        for item, levels in rows.items():
            self.shopify.add_item(item, *levels)

    def take_order(self, order: OrderPlaced, t0: float) -> None:
        """The buyer pays: from now on Shopify's Admin API has the order (its webhook may come
        later or never). It carries the checkout's token; the day gives each address one
        checkout, so the address adds nothing."""
        self.shopify.add_order(
            int(order.token[:12], 16),
            checkout_token=order.token,
            created_at=payloads.iso(t0, order.at),
        )

    def reconcile(self) -> int:
        """`manage.py reconcile` (with the stand-in Ads client), as an operator would run it."""
        assert self.supervisor is not None
        result = subprocess.run(
            [sys.executable, "-m", "chaos.worker", "reconcile"],
            cwd=ROOT,
            env=self.supervisor.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        self.reconcile_output = (result.stdout + result.stderr).strip()
        (self.run_dir / "reconcile.log").write_text(self.reconcile_output)
        return result.returncode

    # --- faults -----------------------------------------------------------------------------

    def start_faults(self, t0: float) -> None:
        """Schedule the Redis restart and the worker kill at their planned offsets."""
        if self.scenario.outage is not None:
            self._at(t0 + self.scenario.outage[0], self._restart_redis, t0)
        if self.scenario.kill_at is not None:
            self._at(t0 + self.scenario.kill_at, self._kill_worker, t0)

    def join_faults(self) -> None:
        for thread in self._threads:
            thread.join()

    def _at(self, when: float, action: object, t0: float) -> None:
        def run() -> None:
            time.sleep(max(0.0, when - time.time()))
            try:
                action(t0)  # type: ignore[operator]
            except Exception:
                logger.exception("fault %s failed", getattr(action, "__name__", action))

        thread = threading.Thread(target=run, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _restart_redis(self, t0: float) -> None:
        assert self.scenario.outage is not None
        self.redis_server.stop()
        self.outage.down_at = time.time() - t0
        time.sleep(max(0.0, t0 + self.scenario.outage[1] - time.time()))
        self.redis_server.start()
        self.outage.up_at = time.time() - t0

    def _kill_worker(self, t0: float) -> None:
        """Hold the next watched ad group's Ads call, then SIGKILL the worker making it."""
        assert self.supervisor is not None
        groups = {g.ad_group_id: g.item for g in self.scenario.watched if not g.broken}
        self.ads.hold_next(set(groups))
        held = self.ads.wait_held(timeout=20)
        if held is None:
            self.kill.note = "no Google Ads call to interrupt came within 20 s"
            return
        item = groups[held[0]]
        try:
            pid, job_id = self._worker_on(item)
            if pid is None:
                self.kill.note = f"no worker found running a delivery of item {item}"
                return
            os.kill(pid, signal.SIGKILL)
            self.kill = KillRecord(time.time() - t0, pid, job_id, int(job_id.split("-")[1]))
            self.kill.note = f"inside the Google Ads call for ad group {held[0]}"
        finally:
            self.ads.release()

    def _worker_on(self, item: int, timeout: float = 5.0) -> tuple[int | None, str]:
        """The oldest running delivery job of `item` among our workers, and its worker's pid."""
        assert self.supervisor is not None
        from rq.job import Job

        redis = self.redis()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            candidates = []
            for pid, job_id in observe.current_jobs(redis).items():
                name = self.supervisor.names_of_pid(pid) or ""
                if not name.startswith("worker") or not job_id.startswith("delivery-"):
                    continue
                if observe.delivery_item(int(job_id.split("-")[1])) == item:
                    started = Job.fetch(job_id, connection=redis).started_at
                    candidates.append((started, pid, job_id))
            if candidates:
                _, pid, job_id = min(candidates)
                return pid, job_id
            time.sleep(0.1)
        return None, ""

    def summary_of_logs(self) -> str:
        """The last lines of every child's log, for a failed run."""
        lines = []
        for log in sorted(self.run_dir.glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-5:]
            lines.append(f"== {log.name}\n" + "\n".join(tail))
        return "\n".join(lines)
