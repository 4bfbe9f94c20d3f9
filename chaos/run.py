"""One chaos run from start to verdict: generate, bring up, drive, drain, reconcile, compare."""

from __future__ import annotations

import time

from chaos import burst, observe, report
from chaos.driver import Driver
from chaos.generator import generate
from chaos.harness import Harness
from chaos.params import Params
from chaos.truth import derive


def run(params: Params) -> int:
    """Run the day; print the table; 0 when everything matches the truth, 1 otherwise."""
    wall = time.monotonic()
    scenario = generate(params)
    phases: dict[str, float] = {}
    with Harness(params, scenario) as harness:
        # After the harness has set Django up: the decision's reason is written in the shop's
        # language (Django's translation and number formats), the arm is pure.
        truth = derive(scenario)
        phases["setup"] = time.monotonic() - wall
        t0 = time.time() + 1.0
        harness.create_promotion(t0)
        harness.start_faults(t0)
        mark = time.monotonic()
        driver = Driver(
            scenario,
            harness.base_url,
            t0,
            evaluated=observe.evaluated,
            take_order=lambda order: harness.take_order(order, t0),
        )
        driver.run()
        harness.join_faults()
        phases["stream"] = time.monotonic() - mark

        redis = harness.redis()
        mark = time.monotonic()
        idle, waited, state = observe.wait_until_idle(redis, params.settle_timeout)
        drained = [("before reconciling", idle, waited, str(state))]
        before = harness.ads.real_statuses()
        phases["drain"] = time.monotonic() - mark

        mark = time.monotonic()
        harness.serve_true_stock(truth.final_levels, t0)
        reconcile_rc = harness.reconcile()
        idle, waited, state = observe.wait_until_idle(redis, params.settle_timeout)
        drained.append(("after reconciling", idle, waited, str(state)))
        phases["reconcile"] = time.monotonic() - mark

        assert harness.supervisor is not None
        facts = report.Facts(
            records=driver.records,
            before=before,
            snapshot=observe.snapshot(redis),
            mails=harness.mail.snapshot(),
            ads_final=dict(harness.ads.final),
            ads_statuses=harness.ads.real_statuses(),
            ads_calls=harness.ads.applied_calls,
            ads_changes=harness.ads.changes,
            ads_injected=harness.ads.injected.copy(),
            kill=harness.kill,
            outage=harness.outage,
            restarts=harness.supervisor.restarts.copy(),
            reconcile_rc=reconcile_rc,
            drained=drained,
            t0=t0,
        )
        mark = time.monotonic()
        burst_facts = burst.run(harness, scenario, redis, t0, params.settle_timeout)
        phases["mass sell-out"] = time.monotonic() - mark
        result = report.build(scenario, truth, facts, burst_facts)
        harness.failed = bool(result.failures)
    result.header = report.header(scenario, time.monotonic() - wall, phases)
    print(result.render(), flush=True)
    return result.exit_code
