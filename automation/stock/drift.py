"""Nightly drift repair: what Google Ads really has, set back to what the rule says.

Per account one GAQL search (batched by the adapter) reads every watched ad group's status.
Each status read becomes the confirmed one, and the ad group is settled through the one locked
path: where the rule wants another status (someone switched it by hand), it is sent again and
listed as a drift correction. A pause the safety brake holds is not sent, only reported. An ad
group Google Ads no longer has is marked missing (one alert) and skipped; one it has again is
no longer skipped. The same rows carry the ad group's and its campaign's names: a name changed
in Google Ads is kept, so the pages call the ad group what the merchant sees there. Ad groups
that only a current or coming promotion lists are read for their names alone: the promotion's
start and end switch them, and one Google Ads does not have is the promotion's error to report.
"""

from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from automation.google_ads import statuses as ads
from automation.models import AdGroup, AdGroupAction, PromotionAdGroup
from automation.platform.display_names import plain
from automation.platform.exceptions import PermanentAdsError, TransientAdsError
from automation.stock import apply
from automation.stock.facts import Key

RECONCILE = AdGroupAction.Source.RECONCILE


@dataclass
class Drift:
    """What the repair found: ad groups read, statuses sent (`settled`), errors in words."""

    read: int = 0
    settled: list[apply.Settled] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    missing: list[AdGroup] = field(default_factory=list)


def watched_ad_groups() -> list[AdGroup]:
    """The ad groups enabled watched products control (missing ones too: they may be back)."""
    return list(AdGroup.objects.filter(watched_products__enabled=True).distinct().order_by("pk"))


def promoted_ad_groups(now=None) -> set[Key]:
    """The ad groups of promotions that have not ended (running or still to come)."""
    now = now or timezone.now()
    current = Q(promotion__ended_at__isnull=True) & (
        Q(promotion__end_at__isnull=True) | Q(promotion__end_at__gt=now)
    )
    return set(PromotionAdGroup.objects.filter(current).values_list("customer_id", "ad_group_id"))


def repair() -> Drift:
    """Read every watched ad group's real status and settle each one against it; read the
    names of the ad groups only promotions list."""
    drift = Drift()
    by_customer: dict[str, list[AdGroup]] = defaultdict(list)
    for group in watched_ad_groups():
        by_customer[group.customer_id].append(group)
    watched = {group.key for groups in by_customer.values() for group in groups}
    promoted: dict[str, list[str]] = defaultdict(list)
    for customer_id, ad_group_id in sorted(promoted_ad_groups() - watched):
        promoted[customer_id].append(ad_group_id)
    for customer_id in sorted(set(by_customer) | set(promoted)):
        groups = by_customer.get(customer_id, [])
        read_at = timezone.now()
        wanted = [group.ad_group_id for group in groups] + promoted.get(customer_id, [])
        try:
            real = ads.read_ad_groups(customer_id, wanted)
        except (TransientAdsError, PermanentAdsError) as err:
            drift.errors.append(f"Google Ads statuses of account {customer_id}: {err}")
            continue
        drift.read += len({group.ad_group_id for group in groups})
        keep_promoted_names(customer_id, promoted.get(customer_id, []), real)
        for group in groups:
            seen = real.get(group.ad_group_id)
            if seen is not None:
                keep_names(group, seen)
            status = seen.status if seen is not None else None
            if status is None and settings.ADS_BACKEND == "dryrun":
                continue  # the dry run knows only what it sent
            if status in (None, "REMOVED"):
                kind = AdGroup.Missing.NOT_FOUND if status is None else AdGroup.Missing.REMOVED
                apply.mark_missing(group, kind)
                drift.missing.append(group)
                continue
            if status not in AdGroupAction.Status.values:
                drift.errors.append(f"ad group {plain(group.name, group.ad_group_id)} is {status}")
                continue
            if group.missing:
                apply.mark_present([group.key])
            drift.settled += _settle(group, status, read_at, drift)
    return drift


NAME_LENGTH = AdGroup._meta.get_field("name").max_length


def keep_names(group: AdGroup, seen: ads.SeenAdGroup) -> None:
    """Store the names Google Ads gives now, where they differ (a backend without names keeps
    the stored ones)."""
    if not seen.name:
        return
    name, campaign = seen.name[:NAME_LENGTH], seen.campaign_name[:NAME_LENGTH]
    if (group.name, group.campaign_name) == (name, campaign):
        return
    AdGroup.objects.filter(pk=group.pk).update(name=name, campaign_name=campaign)
    group.name, group.campaign_name = name, campaign


def keep_promoted_names(customer_id: str, ad_group_ids: list[str], real: dict) -> None:
    """Keep the names Google Ads gives the ad groups only promotions list (a row is made for
    one not known yet, as the promotion's start would)."""
    named = {a: real[a] for a in ad_group_ids if a in real and real[a].name}
    if not named:
        return
    AdGroup.objects.bulk_create(
        [AdGroup(customer_id=customer_id, ad_group_id=a) for a in sorted(named)],
        ignore_conflicts=True,
    )
    for group in AdGroup.objects.filter(customer_id=customer_id, ad_group_id__in=named):
        keep_names(group, named[group.ad_group_id])


def _settle(group: AdGroup, status: str, read_at, drift: Drift) -> list[apply.Settled]:
    key = group.key
    settled = apply.settle([key], source=RECONCILE, observed={key: status}, observed_at=read_at)
    for done in settled:
        if done.error is not None:
            ad_group = plain(group.name, group.ad_group_id)
            drift.errors.append(f"ad group {ad_group} (drift): {done.error}")
    return settled
