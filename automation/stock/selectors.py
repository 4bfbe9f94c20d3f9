"""Read queries for the pages that show stock and ad groups (the admin's lists, the API)."""

from datetime import UTC, datetime

from django.db.models import Exists, OuterRef, Prefetch, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from automation.models import AdGroup, AdGroupAction, HeldChange, WatchedProduct


def _last_actions() -> QuerySet[AdGroupAction]:
    return AdGroupAction.objects.filter(
        customer_id=OuterRef("customer_id"), ad_group_id=OuterRef("ad_group_id")
    ).order_by("-requested_at", "-pk")


def ad_groups_with_status(queryset: QuerySet[AdGroup]) -> QuerySet[AdGroup]:
    """Ad groups with what their status needs, in the same query (no N+1).

    `current` is the last status sent (failed and held calls aside), `since` the first action
    of the current run of that status, `last_result`/`last_failure` how the newest call went,
    `held` whether a pause waits for the merchant (the safety brake).
    """
    sent = _last_actions().exclude(
        result__in=[AdGroupAction.Result.FAILED, AdGroupAction.Result.HELD]
    )
    return (
        queryset.select_related("manual_by")
        .annotate(
            last_result=Subquery(_last_actions().values("result")[:1]),
            last_failure=Subquery(_last_actions().values("error")[:1]),
            current=Subquery(sent.values("desired_status")[:1]),
            held=Exists(
                HeldChange.objects.filter(
                    customer_id=OuterRef("customer_id"),
                    ad_group_id=OuterRef("ad_group_id"),
                    resolution=HeldChange.Resolution.OPEN,
                )
            ),
        )
        .annotate(
            changed_at=Subquery(
                sent.exclude(desired_status=OuterRef("current")).values("requested_at")[:1]
            )
        )
        .annotate(
            since=Subquery(
                sent.filter(
                    desired_status=OuterRef("current"),
                    requested_at__gt=Coalesce(
                        OuterRef("changed_at"), Value(datetime.min.replace(tzinfo=UTC))
                    ),
                )
                .order_by("requested_at", "pk")
                .values("requested_at")[:1]
            )
        )
    )


def watched_products_with_status(queryset: QuerySet[WatchedProduct]) -> QuerySet[WatchedProduct]:
    """Watched products with their ad groups' status annotations, prefetched in one query."""
    return queryset.prefetch_related(
        Prefetch(
            "ad_groups",
            queryset=ad_groups_with_status(AdGroup.objects.order_by("name", "ad_group_id")),
        )
    )


def ad_group_label(group: AdGroup) -> str:
    """What the merchant calls the ad group: its first watched product's label, else its name."""
    labels = [product.label for product in group.watched_products.all()]
    return labels[0] if labels else str(group)
