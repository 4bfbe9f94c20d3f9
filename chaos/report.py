"""Compare what the system did with the truth: one table, and the exit code it implies.

Every number is counted from records: the driver's log of requests and answers, the rows in
the chaos database, the messages the SMTP sink received and the calls the Ads stand-in served.
A row with an expectation fails the run when the measurement differs from it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext

from chaos import payloads, shop
from chaos.burst import BurstFacts
from chaos.driver import Record
from chaos.generator import LevelChange, OrderPlaced, Scenario
from chaos.observe import Snapshot
from chaos.standins import Mail
from chaos.truth import MISSING, Truth

UNFINISHED = {"received", "processing", "failed"}


def _future_reason(stamp: str) -> str:
    """The reason a level stamped `stamp` is refused (automation.intake.sources.fields), in the
    language the workers write it in."""
    from automation.intake.sources import parse_timestamp

    instant = parse_timestamp(stamp)
    shown = instant.isoformat() if instant is not None else stamp
    with translation.override(settings.LANGUAGE_CODE):
        return gettext("%(name)s %(value)s lies more than %(seconds)d seconds in the future") % {
            "name": "updated_at",
            "value": shown[:64],
            "seconds": settings.WEBHOOK_MAX_FUTURE_SECONDS,
        }


def _missing_alert(label: str) -> str:
    """alerts.ad_group_missing's subject, in the language alerts are written in."""
    from automation.models import AdGroup  # after chaos.observe has set Django up

    with translation.override(settings.LANGUAGE_CODE):
        return gettext("[Elbkerzen] Ad group %(name)s: %(state)s") % {
            "name": label,
            "state": AdGroup.Missing.REMOVED.label,
        }


@dataclass(frozen=True)
class Row:
    """One line of the table; `expected` None means informational."""

    label: str
    measured: Any
    expected: Any = None

    @property
    def ok(self) -> bool | None:
        return None if self.expected is None else self.measured == self.expected


@dataclass
class Report:
    """Sections of rows plus the details behind every failing row."""

    header: list[str] = field(default_factory=list)
    sections: list[tuple[str, list[Row]]] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[Row]:
        return [row for _, rows in self.sections for row in rows if row.ok is False]

    @property
    def exit_code(self) -> int:
        return 1 if self.failures else 0

    def render(self) -> str:
        width = 58
        lines = [*self.header, "", f"{'':{width}} {'measured':>14} {'expected':>9}"]
        for title, rows in self.sections:
            lines.append(title)
            for row in rows:
                mark = {None: "", True: "ok", False: "FAIL"}[row.ok]
                expected = "" if row.expected is None else str(row.expected)
                line = f"  {row.label:<{width - 2}} {row.measured!s:>14} {expected:>9}  {mark}"
                lines.append(line.rstrip())
        verdict = "PASS" if not self.failures else f"FAIL ({len(self.failures)} checks)"
        lines += ["", f"Result: {verdict}"]
        if self.details:
            lines += ["", "Details:", *(f"  {line}" for line in self.details)]
        return "\n".join(lines)


@dataclass(frozen=True)
class Facts:
    """Everything measured during the run, handed to `build`."""

    records: dict[str, Record]
    before: dict[str, str | None]  # what Google Ads had once the day had drained
    snapshot: Snapshot
    mails: list[Mail]
    ads_final: dict[str, str]  # the status the last successful call set
    ads_statuses: dict[str, str]  # what Google Ads has at the end (calls, or from the start)
    ads_calls: int  # successful calls (retries of failures are failures, not counted)
    ads_changes: int  # of them, those that changed the ad group's status
    ads_injected: Counter
    kill: Any
    outage: Any
    restarts: Counter
    reconcile_rc: int
    drained: list[tuple[str, bool, float, str]]
    t0: float


def _key_of(row: dict) -> str:
    return row["event_id"] if row["source"] == "stripe" else row["webhook_id"]


# Ads operations only on change: successful calls per status change, at most this.
CALLS_PER_CHANGE_TARGET = 1.05


def build(
    scenario: Scenario, truth: Truth, facts: Facts, burst: BurstFacts | None = None
) -> Report:
    """All sections of the table."""
    report = Report()
    report.sections.append(("Deliveries", _deliveries(scenario, facts, report)))
    report.sections.append(("Ad groups", _ad_groups(scenario, truth, facts, report)))
    report.sections.append(("Ads operations", _operations(facts)))
    if burst is not None:
        report.sections.append(("Mass sell-out (safety brake)", _burst(burst)))
    report.sections.append(("Reminders", _reminders(scenario, truth, facts, report)))
    report.sections.append(("Faults applied", _faults(scenario, facts, report)))
    return report


def _deliveries(scenario: Scenario, facts: Facts, report: Report) -> list[Row]:
    records = facts.records
    rows_by_key = {_key_of(row): row for row in facts.snapshot.deliveries}
    sent = [record for record in records.values() if record.attempts]
    attempts = [attempt for record in sent for attempt in record.attempts]
    copies = sum(len({a.copy for a in record.attempts}) for record in sent)
    lost = [
        r
        for r in sent
        if r.send.key not in rows_by_key and not all(a.retryable for a in r.attempts)
    ]
    unstored = [r for r in sent if r.send.key not in rows_by_key and r not in lost]
    extra = set(rows_by_key) - {record.send.key for record in sent}
    statuses = Counter(row["status"] for row in facts.snapshot.deliveries)
    unfinished = sum(statuses[status] for status in UNFINISHED)
    answers = Counter(a.status or "none" for a in attempts)
    duplicate_answers = sum(a.answer == "duplicate" for a in attempts)
    counted = sum(row["duplicate_count"] for row in facts.snapshot.deliveries)
    dead = [row for row in facts.snapshot.deliveries if row["status"] == "dead"]
    for record in lost:
        report.details.append(
            f"lost: {record.send.topic} {record.send.key} answers {record.attempts}"
        )
    for record in unstored:
        report.details.append(
            f"not stored: {record.send.topic} {record.send.key} {record.attempts}"
        )
    for row in dead:
        report.details.append(f"dead: #{row['id']} {row['topic']}: {row['last_error'][:160]}")
    for row in facts.snapshot.deliveries:
        if row["status"] in UNFINISHED:
            report.details.append(f"unfinished: #{row['id']} {row['topic']} {row['status']}")
    final = ", ".join(f"{status} {n}" for status, n in sorted(statuses.items()))
    return [
        Row(
            "planned / never delivered (dropped) / sent (late)",
            f"{len(scenario.sends)} / {sum(s.dropped for s in scenario.sends)} / {len(sent)}"
            f" ({sum(r.send.late for r in sent)})",
        ),
        Row("HTTP requests: copies + sender retries", f"{copies} + {len(attempts) - copies}"),
        Row("answers 2xx / 5xx / none / other", _answer_mix(answers)),
        Row(
            "stored rows / rows for nothing sent",
            f"{len(rows_by_key)} / {len(extra)}",
            f"{len(sent)} / 0",
        ),
        Row(
            "duplicates answered / duplicate_count summed",
            f"{duplicate_answers} / {counted}",
            f"{duplicate_answers} / {duplicate_answers}",
        ),
        Row("final status", final),
        Row("lost (sent and signed, neither stored nor retryable)", len(lost), 0),
        Row("sent, only retryable answers, never stored", len(unstored), 0),
        Row("unfinished (received / processing / failed)", unfinished, 0),
        Row("dead (the removed ad group's delivery included)", len(dead), 0),
    ]


def _answer_mix(answers: Counter) -> str:
    ok = sum(n for status, n in answers.items() if isinstance(status, int) and 200 <= status < 300)
    busy = sum(n for status, n in answers.items() if isinstance(status, int) and status >= 500)
    none = answers.get("none", 0)
    return f"{ok}/{busy}/{none}/{sum(answers.values()) - ok - busy - none}"


def _ad_groups(scenario: Scenario, truth: Truth, facts: Facts, report: Report) -> list[Row]:
    snapshot = facts.snapshot
    broken = scenario.broken.ad_group_id
    wrong = []
    for ad_group_id, expected in sorted(truth.ad_groups.items()):
        if ad_group_id == broken:
            continue
        measured = facts.ads_statuses.get(ad_group_id)
        if measured != expected:
            wrong.append(ad_group_id)
            report.details.append(f"ad group {ad_group_id}: {measured} (truth {expected})")
    before_wrong = []
    for ad_group_id, expected in sorted(truth.delivered_ad_groups.items()):
        if ad_group_id == broken:
            continue  # removed: its status is Google's REMOVED, whatever the stock
        if facts.before.get(ad_group_id) != expected:
            before_wrong.append(ad_group_id)
            report.details.append(
                f"before reconcile, ad group {ad_group_id}: {facts.before.get(ad_group_id)} "
                f"(delivered data says {expected})"
            )
    disagree = [
        ad_group_id
        for ad_group_id, status in snapshot.statuses.items()
        if facts.ads_final.get(ad_group_id) != status
    ]
    for ad_group_id in disagree:
        report.details.append(
            f"ad group {ad_group_id}: log says {snapshot.statuses[ad_group_id]}, "
            f"Google Ads stand-in has {facts.ads_final.get(ad_group_id)}"
        )
    # The removed ad group: marked missing once (by the first call, or the nightly read rqcron
    # starts at boot), one alert, skipped from then on; its item's delivery ends done.
    actions = snapshot.actions.get(broken, {})
    applied = actions.get("applied", 0) + actions.get("dry_run", 0)
    broken_item_keys = {
        s.key
        for s in scenario.sends
        if isinstance(s.event, LevelChange) and s.event.item == scenario.broken.item
    }
    broken_rows = [row for row in snapshot.deliveries if _key_of(row) in broken_item_keys]
    broken_done = sum(row["status"] == "done" for row in broken_rows)
    missing_alert = _missing_alert(scenario.broken.label)
    missing_alerts = sum(mail.subject == missing_alert for mail in _alerts(facts.mails))
    reconcile_alerts = sum("reconciliation" in mail.subject for mail in _alerts(facts.mails))
    other_alerts = [
        mail.subject
        for mail in _alerts(facts.mails)
        if mail.subject != missing_alert and "reconciliation" not in mail.subject
    ]
    report.details += [f"alert: {subject}" for subject in other_alerts]
    runs = [run for run in snapshot.reconcile_runs if run["trigger"] == "manual"]
    corrections = len(runs[-1]["corrections"]) if runs else "not run"
    promotion = snapshot.promotion
    late = promotion.get("end_late_seconds")
    if promotion.get("last_error"):
        report.details.append(f"promotion last_error: {promotion['last_error'][:300]}")
    changed_by_reconcile = sum(
        1
        for ad_group_id, status in truth.ad_groups.items()
        if ad_group_id in truth.delivered_ad_groups
        and facts.before.get(ad_group_id) not in (None, status)
        and ad_group_id != broken
    )
    ended = f"{late:.1f} s" if late is not None else "-"
    refused, froze, future_truth = _far_future(scenario, truth, facts, report)
    return [
        Row(
            "ad groups: watched + promotion (paused / enabled)",
            f"{len(truth.ad_groups)} ({_mix(truth.ad_groups)})",
        ),
        Row("differ from the delivered data before reconciling", len(before_wrong), 0),
        Row(
            f"reconcile exit code ({changed_by_reconcile} were off, {corrections} corrected)",
            facts.reconcile_rc,
            0,
        ),
        Row("final status differs from the truth", len(wrong), 0),
        Row(
            "far-future levels stored `invalid` with their reason",
            f"{refused} / {len(truth.far_future)}",
            f"{len(truth.far_future)} / {len(truth.far_future)}",
        ),
        Row("  their ad groups by the real levels (paused / enabled)", future_truth),
        Row(f"far-future levels refused ({refused}): ad groups they froze", froze, 0),
        Row("last applied action differs from the Ads stand-in", len(disagree), 0),
        Row(
            f"ad group {broken}, removed in Google Ads, in the system",
            snapshot.missing.get(broken, "present"),
            MISSING,
        ),
        Row(
            "  alerts / statuses applied / its deliveries done",
            f"{missing_alerts} / {applied} / {broken_done} of {len(broken_rows)}",
            f"1 / 0 / {len(broken_rows)} of {len(broken_rows)}",
        ),
        Row(
            f"other alerts (besides {reconcile_alerts} on the reconciliation)", len(other_alerts), 0
        ),
        Row(f"promotion, {ended} after its local wall-clock end", promotion.get("status"), "ended"),
    ]


def _far_future(
    scenario: Scenario, truth: Truth, facts: Facts, report: Report
) -> tuple[int, int, str]:
    """(levels from the future stored `invalid` with their reason, ad groups of their items
    whose status before or after reconciling is not the real levels', their truth's mix)."""
    rows_by_key = {_key_of(row): row for row in facts.snapshot.deliveries}
    sends = {send.key: send for send in scenario.sends}
    refused = 0
    for key in truth.far_future:
        row = rows_by_key.get(key)
        reason = _future_reason(payloads.future_stamp(sends[key], facts.t0))
        if row is not None and row["status"] == "invalid" and row["last_error"] == reason:
            refused += 1
        else:
            shown = (row["status"], row["last_error"][:160]) if row else "not stored"
            report.details.append(f"far-future level {key}: {shown} (truth invalid: {reason})")
    groups = sorted({group for groups in truth.far_future.values() for group in groups})
    froze = []
    for ad_group_id in groups:
        before, final = facts.before.get(ad_group_id), facts.ads_statuses.get(ad_group_id)
        if (
            before != truth.delivered_ad_groups[ad_group_id]
            or final != truth.ad_groups[ad_group_id]
        ):
            froze.append(ad_group_id)
            report.details.append(
                f"far-future item's ad group {ad_group_id}: {before} before reconciling, "
                f"{final} after (real levels say {truth.delivered_ad_groups[ad_group_id]}, "
                f"{truth.ad_groups[ad_group_id]})"
            )
    return refused, len(froze), _mix({group: truth.ad_groups[group] for group in groups})


def _mix(statuses: dict[str, str]) -> str:
    counts = Counter(statuses.values())
    return f"{counts['PAUSED']} / {counts['ENABLED']}"


def _alerts(mails: list[Mail]) -> list[Mail]:
    return [mail for mail in mails if shop.ALERT_EMAIL in mail.recipients]


def _paid_unseen(scenario: Scenario, mailed: dict[str, str]) -> Row:
    """Buyers who paid before their reminder fell due while our inbox had not seen the order
    (its orders/create held back past the due time, or dropped): Shopify knew, so no mail."""
    unseen = {
        f"shopify:{send.event.token}"
        for send in scenario.sends
        if isinstance(send.event, OrderPlaced)
        and not send.event.after_evaluation
        and (send.late or send.dropped)
    }
    return Row(
        f"paid, orders/create late or lost ({len(unseen)}): reminders to them",
        len(unseen & set(mailed)),
        0,
    )


def _reminders(scenario: Scenario, truth: Truth, facts: Facts, report: Report) -> list[Row]:
    by_email = {r.email: r for r in truth.reminders.values() if r.email}
    mails = [mail for mail in facts.mails if shop.ALERT_EMAIL not in mail.recipients]
    per_address = Counter(address for mail in mails for address in mail.recipients)
    mailed: dict[str, str] = {}
    unknown = 0
    for mail in mails:
        for address in mail.recipients:
            reminder = by_email.get(address)
            if reminder is None:
                unknown += 1
                continue
            mailed[reminder.key] = "discount" if shop.DISCOUNT_CODE in mail.text else "plain"
    decided = {
        f"{d['checkout__source']}:{d['checkout__token']}": d["arm"]
        for d in facts.snapshot.decisions
        if d["sent_at"] is not None
    }
    sent_decisions = sum(d["sent_at"] is not None for d in facts.snapshot.decisions)
    due = truth.due
    missing = sorted(set(due) - set(mailed))
    unexpected = sorted(set(mailed) - set(due))
    wrong_arm = sorted(key for key in set(due) & set(mailed) if due[key].arm != mailed[key])
    duplicates = sum(1 for n in per_address.values() if n > 1)
    no_consent = sum(n for address, n in per_address.items() if address not in truth.consenting)
    for key in missing:
        report.details.append(
            f"reminder missing: {key} ({due[key].arm}) {_decision_of(facts, key)}"
        )
    for key in unexpected:
        report.details.append(f"reminder not due: {key} ({mailed[key]})")
    for key in wrong_arm:
        report.details.append(f"wrong arm: {key}: {mailed[key]} instead of {due[key].arm}")
    arms = Counter(r.arm for r in due.values())
    lateness = [
        (d["decided_at"] - d["checkout_version"]).total_seconds() - shop.REMINDER_DELAY_SECONDS
        for d in facts.snapshot.decisions
        if d["checkout__source"] == "shopify"
    ]
    judged = {(d["checkout__source"], d["checkout__token"]) for d in facts.snapshot.decisions}
    late = (
        f"{round(median(lateness), 1) + 0.0} / {round(max(lateness), 1) + 0.0}" if lateness else "-"
    )
    rows = [
        Row(
            "checkouts in the log / judged by the system", f"{len(truth.reminders)} / {len(judged)}"
        ),
        Row(
            "due: plain / discount; judged after due, median / max s",
            f"{arms['plain']} / {arms['discount']}; {late}",
        ),
        Row(
            "reminder mails at the SMTP sink / decisions marked sent",
            f"{len(mails)} / {sent_decisions}",
            f"{len(due)} / {len(due)}",
        ),
        Row("due but not sent", len(missing), 0),
        Row("sent but not due", len(unexpected) + unknown, 0),
        Row("wrong arm", len(wrong_arm), 0),
        Row("addresses with more than one reminder", duplicates, 0),
        Row("reminders to addresses without consent", no_consent, 0),
        _paid_unseen(scenario, mailed),
    ]
    if decided != mailed:
        rows.append(Row("decisions marked sent match the mails, arm by arm", False, True))
    return rows


def _operations(facts: Facts) -> list[Row]:
    """Successful Ads calls per status change during the day (failed calls changed nothing)."""
    ratio = facts.ads_calls / facts.ads_changes if facts.ads_changes else 0.0
    return [
        Row(
            "Ads calls per status change (calls / changes)",
            f"{ratio:.3f} ({facts.ads_calls}/{facts.ads_changes})",
        ),
        Row(f"  at most {CALLS_PER_CHANGE_TARGET}", ratio <= CALLS_PER_CHANGE_TARGET, True),
    ]


def _burst(burst: BurstFacts) -> list[Row]:
    return [
        Row(
            "items (their ad groups) reporting zero within seconds",
            f"{burst.items} ({burst.ad_groups})",
        ),
        Row("pauses sent / allowed by the brake", burst.pauses_sent, burst.allowed),
        Row("pauses held", burst.held, burst.ad_groups - burst.allowed),
        Row("brake alerts", burst.alerts, 1),
        Row(
            "burst deliveries done (nothing lost)",
            f"{burst.done} / {burst.deliveries}",
            f"{burst.deliveries} / {burst.deliveries}",
        ),
        Row("held changes open after 'apply all'", burst.open_after_apply, 0),
        Row("ad groups not paused after 'apply all'", burst.wrong_after_apply, 0),
    ]


def _decision_of(facts: Facts, key: str) -> str:
    source, token = key.split(":", 1)
    found = [
        f"{d['arm']} ({d['reason'][:60]})"
        for d in facts.snapshot.decisions
        if d["checkout__source"] == source and d["checkout__token"] == token
    ]
    return "; ".join(found) or "no decision recorded"


def _faults(scenario: Scenario, facts: Facts, report: Report) -> list[Row]:
    sends = scenario.sends
    duplicated = [s for s in sends if s.copies > 1 and not s.dropped]
    races = {s.race for s in sends if s.race is not None}
    injected = facts.ads_injected
    transient = sum(
        n for kind, n in injected.items() if kind not in ("ok", "removed", "long_rate_limited")
    )
    late = sum(s.late for s in sends if not s.dropped)
    rows = [
        Row(
            "duplicated (concurrently) / restock races / late",
            f"{len(duplicated)} ({sum(s.concurrent for s in duplicated)}) / {len(races)} / {late}",
        ),
        Row(
            "Ads calls / transient / long rate limits / removed",
            f"{sum(injected.values())} / {transient} / {injected['long_rate_limited']}"
            f" / {injected['removed']}",
        ),
        Row(
            "  transient: concurrent modification / rate exceeded",
            f"{injected['concurrent_modification']} / {injected['rate_exceeded']}",
        ),
    ]
    if scenario.outage is not None:
        outage = facts.outage
        stranded = sum(
            outage.down_at <= row["received_at"].timestamp() - facts.t0 <= outage.up_at
            for row in facts.snapshot.deliveries
        )
        rows.append(
            Row(
                "Redis down, s after start (deliveries stored meanwhile)",
                f"{outage.down_at:.1f}-{outage.up_at:.1f} ({stranded})",
            )
        )
        if not outage.up_at > outage.down_at > 0:
            rows.append(Row("Redis was stopped and started again", False, True))
    if scenario.kill_at is not None:
        kill = facts.kill
        rows.append(
            Row(
                "worker SIGKILLed mid-job: delivery, done s later",
                f"#{kill.delivery_id}, {_recovery(facts)}",
            )
        )
        if kill.pid is None:
            rows.append(Row("a worker was killed mid-job", False, True))
            report.details.append(f"kill: {kill.note}")
    waited = [r for r in facts.records.values() if r.waited_for_evaluation is not None]
    if waited:
        longest = max(r.waited_for_evaluation or 0.0 for r in waited)
        after = sum(r.evaluated is not False for r in waited)
        rows.append(
            Row(
                f"orders 'after the reminder' sent after it (wait <= {longest:.0f} s)",
                f"{after} / {len(waited)}",
                f"{len(waited)} / {len(waited)}",
            )
        )
    restarts = ", ".join(f"{name} {n}" for name, n in sorted(facts.restarts.items())) or "none"
    rows.append(Row("processes restarted by the supervisor", restarts))
    seconds = " / ".join(f"{waited:.1f}" for _, _, waited, _ in facts.drained)
    idle = " / ".join("yes" if idle else "no" for _, idle, _, _ in facts.drained)
    rows.append(
        Row(
            f"drained before / after reconciling ({seconds} s)",
            idle,
            " / ".join(["yes"] * len(facts.drained)),
        )
    )
    for name, idle_, _, state in facts.drained:
        if not idle_:
            report.details.append(f"not drained {name}: {state}")
    return rows


def _recovery(facts: Facts) -> str:
    kill = facts.kill
    if kill.delivery_id is None:
        return "-"
    row = next((row for row in facts.snapshot.deliveries if row["id"] == kill.delivery_id), None)
    if row is None or row["processed_at"] is None:
        return "never"
    seconds = row["processed_at"].timestamp() - facts.t0 - kill.at
    return f"{seconds:.1f} ({row['status']})"


def header(scenario: Scenario, wall: float, phases: dict[str, float]) -> list[str]:
    """The parameters, the seed and the wall time."""
    params = scenario.params
    return [
        f"Chaos day of Elbkerzen, seed {params.seed}",
        f"Parameters: {params.describe()}",
        "Wall time: {:.1f} s ({})".format(
            wall, ", ".join(f"{name} {seconds:.1f} s" for name, seconds in phases.items())
        ),
    ]
