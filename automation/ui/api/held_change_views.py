"""The pauses the safety brake held: list them, apply or discard all (held_changes.py decides)."""

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from automation.models import HeldChange
from automation.stock import held_changes
from automation.ui.api.permissions import ChangePermission
from automation.ui.api.serializers import ReasonShown
from automation.ui.setup import failures


class HeldChangeSerializer(ReasonShown, serializers.ModelSerializer):
    """A held pause and, once decided, who decided what."""

    resolved_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    # Plain text: a third `source` enum beside the deliveries' and the actions' would collide
    # in the schema's enum names.
    source = serializers.CharField(read_only=True, help_text="webhook or reconcile")

    class Meta:
        model = HeldChange
        fields = [
            "id",
            "customer_id",
            "ad_group_id",
            "desired_status",
            "reason",
            "reason_shown",
            "source",
            "held_at",
            "resolution",
            "resolved_at",
            "resolved_by",
            "applied_status",
            "outcome",
        ]
        read_only_fields = fields


_decided = inline_serializer(
    "HeldChangesDecided",
    {
        "decided": serializers.IntegerField(),
        "sent": serializers.DictField(child=serializers.CharField()),
        "errors": serializers.ListField(child=serializers.CharField()),
    },
)


class HeldChangeViewSet(viewsets.ReadOnlyModelViewSet):
    """Pauses the safety brake held; `?open=1` lists only those waiting for a decision."""

    serializer_class = HeldChangeSerializer

    def get_queryset(self):
        found = HeldChange.objects.select_related("resolved_by")
        if self.request.query_params.get("open") in ("1", "true"):
            found = found.filter(resolution=HeldChange.Resolution.OPEN)
        return found

    @extend_schema(request=None, responses={200: _decided})
    @action(
        detail=False,
        methods=["post"],
        url_path="apply-all",
        permission_classes=[IsAdminUser, ChangePermission],
    )
    def apply_all(self, request: Request) -> Response:
        """Send every open held change's ad group the status its stock says now."""
        decided = held_changes.apply(held_changes.open_changes(), request.user)
        return Response(_answer(decided))

    @extend_schema(request=None, responses={200: _decided})
    @action(
        detail=False,
        methods=["post"],
        url_path="discard-all",
        permission_classes=[IsAdminUser, ChangePermission],
    )
    def discard_all(self, request: Request) -> Response:
        """Keep the ads as they are and close every open held change, recording who decided."""
        decided = held_changes.discard(held_changes.open_changes(), request.user)
        return Response(_answer(decided))


def _answer(decided: held_changes.Decided) -> dict:
    """What a decision did; each failure in our words (the Ads text goes to the log, masked)."""
    return {
        "decided": decided.decided,
        "sent": decided.sent,
        "errors": [
            _("Ad group %(group)s: %(error)s") % {"group": group, "error": failures.explain(error)}
            for group, error in decided.failures
        ],
    }
