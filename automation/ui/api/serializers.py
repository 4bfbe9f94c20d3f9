"""API representations; every rule comes from the models, the admin's form or promotions.py,
which also saves a promotion and schedules it."""

import re
from copy import copy
from datetime import date, datetime, time
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.forms.models import model_to_dict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.settings import api_settings

from automation.models import (
    AdGroup,
    AdGroupAction,
    Delivery,
    MarginRule,
    Promotion,
    PromotionAdGroup,
    ReminderDecision,
    Variant,
    WatchedProduct,
)
from automation.models.inventory import (
    ad_group_id_validator,
    customer_id_digits,
    customer_id_validator,
    default_customer_id,
)
from automation.platform import notes
from automation.platform.pseudonyms import mask_email
from automation.promotions import edges as promotions
from automation.stock import facts as stock_facts
from automation.ui.admin_forms import PromotionForm


class CustomerIdField(serializers.CharField):
    """A Google Ads account as Google Ads shows it (123-456-7890) or as digits; stored as digits."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("validators", [customer_id_validator])
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        return customer_id_digits(super().to_internal_value(data))


class DefaultCustomerIdMixin:
    """A new row without customer_id gets the shop's account, as the admin's form pre-fills it.

    Without it the model's default would store an empty id when GOOGLE_ADS_CUSTOMER_ID is unset.
    """

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if self.instance is None and "customer_id" not in attrs:
            default = default_customer_id()
            if not default:
                raise serializers.ValidationError(
                    {"customer_id": [serializers.Field.default_error_messages["required"]]}
                )
            try:
                customer_id_validator(default)
            except DjangoValidationError as err:
                raise serializers.ValidationError({"customer_id": err.messages}) from None
            attrs["customer_id"] = default
        return attrs


class AdGroupRefSerializer(DefaultCustomerIdMixin, serializers.Serializer):
    """An ad group by its account and id (the account defaults to the shop's)."""

    customer_id = CustomerIdField(required=False)
    ad_group_id = serializers.CharField(max_length=20, validators=[ad_group_id_validator])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.instance = None  # each entry is new: the account default applies to each


class AdGroupsOnceMixin:
    """A list of ad groups names each one once."""

    def validate_ad_groups(self, rows: list[dict[str, str]]) -> list[dict[str, str]]:
        """Each ad group once: the table's unique constraint would otherwise fail on save."""
        pairs = [(row["customer_id"], row["ad_group_id"]) for row in rows]
        if len(set(pairs)) != len(pairs):
            raise serializers.ValidationError("Each ad group may appear only once.")
        return rows


class VariantIdsField(serializers.ListField):
    """Shopify variant ids in, the chosen variants' ids out (variants known only by an
    inventory item have no variant id yet and are left out)."""

    child = serializers.IntegerField(min_value=1)

    def to_representation(self, value: Any) -> list[int]:
        return [variant.variant_id for variant in value.all() if variant.variant_id]


class WatchedProductSerializer(AdGroupsOnceMixin, serializers.ModelSerializer):
    """A product whose ad groups pause when it can no longer be sold.

    `variants` are Shopify variant ids (empty: all variants of the product); each must be
    known from the product's webhooks, the picker or the nightly run. `resume_at` empty means
    the same as `pause_at`. `sellable`, `stock` and `reason` are what the stock said the last
    time the product was decided.
    """

    variants = VariantIdsField(required=False, allow_empty=True)
    ad_groups = AdGroupRefSerializer(many=True, allow_empty=False)
    reason = serializers.SerializerMethodField()

    class Meta:
        model = WatchedProduct
        fields = [
            "id",
            "product_id",
            "label",
            "variants",
            "ad_groups",
            "pause_at",
            "resume_at",
            "enabled",
            "sellable",
            "stock",
            "reason",
            "decided_at",
        ]
        read_only_fields = ["sellable", "stock", "decided_at"]
        extra_kwargs = {"product_id": {"required": True, "allow_null": False}}

    def get_reason(self, instance: WatchedProduct) -> str:
        return stock_facts.stored_sellability(instance).reason.text() if instance.decided_at else ""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        pause_at = attrs.get("pause_at", getattr(self.instance, "pause_at", 0))
        resume_at = attrs.get("resume_at", getattr(self.instance, "resume_at", None))
        if resume_at is not None and resume_at < pause_at:
            raise serializers.ValidationError(
                {"resume_at": ["resume_at cannot be below pause_at."]}
            )
        product_id = attrs.get("product_id", getattr(self.instance, "product_id", None))
        if "variants" not in attrs and self.instance is not None and "product_id" in attrs:
            # Another product, the chosen variants kept: they would count for the wrong one.
            foreign = self.instance.variants.exclude(product__product_id=product_id)
            if foreign.exists():
                raise serializers.ValidationError(
                    {
                        "variants": [
                            f"The chosen variants are not of product {product_id}: give its "
                            "variants, or [] for all of them."
                        ]
                    }
                )
        if "variants" in attrs:
            wanted = set(attrs["variants"])
            known = Variant.objects.filter(
                variant_id__in=wanted, product__product_id=product_id, deleted_at__isnull=True
            )
            if len(known) != len(wanted):
                unknown = sorted(wanted - {variant.variant_id for variant in known})
                raise serializers.ValidationError(
                    {
                        "variants": [
                            f"Unknown variants of product {product_id}: {unknown}. Variants are "
                            "known from the product's webhooks, the admin's picker or the "
                            "nightly reconciliation."
                        ]
                    }
                )
            attrs["variants"] = list(known)
        return attrs

    def create(self, validated_data: dict[str, Any]) -> WatchedProduct:
        groups = validated_data.pop("ad_groups")
        variants = validated_data.pop("variants", [])
        with transaction.atomic():
            product = WatchedProduct.objects.create(**validated_data)
            product.variants.set(variants)
            product.ad_groups.set(_ad_groups(groups))
        return product

    def update(self, instance: WatchedProduct, validated_data: dict[str, Any]) -> WatchedProduct:
        groups = validated_data.pop("ad_groups", None)
        variants = validated_data.pop("variants", None)
        with transaction.atomic():
            for name, value in validated_data.items():
                setattr(instance, name, value)
            instance.save()
            if variants is not None:
                instance.variants.set(variants)
            if groups is not None:
                instance.ad_groups.set(_ad_groups(groups))
        return instance


def _ad_groups(rows: list[dict[str, str]]) -> list[AdGroup]:
    """The AdGroup rows for these references, created where missing."""
    return [
        AdGroup.objects.get_or_create(
            customer_id=row["customer_id"], ad_group_id=row["ad_group_id"]
        )[0]
        for row in rows
    ]


class MarginRuleSerializer(serializers.ModelSerializer):
    """The margin of the lines one matcher (variant, product, SKU or vendor) selects."""

    class Meta:
        model = MarginRule
        fields = ["id", "rate", "variant_id", "product_id", "sku", "vendor", "note"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Run MarginRule.clean() (ModelSerializer never does): exactly one matcher."""
        rule = copy(self.instance) if self.instance is not None else MarginRule()
        for name, value in attrs.items():
            setattr(rule, name, value)
        rule.clean()  # DRF turns its ValidationError into a 400
        return attrs


class PromotionAdGroupSerializer(DefaultCustomerIdMixin, serializers.ModelSerializer):
    """An ad group the promotion enables at its start and pauses at its end."""

    customer_id = CustomerIdField(required=False)

    class Meta:
        model = PromotionAdGroup
        fields = ["customer_id", "ad_group_id"]


class PromotionSerializer(AdGroupsOnceMixin, serializers.ModelSerializer):
    """Local start and end as typed; the instants and what ran are read-only."""

    ad_groups = PromotionAdGroupSerializer(many=True, required=False)

    class Meta:
        model = Promotion
        read_only_fields = [
            "start_at",
            "end_at",
            "status",
            "started_at",
            "ended_at",
            "start_late_seconds",
            "end_late_seconds",
            "last_error",
        ]
        fields = [
            "id",
            "name",
            "time_zone",
            "start_date",
            "start_time",
            "end_date",
            "end_time",
            "ad_groups",
            *read_only_fields,
        ]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The admin's PromotionForm decides: zone, both-or-neither, gaps, overlaps, order."""
        fields = PromotionForm.Meta.fields
        current = self.instance if self.instance is not None else Promotion()
        data = {**model_to_dict(current, fields=fields), **attrs}
        form = PromotionForm(data={name: data.get(name) for name in fields})
        if not form.is_valid():
            raise serializers.ValidationError(
                {
                    api_settings.NON_FIELD_ERRORS_KEY if name == "__all__" else name: messages
                    for name, messages in form.errors.items()
                }
            )
        return {**attrs, **{name: form.cleaned_data[name] for name in fields if name in attrs}}

    @transaction.atomic
    def create(self, validated_data: dict[str, Any]) -> Promotion:
        ad_groups = validated_data.pop("ad_groups", [])
        promotion = Promotion(**validated_data)
        promotions.save_and_schedule(promotion)  # schedules after the ad groups commit too
        self._replace_ad_groups(promotion, ad_groups)
        return promotion

    @transaction.atomic
    def update(self, instance: Promotion, validated_data: dict[str, Any]) -> Promotion:
        ad_groups = validated_data.pop("ad_groups", None)
        for name, value in validated_data.items():
            setattr(instance, name, value)
        promotions.save_and_schedule(instance)
        if ad_groups is not None:
            self._replace_ad_groups(instance, ad_groups)
        return instance

    @staticmethod
    def _replace_ad_groups(promotion: Promotion, rows: list[dict[str, str]]) -> None:
        promotion.ad_groups.all().delete()
        PromotionAdGroup.objects.bulk_create(
            PromotionAdGroup(promotion=promotion, **row) for row in rows
        )


class ReasonShown(serializers.Serializer):
    """`reason_shown`: a row's reason in the request's language; `reason` keeps the English."""

    reason_shown = serializers.SerializerMethodField(
        help_text="The reason in the request's language; `reason` keeps the English text."
    )

    def get_reason_shown(self, row: object) -> str:
        return notes.reason_shown(row)


class DeliverySerializer(serializers.ModelSerializer):
    """Metadata only: the raw body may hold personal data and stays in the admin."""

    result_shown = serializers.SerializerMethodField(
        help_text="The result in the request's language; `result` keeps the English text."
    )

    def get_result_shown(self, delivery: Delivery) -> str:
        return notes.shown(delivery.result_note, delivery.result)

    class Meta:
        model = Delivery
        fields = [
            "id",
            "source",
            "shop_domain",
            "topic",
            "webhook_id",
            "event_id",
            "triggered_at",
            "api_version",
            "received_at",
            "status",
            "attempts",
            "result",
            "result_shown",
            "last_error",
            "processed_at",
            "duplicate_count",
        ]
        read_only_fields = fields


class AdGroupActionSerializer(ReasonShown, serializers.ModelSerializer):
    """One status change we asked Google Ads for, and its result."""

    ad_group_name = serializers.CharField(
        read_only=True,
        default="",
        help_text='The ad group\'s name as last seen in Google Ads ("" if not known).',
    )

    class Meta:
        model = AdGroupAction
        fields = [
            "id",
            "customer_id",
            "ad_group_id",
            "ad_group_name",
            "desired_status",
            "reason",
            "reason_shown",
            "source",
            "delivery",
            "result",
            "error",
            "requested_at",
            "applied_at",
        ]
        read_only_fields = fields


class ReminderDecisionSerializer(ReasonShown, serializers.ModelSerializer):
    """What was decided and why; the address only masked, as in the admin and the logs."""

    email = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()

    class Meta:
        model = ReminderDecision
        fields = [
            "id",
            "checkout",
            "checkout_version",
            "email",
            "inputs",
            "margin",
            "discount_cost",
            "delta_plain",
            "delta_discount",
            "arm",
            "reason",
            "reason_shown",
            "decided_at",
            "sent_at",
            "error",
            "converted_at",
            "order_value",
            "attributed_by",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.STR)
    def get_email(self, decision: ReminderDecision) -> str:
        return mask_email(decision.email)

    @extend_schema_field(OpenApiTypes.STR)
    def get_error(self, decision: ReminderDecision) -> str:
        """A mail server's error may quote the recipient: mask it there too."""
        if not decision.email:
            return decision.error
        pattern = re.compile(re.escape(decision.email), re.IGNORECASE)
        return pattern.sub(mask_email(decision.email), decision.error)


# --- query parameters --------------------------------------------------------------------------


@extend_schema_field(OpenApiTypes.STR)  # a date or a date-time: no single format
class InstantField(serializers.DateTimeField):
    """An ISO date-time, or an ISO date meaning that day's local midnight."""

    default_error_messages = {
        "invalid": "Give an ISO date (2026-05-01) or date-time (2026-05-01T10:00:00+02:00)."
    }

    def to_internal_value(self, value: Any) -> datetime:
        try:
            day = date.fromisoformat(str(value))
        except ValueError:
            return super().to_internal_value(value)
        return super().to_internal_value(datetime.combine(day, time()))


class QueryFilter(serializers.Serializer):
    """Validated query parameters mapped onto ORM lookups: a bad value is a 400, not a 500."""

    lookups: dict[str, str] = {}

    def apply(self, queryset: QuerySet) -> QuerySet:
        """The queryset narrowed by every parameter given."""
        self.is_valid(raise_exception=True)
        return queryset.filter(
            **{self.lookups.get(name, name): value for name, value in self.validated_data.items()}
        )


class DeliveryFilter(QueryFilter):
    status = serializers.ChoiceField(choices=Delivery.Status.choices, required=False)
    topic = serializers.CharField(required=False)
    source = serializers.ChoiceField(choices=Delivery.Source.choices, required=False)
    received_after = InstantField(
        required=False, help_text="Received at or after this (a date: its local midnight)."
    )
    received_before = InstantField(
        required=False, help_text="Received before this (a date: its local midnight)."
    )

    lookups = {"received_after": "received_at__gte", "received_before": "received_at__lt"}


class AdGroupActionFilter(QueryFilter):
    ad_group_id = serializers.CharField(required=False)
    source = serializers.ChoiceField(choices=AdGroupAction.Source.choices, required=False)
    result = serializers.ChoiceField(choices=AdGroupAction.Result.choices, required=False)
