"""The one locked path from the rule to Google Ads.

`evaluate` decides watched products (is each one sellable now?) under their row locks and
stores the answer; `settle` decides ad groups under their row locks from everything that
controls them (`rule.ad_group_status`) and sends what changed, past two gates:
- only on change: a status equal to the one the backend last confirmed (`AdGroupState`,
  locked from the check to its update) is not sent; the merchant's manual call always is;
- the safety brake (`brake`): a stock-driven pause is held once too many arrive at once.

Locks are always taken in one order, watched products (by pk) before stock levels before ad
groups (by pk) before their confirmed state and the brake's settings row, so concurrent
callers take turns and never deadlock. An ad group Google Ads reports removed or unknown is
marked (`AdGroup.missing`) with one alert and skipped from then on.

Ads errors never roll back the caller's transaction: each is logged as a failed action and
returned in the `Settled` rows, for the caller to raise once its work has committed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from automation.google_ads import statuses as ads
from automation.intake.sources.shopify_inventory import LevelUpdate
from automation.models import (
    AdGroup,
    AdGroupAction,
    Delivery,
    PromotionAdGroup,
    StockLevel,
    WatchedProduct,
)
from automation.platform import alerts, notes, rows
from automation.platform.exceptions import AdGroupMissing, PermanentAdsError, TransientAdsError
from automation.stock import brake, facts, levels, rule
from automation.stock.facts import Key

logger = logging.getLogger(__name__)

Result = AdGroupAction.Result
Source = AdGroupAction.Source

UNCHANGED = "unchanged"
"""Not sent: the backend already has the status (nothing logged)."""
SKIPPED = "skipped"
"""Not sent: nothing controls the ad group, or nothing is known about its stock."""
MISSING = "missing"
"""Not sent: Google Ads reported the ad group removed or unknown."""


@dataclass
class Settled:
    """What settling one ad group did.

    `status` is the status the rule wants (None when it wants none), `result` what became of
    it (`applied`, `dry_run`, `unchanged`, `held`, `skipped`, `missing`, `failed`), `error`
    the Ads error of a failed call. `observed` is the status Google Ads was seen to have
    (drift repair), `drifted` whether it differed from the last one confirmed.
    """

    key: Key
    name: str
    status: str | None
    reason: str
    result: str
    error: TransientAdsError | PermanentAdsError | None = None
    observed: str | None = None
    drifted: bool = False
    manual: bool = False
    label: str = ""  # what the merchant calls it: its first watched product, else its name
    reason_note: notes.Note | str = ""  # `reason` as stored: shown in the reader's language

    @property
    def sent(self) -> bool:
        return self.result in ads.SENT_RESULTS


# --- watched products ------------------------------------------------------------------------


def lock_products(product_ids: Iterable[int]) -> list[WatchedProduct]:
    """The watched products, locked until the transaction ends, in pk order."""
    return list(
        WatchedProduct.objects.select_for_update().filter(pk__in=set(product_ids)).order_by("pk")
    )


def lock_watching(inventory_item_ids: Iterable[int]) -> list[WatchedProduct]:
    """The enabled watched products that count these inventory items, locked, in pk order
    (one written-out statement: `facts.watching`'s condition in the lock; every stock level's
    job takes it, docs/PERFORMANCE.md, "The stock path written out")."""
    where, params = facts.watching_condition(inventory_item_ids)
    found = rows.execute(
        f"SELECT {rows.columns(WatchedProduct, 'w')} FROM {rows.table(WatchedProduct)} w "  # noqa: S608
        f"WHERE {where} ORDER BY w.id{_for_update()}",
        params,
    )
    return [rows.load(WatchedProduct, row) for row in found]


def _for_update(of: str = "") -> str:
    """Row locks (of one table's rows) where the database has them (SQLite locks the whole
    file for a writer)."""
    if not connection.features.has_select_for_update:
        return ""
    return f" FOR UPDATE OF {of}" if of else " FOR UPDATE"


@dataclass(frozen=True)
class OfProducts:
    """The ad groups some watched products control (and `extra` ones), locked by `settle` in
    one statement, without reading them first."""

    product_ids: frozenset[int]
    extra: frozenset[Key] = frozenset()

    def __or__(self, other: Iterable[Key]) -> OfProducts:
        return OfProducts(self.product_ids, self.extra | frozenset(other))


def evaluate(products: Sequence[WatchedProduct], now: datetime | None = None) -> OfProducts:
    """Decide each (locked) watched product from its stock and store the answer (only what
    changed is written); returns the ad groups they control, for `settle`."""
    if not products:
        return OfProducts(frozenset())
    now = now or timezone.now()
    found = facts.product_facts(products)
    changed = []
    for product in products:
        sellability = rule.product_sellable(found[product.pk])
        reason = {"code": sellability.reason.code, "values": sellability.reason.values}
        before = (product.sellable, product.stock, product.reason)
        product.sellable, product.stock, product.reason = (
            sellability.sellable,
            sellability.stock,
            reason,
        )
        if (
            before != (product.sellable, product.stock, product.reason)
            or product.decided_at is None
        ):
            product.decided_at = now
            changed.append(product)
    for product in changed:  # usually one: bulk_update's CASE cost more than the rest of the job
        rows.update(
            WatchedProduct,
            product.pk,
            sellable=product.sellable,
            stock=product.stock,
            reason=product.reason,
            decided_at=product.decided_at,
        )
    return OfProducts(frozenset(product.pk for product in products))


def ad_groups_of(product_ids: Iterable[int]) -> set[Key]:
    """The ad groups these watched products control."""
    return set(
        AdGroup.objects.filter(watched_products__pk__in=list(product_ids)).values_list(
            "customer_id", "ad_group_id"
        )
    )


def redecide(
    product_ids: Iterable[int],
    *,
    source: str,
    also: Iterable[Key] = (),
    delivery: Delivery | None = None,
) -> list[Settled]:
    """Decide watched products again from what is stored, and settle their ad groups (and
    `also`: e.g. the ones a save took away from them), in one transaction."""
    with transaction.atomic():
        keys = evaluate(lock_products(product_ids)) | set(also)
        return settle(keys, source=source, delivery=delivery)


# --- ad groups -----------------------------------------------------------------------------


def lock_ad_groups(keys: Iterable[Key] | OfProducts) -> list[AdGroup]:
    """The ad groups, created where missing, locked until the transaction ends, in pk order;
    each knows whether a promotion lists it (`in_promotion`: most are in none, and their
    promotions are then not read)."""
    if isinstance(keys, OfProducts):
        through = rows.table(WatchedProduct.ad_groups.through)
        controlled, params = rows.among("t.watchedproduct_id", sorted(keys.product_ids))
        found = _lock(
            f"g.id IN (SELECT t.adgroup_id FROM {through} t WHERE {controlled})",  # noqa: S608
            params,
        )
        if not keys.extra:
            return found
        more = [group for group in lock_ad_groups(keys.extra) if group not in found]
        return sorted([*found, *more], key=lambda group: group.pk)
    wanted = set(keys)
    if not wanted:
        return []
    found = _locked(wanted)
    missing = wanted - {group.key for group in found}
    if missing:  # rare: an ad group a promotion names first, or a test's
        AdGroup.objects.bulk_create(
            [AdGroup(customer_id=c, ad_group_id=a) for c, a in sorted(missing)],
            ignore_conflicts=True,
        )
        found = _locked(wanted)
    return found


def _locked(wanted: set[Key]) -> list[AdGroup]:
    condition, params = rows.among("g.ad_group_id", sorted({a for _, a in wanted}))
    return [group for group in _lock(condition, params) if group.key in wanted]


def _lock(condition: str, params: list) -> list[AdGroup]:
    """Ad groups matching a condition on `g`, locked in pk order, each with whether a
    promotion lists it and the enabled watched products controlling it (`controlling`, by
    label), in one written-out statement: every stock level's job takes it
    (docs/PERFORMANCE.md, "The stock path written out")."""
    listed = rows.table(PromotionAdGroup)
    through, watched = rows.table(WatchedProduct.ad_groups.through), rows.table(WatchedProduct)
    width = len(AdGroup._meta.concrete_fields)
    found = rows.execute(
        f"SELECT {rows.columns(AdGroup, 'g')}, EXISTS (SELECT 1 FROM {listed} pa "  # noqa: S608
        "WHERE pa.customer_id = g.customer_id AND pa.ad_group_id = g.ad_group_id), "
        f"{rows.columns(WatchedProduct, 'w')} FROM {rows.table(AdGroup)} g "
        f"LEFT JOIN {through} t ON t.adgroup_id = g.id "
        f"LEFT JOIN {watched} w ON w.id = t.watchedproduct_id AND w.enabled "
        f"WHERE {condition} ORDER BY g.id, w.label, w.id{_for_update(of='g')}",
        params,
    )
    groups: dict[int, AdGroup] = {}
    for row in found:
        group = groups.get(row[0])
        if group is None:
            group = groups[row[0]] = rows.load(AdGroup, row[:width])
            group.in_promotion = bool(row[width])
            group.controlling = []
        if row[width + 1] is not None:
            group.controlling.append(rows.load(WatchedProduct, row[width + 1 :]))
    return list(groups.values())


def settle(
    keys: Iterable[Key] | OfProducts,
    *,
    source: str,
    delivery: Delivery | None = None,
    brake_pauses: bool = True,
    prefix: tuple[str, dict] | None = None,
    observed: dict[Key, str] | None = None,
    observed_at: datetime | None = None,
    now: datetime | None = None,
) -> list[Settled]:
    """Give each ad group the status the rule says, under its lock; one `Settled` each.

    `prefix` is a note code and its values that wrap the reason (who applied a held change).
    `observed` are statuses
    Google Ads was just seen to have (read at `observed_at`): each becomes the confirmed one
    first, unless a call after the read confirmed a newer one, so only-on-change sends what
    drifted. `brake_pauses=False` lets the merchant's own decision on held changes pass.
    """
    now = now or timezone.now()
    settled = []
    # No savepoint: inside a caller's transaction (the inbox's) nothing here raises on
    # purpose; alone, this is the transaction.
    with transaction.atomic(savepoint=False):
        groups = lock_ad_groups(keys)
        found = facts.ad_group_facts(groups, now)
        for group in groups:
            fact = found[group.key]
            settled.append(
                _settle_one(
                    group,
                    rule.ad_group_status(fact),
                    label=fact.labels[0] if fact.labels else str(group),
                    source=source,
                    delivery=delivery,
                    brake_pauses=brake_pauses,
                    prefix=prefix,
                    observed=(observed or {}).get(group.key),
                    observed_at=observed_at,
                )
            )
    return settled


def _settle_one(
    group: AdGroup,
    verdict: rule.Verdict,
    *,
    label: str,
    source: str,
    delivery: Delivery | None,
    brake_pauses: bool,
    prefix: tuple[str, dict] | None,
    observed: str | None,
    observed_at: datetime | None,
) -> Settled:
    reason = verdict.reason.note()
    if prefix is not None:
        code, values = prefix
        reason = notes.note(code, **values, reason=reason)
    done = Settled(
        group.key,
        str(group),
        verdict.status,
        str(reason),
        SKIPPED,
        observed=observed,
        manual=bool(group.manual_status),
        label=label,
        reason_note=reason,
    )
    if group.missing:
        done.result = MISSING
        return done
    if observed is not None:
        done.drifted = _observe(group, observed, observed_at)
    if verdict.status is None:
        return done
    if (
        observed is not None
        and observed != verdict.status
        and source in brake.BRAKED_SOURCES
        and verdict.status == rule.PAUSED
        and brake.open_held(*group.key)
    ):
        done.result = Result.HELD  # already waiting for the merchant: not held twice
        return done
    if done.drifted:
        done.reason_note = notes.note("ads_drift", real=observed, reason=reason)
    elif observed is not None and observed != verdict.status:
        done.reason_note = notes.note("ads_had", real=observed, reason=reason)
    done.reason = str(done.reason_note)
    done.result, done.error = _apply(
        group, verdict.status, done.reason_note, source, delivery, brake_pauses
    )
    if isinstance(done.error, AdGroupMissing):
        mark_missing(group, done.error.kind)
        done.result, done.error = MISSING, None
    return done


def _observe(group: AdGroup, observed: str, observed_at: datetime | None) -> bool:
    """Take a status read from Google Ads as the confirmed one; whether it had drifted."""
    backend = settings.ADS_BACKEND
    state = ads.confirmed_state(backend, *group.key, lock=True)
    if state is not None and observed_at is not None and state[1] > observed_at:
        return False  # a call after our read confirmed a newer status
    ads.confirm(backend, *group.key, observed)
    return state is not None and state[0] != observed


def _apply(
    group: AdGroup,
    status: str,
    reason: notes.Note | str,
    source: str,
    delivery: Delivery | None,
    brake_pauses: bool,
) -> tuple[str, TransientAdsError | PermanentAdsError | None]:
    """Send one ad group's status past the two gates; the result and the Ads error, if any."""
    customer_id, ad_group_id = group.key
    fields = {
        "customer_id": customer_id,
        "ad_group_id": ad_group_id,
        "desired_status": status,
        **notes.reason_fields(reason),
        "source": source,
        "delivery": delivery,
        "requested_at": timezone.now(),
    }
    # No savepoint: inside the inbox's transaction the lock lasts until its commit. Nothing
    # may raise out of this block, or the caller's transaction would be marked for rollback.
    with transaction.atomic(savepoint=False):
        confirmed = ads.confirmed_status(settings.ADS_BACKEND, customer_id, ad_group_id, lock=True)
        # The merchant's own manual pause or enable is always sent and logged: it is rare, it
        # names who and why, and it confirms the status Google Ads really has.
        if confirmed == status and source != Source.MANUAL:
            return UNCHANGED, None
        braked = brake_pauses and not group.demo and source in brake.BRAKED_SOURCES
        if braked and status == rule.PAUSED:
            episode = brake.engaged(customer_id, ad_group_id, fields["requested_at"])
            if episode is not None:
                brake.hold(fields, episode)
                return Result.HELD, None
        return ads.send_logged(fields)


def mark_missing(group: AdGroup, kind: str) -> None:
    """Mark the ad group removed or unknown in Google Ads; the first mark alerts once."""
    marked = AdGroup.objects.filter(pk=group.pk, missing="").update(
        missing=kind, missing_since=timezone.now()
    )
    group.missing = kind
    if marked:
        pk = group.pk
        transaction.on_commit(lambda: alerts.ad_group_missing(pk))


def mark_present(keys: Iterable[Key]) -> int:
    """Google Ads has these ad groups again (the nightly read found them): stop skipping."""
    cleared = 0
    for customer_id, ad_group_id in keys:
        cleared += (
            AdGroup.objects.filter(customer_id=customer_id, ad_group_id=ad_group_id)
            .exclude(missing="")
            .update(missing="", missing_since=None)
        )
    return cleared


def errors_of(settled: Sequence[Settled]) -> list[TransientAdsError | PermanentAdsError]:
    """The Ads errors among settled ad groups."""
    return [done.error for done in settled if done.error is not None]


def combined(errors: Sequence[Exception]) -> Exception:
    """One error for several: transient if any is (a retry may fix it), otherwise permanent."""
    message = "; ".join(str(err) for err in errors)
    if any(isinstance(err, TransientAdsError) for err in errors):
        return TransientAdsError(message)
    return errors[0] if len(errors) == 1 else PermanentAdsError(message)


# --- stock levels --------------------------------------------------------------------------


@dataclass
class AppliedLevels:
    """What pushing levels through the guard did.

    `written[i]` says whether `updates[i]` was stored (False: a later level was stored
    already); `decided_by` is the index of the update after which the ad groups were set
    (the last tracked one written), None when none was; `stock` the evaluated products'
    counted stock by label; `watched` False when no watched product counts the items.
    """

    watched: bool = True
    written: list[bool] | None = None
    decided_by: int | None = None
    stock: dict[str, int | None] | None = None
    settled: list[Settled] | None = None


def apply_levels(
    updates: Sequence[LevelUpdate],
    *,
    source: str,
    deliveries: Sequence[Delivery | None] | None = None,
) -> AppliedLevels:
    """Store levels through the stale guard and settle the ad groups of the watched products
    that count them, in the caller's transaction (the inbox's, or the nightly run's).

    The products are locked before the levels are written, so concurrent messages for one
    product take turns and the last one decides with every level. The ad groups are set
    once, after the last tracked level: the earlier levels' statuses would be outdated
    before they were sent. A level that says `available: null` (not tracked) is stored but
    never acts: the ones after the last tracked level are stored after the decision.
    """
    products = lock_watching({update.inventory_item_id for update in updates})
    if not products:
        return AppliedLevels(watched=False)
    # The untracked levels after the last tracked one are stored after the decision: alone,
    # each would be stored without action, so the decision must not see them.
    tail = next(
        (i + 1 for i in reversed(range(len(updates))) if updates[i].available is not None), 0
    )
    written = levels.store_levels(updates[:tail]) if tail else []
    tracked = [i for i, done in enumerate(written) if done and updates[i].available is not None]
    if not tracked:
        if tail < len(updates):
            written += levels.store_levels(updates[tail:])
        return AppliedLevels(written=written)
    last = tracked[-1]
    keys = evaluate(products)
    delivery = deliveries[last] if deliveries else None
    settled = settle(keys, source=source, delivery=delivery)
    if tail < len(updates):
        written += levels.store_levels(updates[tail:])
    stock = {product.label: product.stock for product in products}
    return AppliedLevels(written=written, decided_by=last, stock=stock, settled=settled)


def ad_group_rows(keys: Iterable[Key]) -> list[AdGroup]:
    """The ad groups (not locked: for reading, or to pass on to a locking caller)."""
    wanted = set(keys)
    found = AdGroup.objects.filter(ad_group_id__in={a for _, a in wanted}).order_by("pk")
    return [group for group in found if group.key in wanted]


def redecide_counting(location_id: int) -> list[Settled]:
    """A location's stock now counts, or no longer does: decide every watched product with
    stock there again."""
    items = StockLevel.objects.filter(location_id=location_id).values_list(
        "inventory_item_id", flat=True
    )
    return redecide(facts.watching(items), source=Source.ADMIN)


def stop_watching(products: Sequence[WatchedProduct], *, source: str) -> list[Settled]:
    """Delete watched products and settle the ad groups they controlled: another product or a
    promotion may decide them now (an ad group nothing controls any more stays as it is)."""
    with transaction.atomic():
        locked = lock_products(product.pk for product in products)
        keys = ad_groups_of([product.pk for product in locked])
        WatchedProduct.objects.filter(pk__in=[product.pk for product in locked]).delete()
        return settle(keys, source=source)
