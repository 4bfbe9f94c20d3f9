"""What every admin page here shares: read-only lists, reasons in the reader's language,
one-row settings."""

from django.contrib import admin
from django.db import models
from django.http import HttpRequest
from django.shortcuts import redirect
from django.urls import path
from django.utils.translation import gettext_lazy as _

from automation.platform import notes
from automation.ui.admin_forms import LocalizedDecimalField

GERMAN_DECIMALS = {models.DecimalField: {"form_class": LocalizedDecimalField}}
"""Decimal fields shown and taken as the merchant writes them ("0,04"): LocalizedDecimalField."""


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records the merchant reads but never edits or deletes (no delete action either)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class ReasonShownMixin:
    """A row's reason in the reader's language, in the list and on the (read-only) page: the
    stored text is English, its note is rendered when shown."""

    exclude = ("reason", "reason_note")
    readonly_fields = ("reason_shown",)

    @admin.display(description=_("reason"), ordering="reason")
    def reason_shown(self, obj: models.Model) -> str:
        return notes.reason_shown(obj)


class SingletonSettingsAdmin(admin.ModelAdmin):
    """A settings model with one row (`SingletonSettings`): the list view goes straight to it,
    and it can be neither added twice nor deleted."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not self.model.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context=None):
        meta = self.model._meta
        return redirect(f"admin:{meta.app_label}_{meta.model_name}_change", self.model.load().pk)


class OwnPagesMixin:
    """A ModelAdmin's own pages: `own_pages` lists (route, view method, URL name), served behind
    the site's login and permission check (`admin_view`), ahead of the standard ones."""

    own_pages: tuple[tuple[str, str, str], ...] = ()

    def get_urls(self):
        own = [
            path(route, self.admin_site.admin_view(getattr(self, view)), name=name)
            for route, view, name in self.own_pages
        ]
        return own + super().get_urls()
