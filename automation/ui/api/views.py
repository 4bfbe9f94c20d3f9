"""Thin API views: serializers validate, promotions.py and inbox.py do the work."""

from django.db import transaction
from django.db.models import QuerySet, Value
from django.db.models.functions import Coalesce
from drf_spectacular.utils import extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from automation.intake import inbox
from automation.models import (
    AdGroupAction,
    Delivery,
    MarginRule,
    Promotion,
    ReminderDecision,
    WatchedProduct,
)
from automation.platform.display_names import ad_group_name_of_row
from automation.promotions import edges as promotions
from automation.stock import apply
from automation.ui.api import serializers as api
from automation.ui.api.permissions import ChangePermission

_detail = inline_serializer("Detail", {"detail": serializers.CharField()})


class NotReplayable(APIException):
    """Only failed, dead or refused deliveries go through the pipeline again."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "not_replayable"


class QueryFilterMixin:
    """Lists narrowed by a QueryFilter serializer; single rows are found whatever the query."""

    filter_class: type[api.QueryFilter]

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        queryset = super().filter_queryset(queryset)
        if self.action != "list":
            return queryset
        return self.filter_class(data=self.request.query_params).apply(queryset)


class WatchedProductViewSet(viewsets.ModelViewSet):
    """Products whose ad groups follow their stock; a create or update decides the product
    and its ad groups (also the ones the update took away) again from the stored levels at
    once (logged with source `admin`), after the save."""

    queryset = WatchedProduct.objects.prefetch_related("ad_groups", "variants")
    serializer_class = api.WatchedProductSerializer

    def perform_create(self, serializer: api.WatchedProductSerializer) -> None:
        serializer.save()
        self._decide_again(serializer.instance, set())

    def perform_update(self, serializer: api.WatchedProductSerializer) -> None:
        before = {group.key for group in serializer.instance.ad_groups.all()}
        serializer.save()
        self._decide_again(serializer.instance, before)

    def perform_destroy(self, instance: WatchedProduct) -> None:
        apply.stop_watching([instance], source=AdGroupAction.Source.ADMIN)

    @staticmethod
    def _decide_again(product: WatchedProduct, before: set) -> None:
        # After the commit, so an Ads error (logged as a failed action) never loses the save.
        transaction.on_commit(
            lambda: apply.redecide([product.pk], source=AdGroupAction.Source.ADMIN, also=before)
        )


class MarginRuleViewSet(viewsets.ModelViewSet):
    """The merchant's margins by variant, product, SKU or vendor."""

    queryset = MarginRule.objects.all()
    serializer_class = api.MarginRuleSerializer


class PromotionViewSet(viewsets.ModelViewSet):
    """Promotions on local time; saving (re)schedules their RQ jobs, deleting cancels them."""

    queryset = Promotion.objects.prefetch_related("ad_groups")
    serializer_class = api.PromotionSerializer

    def perform_destroy(self, instance: Promotion) -> None:
        promotions.delete_and_cancel(instance)


@extend_schema_view(list=extend_schema(parameters=[api.DeliveryFilter]))
class DeliveryViewSet(QueryFilterMixin, viewsets.ReadOnlyModelViewSet):
    """Webhook deliveries as received (without bodies), and replaying the failed ones."""

    queryset = Delivery.objects.all()
    serializer_class = api.DeliverySerializer
    filter_class = api.DeliveryFilter

    @extend_schema(request=None, responses={202: _detail, 409: _detail})
    @action(detail=True, methods=["post"], permission_classes=[IsAdminUser, ChangePermission])
    def replay(self, request: Request, pk: str | None = None) -> Response:
        """Send a failed, dead or refused delivery through the same path again, like the admin
        action (a refused `shop/redact` is checked anew).

        It changes the row (status, error, attempts), so it asks for `change`, as the admin's
        replay action does."""
        delivery = self.get_object()
        if not inbox.replay([delivery.pk]):
            raise NotReplayable(
                f"Delivery {delivery.pk} is {delivery.status}: only failed, dead or refused "
                "deliveries can be replayed."
            )
        return Response(
            {"detail": f"Delivery {delivery.pk} is queued again."}, status=status.HTTP_202_ACCEPTED
        )


@extend_schema_view(list=extend_schema(parameters=[api.AdGroupActionFilter]))
class AdGroupActionViewSet(QueryFilterMixin, viewsets.ReadOnlyModelViewSet):
    """Every ad group status change we asked for, and how it went."""

    queryset = AdGroupAction.objects.annotate(
        ad_group_name=Coalesce(ad_group_name_of_row(), Value(""))
    )
    serializer_class = api.AdGroupActionSerializer
    filter_class = api.AdGroupActionFilter


class ReminderDecisionViewSet(viewsets.ReadOnlyModelViewSet):
    """Every reminder evaluation and its reason, addresses masked."""

    queryset = ReminderDecision.objects.all()
    serializer_class = api.ReminderDecisionSerializer
