"""What reminders measurably did, per arm: read-only, the same numbers as the dashboard.

`reminder_selectors.reminder_results` computes them from the decisions table; this view only
serializes them. Reading them asks for `view` on reminder decisions, as the decision list does.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from automation.models import ReminderDecision
from automation.reminders import selectors as reminder_selectors
from automation.reminders.rules import CREDIBLE_LEVEL


class ArmResultSerializer(serializers.Serializer):
    """One arm: rates are shares (0.08 = 8 %), the interval is the credible interval."""

    arm = serializers.CharField()
    decisions = serializers.IntegerField(
        source="counts.decisions", help_text="Decisions whose attribution window has closed."
    )
    conversions = serializers.IntegerField(
        source="counts.conversions", help_text="Of those, how many bought within the window."
    )
    rate = serializers.DecimalField(
        source="counts.rate", max_digits=5, decimal_places=4, allow_null=True
    )
    interval_low = serializers.SerializerMethodField()
    interval_high = serializers.SerializerMethodField()
    configured = serializers.DecimalField(max_digits=5, decimal_places=4)
    in_use = serializers.DecimalField(
        max_digits=5, decimal_places=4, help_text="The probability decisions use now."
    )
    orders = serializers.IntegerField(
        help_text="Orders attributed to the arm so far, open windows included."
    )
    revenue = serializers.DecimalField(max_digits=14, decimal_places=2)
    open_decisions = serializers.IntegerField(
        help_text="Decisions whose attribution window is still open."
    )

    def get_interval_low(self, result: reminder_selectors.ArmResult) -> float:
        return round(result.interval[0], 4)

    def get_interval_high(self, result: reminder_selectors.ArmResult) -> float:
        return round(result.interval[1], 4)


class UpliftSerializer(serializers.Serializer):
    orders = serializers.FloatField(help_text="Orders the mails added over the holdout's rate.")
    low = serializers.FloatField()
    high = serializers.FloatField()


class ReminderResultsSerializer(serializers.Serializer):
    credible_level = serializers.FloatField()
    probabilities_from = serializers.CharField(
        source="in_use.source", help_text="configured or measured: what decisions use now."
    )
    reason = serializers.CharField(source="in_use.reason")
    asked_for = serializers.CharField(help_text="The setting: configured or measured.")
    minimum_decisions_per_arm = serializers.IntegerField(source="minimum")
    attribution_window_days = serializers.IntegerField(source="window_days")
    arms = ArmResultSerializer(many=True)
    uplift = UpliftSerializer(allow_null=True)


class ReminderResultsView(APIView):
    """Per arm (holdout, plain, discount): conversions / decisions with a 90 % credible
    interval beside the configured probability, which probabilities decide now and why, and
    the orders the mails added over the holdout."""

    # DjangoModelPermissions reads the model from the queryset: `view` on reminder decisions.
    queryset = ReminderDecision.objects.none()

    @extend_schema(responses=ReminderResultsSerializer)
    def get(self, request: Request) -> Response:
        results = reminder_selectors.reminder_results()
        payload = {"credible_level": CREDIBLE_LEVEL, **results.__dict__}
        return Response(ReminderResultsSerializer(payload).data)
