"""The reminders' pages: their settings and mail (with a preview), margins, decisions,
checkouts, claims and suppressed addresses."""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext_lazy as _

from automation.models import (
    CheckoutState,
    Claim,
    MarginRule,
    Product,
    ReminderDecision,
    ReminderSettings,
    SuppressedAddress,
    Variant,
)
from automation.platform.display_names import item_name, named, variant_names_of_row
from automation.platform.pseudonyms import mask_email
from automation.reminders import mail as reminder_mail
from automation.reminders.mail_text import PLACEHOLDERS
from automation.ui.admin.base import (
    GERMAN_DECIMALS,
    OwnPagesMixin,
    ReadOnlyAdmin,
    ReasonShownMixin,
    SingletonSettingsAdmin,
)
from automation.ui.setup import failures

PREVIEW_ADDRESS = "kundin@example.com"


"""Who the preview is addressed to when the signed-in user has no address."""


def preview_arms(config: ReminderSettings) -> list[str]:
    """The reminders the preview can show: plain, and with discount once a code is set."""
    arms = [ReminderDecision.Arm.PLAIN.value]
    if config.discount_code.strip():
        arms.append(ReminderDecision.Arm.DISCOUNT.value)
    return arms


def _user_url(request: HttpRequest) -> str:
    """The signed-in user's own admin page, where the e-mail address is entered."""
    meta = request.user._meta
    try:
        return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[request.user.pk])
    except NoReverseMatch:
        return ""


@admin.register(ReminderSettings)
class ReminderSettingsAdmin(OwnPagesMixin, SingletonSettingsAdmin):
    """One row; the list view goes straight to it and warns when no imprint or no discount code
    is set; the preview shows the mail as sent and sends it to the signed-in user."""

    own_pages = (
        ("preview/", "preview_view", "automation_remindersettings_preview"),
        ("preview/test/", "test_mail_view", "automation_remindersettings_test_mail"),
    )

    formfield_overrides = GERMAN_DECIMALS

    fieldsets = (
        (_("When"), {"fields": ("reminder_delay_minutes", "frequency_cap_days")}),
        (
            _("Expected value"),
            {"fields": ("p0", "p_plain", "p_discount", "default_margin_rate")},
        ),
        (_("Discount"), {"fields": ("discount_code", "discount_rate", "discount_cooldown_days")}),
        (
            _("Measuring"),
            {
                "fields": (
                    "holdout_share",
                    "holdout_salt",
                    "attribution_window_days",
                    "probabilities_from",
                    "min_decisions_per_arm",
                ),
                "description": _(
                    "A random share of the checkouts that would get a reminder gets none; "
                    "comparing them shows what reminders really add. The dashboard shows the "
                    "measured rates beside the configured ones."
                ),
            },
        ),
    )

    def get_fieldsets(self, request: HttpRequest, obj=None):
        mail = (
            _("Reminder mail"),
            {
                "fields": (
                    "mail_sender_name",
                    "mail_subject",
                    "mail_greeting",
                    "mail_body",
                    "mail_imprint",
                ),
                "description": _(
                    "Your text, as plain text. The imprint and the unsubscribe link end every "
                    "reminder, whatever the text says. The preview shows the mail as it is sent."
                ),
            },
        )
        return (*self.fieldsets, mail)

    def _settings_to_preview(self, request: HttpRequest) -> tuple[ReminderSettings, object]:
        """The saved settings, or the unsaved values the change form posted (`_draft`), with
        that form (None without a draft); a draft that does not validate shows the saved
        settings beside the form's errors. Nothing is saved."""
        config = ReminderSettings.load()
        if request.method != "POST" or "_draft" not in request.POST:
            return config, None
        if not self.has_change_permission(request, config):
            raise PermissionDenied
        form = self.get_form(request, config, change=True)(request.POST, instance=config)
        if form.is_valid():
            return form.save(commit=False), form
        return ReminderSettings.load(), form

    def preview_view(self, request: HttpRequest) -> HttpResponse:
        """The reminder as it would be sent now, with a sample basket, in both parts."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        config, draft = self._settings_to_preview(request)
        arms = preview_arms(config)
        arm = request.POST.get("arm") or request.GET.get("arm", arms[-1])
        if arm not in arms:
            raise Http404
        address = request.user.email or PREVIEW_ADDRESS
        rendered = reminder_mail.render(reminder_mail.sample_checkout(address), arm, config)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Preview of the reminder"),
            "rendered": rendered,
            "to": address,
            "arm": arm,
            "arms": [(value, ReminderDecision.Arm(value).label) for value in arms],
            "imprint_missing": reminder_mail.imprint_missing(config),
            "settings_url": reverse("admin:automation_remindersettings_change", args=[config.pk]),
            "can_send": self.has_change_permission(request),
            "has_address": bool(request.user.email),
            "user_url": _user_url(request),
            "placeholders": [(f"{{{name}}}", text) for name, text in PLACEHOLDERS.items()],
            "draft": draft,
            "draft_fields": [
                (name, value)
                for name, values in request.POST.lists()
                if name not in ("csrfmiddlewaretoken", "arm", "_draft")
                for value in values
            ]
            if draft is not None and draft.is_valid()
            else [],
        }
        return TemplateResponse(request, "admin/automation/remindersettings/preview.html", context)

    def test_mail_view(self, request: HttpRequest) -> HttpResponse:
        """POST: the preview as a mail to the signed-in user's own address."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_change_permission(request):
            raise PermissionDenied
        config, draft = self._settings_to_preview(request)
        if draft is not None and not draft.is_valid():
            raise PermissionDenied  # the preview offers no test of a draft that failed
        arm = request.POST.get("arm", "")
        if arm not in preview_arms(config):
            raise Http404
        back = f"{reverse('admin:automation_remindersettings_preview')}?{urlencode({'arm': arm})}"
        address = request.user.email
        if not address:
            self.message_user(
                request,
                _(
                    "Your user account has no e-mail address: enter it on your user page "
                    "(“Users” in the menu, or the link on this page), then send the test again."
                ),
                messages.ERROR,
            )
            return redirect(back)
        try:
            reminder_mail.send_preview(
                config, arm, address, timeout=settings.VENDOR_INTERACTIVE_TIMEOUT
            )
        except Exception as err:  # noqa: BLE001 (shown to the merchant, who may retry)
            self.message_user(request, failures.explain(err), messages.ERROR)
            return redirect(back)
        self.message_user(request, _("Test reminder sent to %(address)s.") % {"address": address})
        return redirect(back)

    def change_view(self, request: HttpRequest, object_id, form_url="", extra_context=None):
        config = ReminderSettings.load()
        if reminder_mail.imprint_missing(config):
            self.message_user(
                request,
                _("No imprint: no reminder is sent until you enter it under “Reminder mail”."),
                messages.ERROR,
            )
        if not config.discount_code.strip():
            self.message_user(
                request,
                _(
                    "No discount code configured: reminders are sent without a discount until "
                    "you enter one."
                ),
                messages.WARNING,
            )
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(MarginRule)
class MarginRuleAdmin(admin.ModelAdmin):
    formfield_overrides = GERMAN_DECIMALS
    list_display = ("__str__", "rate", "variant", "product", "sku", "vendor", "note")
    list_editable = ("rate",)
    search_fields = ("sku", "vendor", "note")

    def get_queryset(self, request: HttpRequest) -> QuerySet[MarginRule]:
        """The variant and product names from the catalogue, in the list's one query."""
        variant = Variant.objects.filter(variant_id=OuterRef("variant_id"))
        product = Product.objects.filter(product_id=OuterRef("product_id"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                **variant_names_of_row(variant, product_title="variant_product_title"),
                product_title=Subquery(product.values("title")[:1]),
            )
        )

    @admin.display(description=_("variant"), ordering="variant_id")
    def variant(self, obj: MarginRule) -> str:
        if obj.variant_id is None:
            return "–"
        title = item_name(
            getattr(obj, "variant_product_title", None),
            getattr(obj, "variant_title", None),
            getattr(obj, "variant_sku", None),
        )
        return named(title, obj.variant_id)

    @admin.display(description=_("product"), ordering="product_id")
    def product(self, obj: MarginRule) -> str:
        if obj.product_id is None:
            return "–"
        return named(getattr(obj, "product_title", None), obj.product_id)


@admin.register(ReminderDecision)
class ReminderDecisionAdmin(ReasonShownMixin, ReadOnlyAdmin):
    list_display = (
        "decided_at",
        "masked_email",
        "arm",
        "reason_shown",
        "margin",
        "delta_plain",
        "delta_discount",
        "sent_at",
    )
    list_filter = ("arm", ("sent_at", admin.EmptyFieldListFilter))
    search_fields = ("email", "checkout__token")
    date_hierarchy = "decided_at"
    list_select_related = ("checkout",)

    @admin.display(description=_("e-mail"))
    def masked_email(self, obj: ReminderDecision) -> str:
        return mask_email(obj.email)


@admin.register(CheckoutState)
class CheckoutStateAdmin(ReadOnlyAdmin):
    list_display = (
        "token",
        "source",
        "masked_email",
        "accepts_marketing",
        "total_price",
        "currency",
        "updated_at",
        "completed_at",
    )
    list_filter = ("source", "accepts_marketing", ("completed_at", admin.EmptyFieldListFilter))
    search_fields = ("token", "email")

    @admin.display(description=_("e-mail"))
    def masked_email(self, obj: CheckoutState) -> str:
        return mask_email(obj.email)


@admin.register(Claim)
class ClaimAdmin(ReadOnlyAdmin):
    list_display = ("key", "created_at", "expires_at")
    search_fields = ("key",)


class SuppressionReasonFilter(admin.SimpleListFilter):
    """The written reasons by their labels; the merchant's own texts are searched, not listed."""

    title = _("reason")
    parameter_name = "reason"

    def lookups(self, request, model_admin):
        return SuppressedAddress.Reason.choices

    def queryset(self, request, queryset):
        return queryset.filter(reason=self.value()) if self.value() else queryset


@admin.register(SuppressedAddress)
class SuppressedAddressAdmin(admin.ModelAdmin):
    list_display = ("email", "why", "detail", "created_at")
    list_filter = (SuppressionReasonFilter,)
    search_fields = ("email",)

    @admin.display(description=_("reason"), ordering="reason")
    def why(self, obj: SuppressedAddress) -> str:
        """A written reason's label (hard bounce, complaint); the merchant's own text as is."""
        try:
            return SuppressedAddress.Reason(obj.reason).label
        except ValueError:
            return obj.reason
