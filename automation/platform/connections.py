"""The connection settings in force, and where each comes from: the one accessor.

An environment variable wins over what the set-up page stored (12-factor deployments keep
working unchanged, and the page says which values it cannot change); otherwise the stored row,
its secrets unsealed (automation.platform.secret_box). Reading never creates the row. What was read
is kept for a few seconds per process, so a request or a job that asks often asks the database
once; `store` forgets it at once in its own process.
"""

from __future__ import annotations

import enum
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from automation.models.connections import ConnectionSettings
from automation.platform import secret_box

CACHE_SECONDS = 5.0
"""How long a process keeps the stored row it read; another process's save shows after this."""


class Source(enum.StrEnum):
    """Where a value in force comes from."""

    ENVIRONMENT = "environment"
    DATABASE = "database"
    UNSET = "unset"


@dataclass(frozen=True)
class Field:
    """One setting: its environment variable (the settings name), its column, sealed or not."""

    name: str
    env_name: str
    column: str
    secret: bool


FIELDS: dict[str, Field] = {
    f.name: f
    for f in (
        Field("shopify_client_id", "SHOPIFY_CLIENT_ID", "shopify_client_id", False),
        Field(
            "shopify_client_secret",
            "SHOPIFY_CLIENT_SECRET",
            "shopify_client_secret_sealed",
            True,
        ),
        Field("shopify_admin_token", "SHOPIFY_ADMIN_TOKEN", "shopify_admin_token_sealed", True),
        Field("stripe_api_key", "STRIPE_API_KEY", "stripe_api_key_sealed", True),
        Field(
            "stripe_webhook_secret",
            "STRIPE_WEBHOOK_SECRETS",
            "stripe_webhook_secret_sealed",
            True,
        ),
        Field(
            "google_ads_developer_token",
            "GOOGLE_ADS_DEVELOPER_TOKEN",
            "google_ads_developer_token_sealed",
            True,
        ),
        Field("google_ads_client_id", "GOOGLE_ADS_CLIENT_ID", "google_ads_client_id", False),
        Field(
            "google_ads_client_secret",
            "GOOGLE_ADS_CLIENT_SECRET",
            "google_ads_client_secret_sealed",
            True,
        ),
        Field(
            "google_ads_refresh_token",
            "GOOGLE_ADS_REFRESH_TOKEN",
            "google_ads_refresh_token_sealed",
            True,
        ),
        Field(
            "google_ads_login_customer_id",
            "GOOGLE_ADS_LOGIN_CUSTOMER_ID",
            "google_ads_login_customer_id",
            False,
        ),
        Field("google_ads_customer_id", "GOOGLE_ADS_CUSTOMER_ID", "google_ads_customer_id", False),
    )
}


@dataclass(frozen=True)
class Value:
    """A setting in force. `unreadable`: a stored secret no configured key opens."""

    value: str
    source: Source
    env_name: str
    unreadable: bool = False

    def __bool__(self) -> bool:
        return bool(self.value)

    def __str__(self) -> str:
        return self.value

    @property
    def from_environment(self) -> bool:
        return self.source is Source.ENVIRONMENT


@dataclass(frozen=True)
class Connection:
    """Every connection setting in force (see FIELDS)."""

    shopify_client_id: Value
    shopify_client_secret: Value
    shopify_admin_token: Value
    stripe_api_key: Value
    stripe_webhook_secret: Value
    google_ads_developer_token: Value
    google_ads_client_id: Value
    google_ads_client_secret: Value
    google_ads_refresh_token: Value
    google_ads_login_customer_id: Value
    google_ads_customer_id: Value


_lock = threading.Lock()
_cached: tuple[float, dict[str, str]] | None = None
_seen_secrets: set[str] = set()
"""Every stored secret this process has unsealed or sealed: what its log lines must mask."""


def seen_secrets() -> list[str]:
    """The stored secrets this process holds (never asks the database: the log filter calls
    this for every record, in any thread)."""
    with _lock:
        return list(_seen_secrets)


def _remember(secret: str) -> None:
    if secret:
        with _lock:
            _seen_secrets.add(secret)


def _stored_columns() -> dict[str, str]:
    """The stored row's columns ({} without a row), read at most every CACHE_SECONDS."""
    global _cached
    with _lock:
        if _cached is not None and time.monotonic() - _cached[0] < CACHE_SECONDS:
            return _cached[1]
    columns = [f.column for f in FIELDS.values()]
    row = ConnectionSettings.objects.filter(pk=1).values(*columns).first() or {}
    with _lock:
        _cached = (time.monotonic(), row)
    return row


def forget() -> None:
    """Read the row again next time (after a save, or between tests)."""
    global _cached
    with _lock:
        _cached = None


def _environment(field: Field) -> str:
    """The field's environment value; of a list setting (STRIPE_WEBHOOK_SECRETS, rotation) the
    first, the one in force for the page (verifying uses all of them: stripe_webhook_secrets)."""
    value = getattr(settings, field.env_name, "") or ""
    if isinstance(value, list | tuple):
        value = next((item for item in value if item), "")
    return str(value)


def _value(field: Field, stored: dict[str, str]) -> Value:
    env_value = _environment(field)
    if env_value:
        return Value(env_value, Source.ENVIRONMENT, field.env_name)
    raw = stored.get(field.column) or ""
    if not raw:
        return Value("", Source.UNSET, field.env_name)
    if not field.secret:
        return Value(raw, Source.DATABASE, field.env_name)
    try:
        plain = secret_box.reveal(raw)
    except secret_box.SecretUnreadable:
        return Value("", Source.UNSET, field.env_name, unreadable=True)
    _remember(plain)
    return Value(plain, Source.DATABASE, field.env_name)


def current() -> Connection:
    """The settings in force: environment first, else the stored row."""
    stored = _stored_columns()
    return Connection(**{name: _value(field, stored) for name, field in FIELDS.items()})


def shopify_webhook_secrets() -> list[str]:
    """The secrets a Shopify webhook may be signed with: SHOPIFY_WEBHOOK_SECRETS when set (the
    environment wins), else the app's client secret entered on the page (Shopify signs
    webhooks with the app's client secret)."""
    if settings.SHOPIFY_WEBHOOK_SECRETS:
        return list(settings.SHOPIFY_WEBHOOK_SECRETS)
    stored = current().shopify_client_secret
    return [stored.value] if stored.source is Source.DATABASE and stored.value else []


def stripe_webhook_secrets() -> list[str]:
    """The secrets a Stripe event may be signed with: STRIPE_WEBHOOK_SECRETS when set (the
    environment wins, every entry: rotation), else the signing secret entered on the page."""
    if settings.STRIPE_WEBHOOK_SECRETS:
        return [secret for secret in settings.STRIPE_WEBHOOK_SECRETS if secret]
    stored = current().stripe_webhook_secret
    return [stored.value] if stored.source is Source.DATABASE and stored.value else []


def store(**changes: str) -> None:
    """Save the given settings (secrets sealed; "" clears one). Names are FIELDS' keys."""
    unknown = set(changes) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown connection settings: {sorted(unknown)}")
    with transaction.atomic():
        row, _ = ConnectionSettings.objects.select_for_update().get_or_create(pk=1)
        for name, value in changes.items():
            field = FIELDS[name]
            if field.secret:
                _remember(value)
            setattr(row, field.column, secret_box.seal(value) if field.secret else value)
        row.save()
    forget()
    transaction.on_commit(forget)
