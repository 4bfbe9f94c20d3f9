"""Django settings for Elbkerzen Automation: the only module that reads the environment."""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
# The local defaults (.env.local, committed): the one place `make run` and a direct
# `python manage.py ...` take DEBUG, the demo webhook secrets and the metrics directory from.
# Read only while no SECRET_KEY is set: a deployment must set one, so it never reads them.
LOCAL_DEFAULTS = BASE_DIR / ".env.local"
if not env.str("SECRET_KEY", default="") and LOCAL_DEFAULTS.is_file():
    environ.Env.read_env(LOCAL_DEFAULTS, overwrite=False)
    # prometheus_client reads the variable itself: made absolute, one directory for every process.
    metrics_dir = BASE_DIR / env.str("PROMETHEUS_MULTIPROC_DIR", default="var/prometheus")
    metrics_dir.mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)

DEBUG = env.bool("DEBUG", default=False)

SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("set SECRET_KEY (or DEBUG=1 for a local development key)")
    SECRET_KEY = "django-insecure-local-development-only"
# Old keys while rotating SECRET_KEY: sessions and unsubscribe links made with them still work.
SECRET_KEY_FALLBACKS = env.list("SECRET_KEY_FALLBACKS", default=[])

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    # django.contrib.admin with the shop's site (sections, technical records for superusers)
    "automation.ui.admin_site.ShopAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_rq",
    "axes",
    "anymail",
    "automation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # After sign-in, a staff user without an address is asked for one once (alerts reach them).
    "automation.ui.setup.first_login.FirstLoginMiddleware",
    # Last, as django-axes asks: it turns a lockout flagged during the login into a 429.
    "axes.middleware.AxesMiddleware",
]

# django-axes' backend first: it refuses a locked-out username before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "elbkerzen.urls"
WSGI_APPLICATION = "elbkerzen.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # The notice bar of the admin's pages (lazy: read only where it is shown).
                "automation.ui.notices.context",
            ],
        },
    },
]

# Persistent connections: opening a connection per request, not the INSERT, dominated the
# intake's cost (docs/PERFORMANCE.md, "Persistent database connections").
DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'var' / 'db.sqlite3'}")
}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=600)
# No health-check SELECT 1 before each request and job: it cost a round trip every time. A
# connection broken by a PostgreSQL restart fails one request (503: the sender retries) or one
# job attempt (RQ retries), and Django drops it afterwards.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env.bool("DATABASE_CONN_HEALTH_CHECKS", default=False)
# Seconds to open a PostgreSQL connection (libpq's connect_timeout; at least 2).
DATABASE_CONNECT_TIMEOUT = env.int("DATABASE_CONNECT_TIMEOUT", default=5)
# PostgreSQL waits forever for a lock or a statement unless told (both default to 0). The
# intake's write transaction waits at most INTAKE_DB_LOCK_TIMEOUT_MS for a lock and
# INTAKE_DB_STATEMENT_TIMEOUT_MS per statement, then answers 503 (the sender retries, nothing
# is lost) well within Shopify's 5 s; an RQ worker's connection gets the longer WORKER_* ones.
# Milliseconds; 0 turns one off. automation/platform/db_timeouts.py applies them.
INTAKE_DB_LOCK_TIMEOUT_MS = env.int("INTAKE_DB_LOCK_TIMEOUT_MS", default=300)
INTAKE_DB_STATEMENT_TIMEOUT_MS = env.int("INTAKE_DB_STATEMENT_TIMEOUT_MS", default=2000)
WORKER_DB_LOCK_TIMEOUT_MS = env.int("WORKER_DB_LOCK_TIMEOUT_MS", default=30_000)
WORKER_DB_STATEMENT_TIMEOUT_MS = env.int("WORKER_DB_STATEMENT_TIMEOUT_MS", default=120_000)
# This process serves only the webhook pool (compose's `webhooks`: /webhooks/, /anymail/,
# /unsubscribe/, /healthz, /metrics), none of it a page that runs long statements: its
# PostgreSQL connections get the intake's limits when they connect (below).
WEBHOOK_POOL = env.bool("WEBHOOK_POOL", default=False)
for _name in (
    "INTAKE_DB_LOCK_TIMEOUT_MS",
    "INTAKE_DB_STATEMENT_TIMEOUT_MS",
    "WORKER_DB_LOCK_TIMEOUT_MS",
    "WORKER_DB_STATEMENT_TIMEOUT_MS",
):
    if vars()[_name] < 0:
        raise ImproperlyConfigured(f"set {_name} to 0 (no limit) or a number of milliseconds")
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # psycopg prepares a statement after this many runs on a connection; only the statements
    # `automation.platform.rows` sends on psycopg's own cursor qualify (Django's cursors bind
    # client-side and never prepare): the intake's INSERT then skips PostgreSQL's parse and plan.
    # Off (`DATABASE_PREPARED_STATEMENTS=false`) behind a PgBouncer in transaction mode before 1.21.
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = (
        5 if env.bool("DATABASE_PREPARED_STATEMENTS", default=True) else None
    )
    # libpq waits forever for a server that accepts the connection and never answers.
    DATABASES["default"]["OPTIONS"]["connect_timeout"] = DATABASE_CONNECT_TIMEOUT
    if WEBHOOK_POOL:
        # The webhook pool's connections carry the intake's limits from the moment they connect,
        # so storing a delivery is one autocommit INSERT, not BEGIN, SET LOCAL, INSERT, COMMIT
        # (docs/PERFORMANCE.md, "The intake's limits on the connection"). Behind PgBouncer in
        # transaction mode, list `options` in its ignore_startup_parameters and set the limits
        # on the pool's database role instead (docs/OPERATIONS.md, "Timeouts").
        DATABASES["default"]["OPTIONS"]["options"] = (
            f"-c lock_timeout={INTAKE_DB_LOCK_TIMEOUT_MS}ms"
            f" -c statement_timeout={INTAKE_DB_STATEMENT_TIMEOUT_MS}ms"
        )
elif DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and cron share one file: wait for the writer instead of failing at once.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "var" / "test.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The merchant's admin speaks German; English stays available (browser language or ?lang).
LANGUAGE_CODE = env.str("LANGUAGE_CODE", default="de")
LANGUAGES = [("de", "Deutsch"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env.str("TIME_ZONE", default="Europe/Berlin")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "var" / "static")
# gunicorn serves the admin's and Swagger's static files itself through WhiteNoise.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- REST API: token authentication, staff with the model's permissions -------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "automation.ui.api.authentication.ThrottledTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Both must pass: staff, and the Django permission the admin would ask for (view for reads).
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAdminUser",
        "automation.ui.api.permissions.ModelPermissions",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # DRF's defaults, with a JSON parser that answers absurd nesting with 400, not 500.
    "DEFAULT_PARSER_CLASSES": [
        "automation.ui.api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Page size and its maximum: automation/ui/api/pagination.py.
    "DEFAULT_PAGINATION_CLASS": "automation.ui.api.pagination.LimitOffsetPagination",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Elbkerzen Automation API",
    "DESCRIPTION": "Watched items, margin rules, promotions, deliveries and what was decided.",
    "VERSION": "1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI from our own static files: the browsable schema works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Brute-force protection -------------------------------------------------------------------
# Reverse proxies in front of gunicorn that set or append the caller's address in
# X-Forwarded-For (nginx: `$remote_addr` or `$proxy_add_x_forwarded_for`). 0: the caller is
# REMOTE_ADDR and X-Forwarded-For is ignored, since anyone can send one. N: the N-th address
# from the right, the one our own outermost proxy saw (automation/ui/api/authentication.client_ip).
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
# django-axes (https://django-axes.readthedocs.io/en/latest/4_configuration.html): after
# AXES_FAILURE_LIMIT wrong passwords for one username from one address, that pair is refused
# with 429 for AXES_COOLOFF_TIME. Username and address together, so a stranger cannot lock the
# merchant out from the shop's own network. `manage.py axes_reset` lifts every lockout.
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
# In hours: axes reads a float as hours.
AXES_COOLOFF_TIME = env.int("LOGIN_COOLOFF_MINUTES", default=15) / 60
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "automation.ui.api.authentication.client_ip"
# Wrong API tokens: after API_AUTH_FAILURE_LIMIT of them from one address within
# API_AUTH_FAILURE_WINDOW seconds, every token from that address (a correct one too) gets 429
# with Retry-After until the window ends. Counted in Redis, shared by all gunicorn workers.
API_AUTH_FAILURE_LIMIT = env.int("API_AUTH_FAILURE_LIMIT", default=10)
API_AUTH_FAILURE_WINDOW = env.int("API_AUTH_FAILURE_WINDOW", default=60)

# --- Redis and RQ -------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")
# django-rq builds the worker's and the dashboard's clients from the URL alone; redis-py reads
# socket timeouts from its query (redis-py's `from_url`). RQ raises a worker's read timeout
# above its blocking dequeue by itself (`BaseWorker._set_connection` in rq.worker.base).
REDIS_CONNECT_TIMEOUT = env.float("REDIS_CONNECT_TIMEOUT", default=1.0)
REDIS_SOCKET_TIMEOUT = env.float("REDIS_SOCKET_TIMEOUT", default=5.0)


def _with_timeouts(url: str) -> str:
    """`url` with redis-py's socket timeouts in its query, unless it names them itself."""
    wanted = {
        "socket_connect_timeout": REDIS_CONNECT_TIMEOUT,
        "socket_timeout": REDIS_SOCKET_TIMEOUT,
    }
    extra = "&".join(f"{key}={value}" for key, value in wanted.items() if f"{key}=" not in url)
    if not extra:
        return url
    return f"{url}{'&' if '?' in url else '?'}{extra}"


RQ_QUEUES = {
    "default": {
        "URL": _with_timeouts(REDIS_URL),
        "DEFAULT_TIMEOUT": env.int("RQ_DEFAULT_TIMEOUT", default=180),
    },
}
RQ_SHOW_ADMIN_LINK = True

# --- Webhook intake -------------------------------------------------------------------------
SHOPIFY_WEBHOOK_SECRETS = env.list("SHOPIFY_WEBHOOK_SECRETS", default=[])
SHOPIFY_SHOP_DOMAINS = env.list("SHOPIFY_SHOP_DOMAINS", default=["elbkerzen.myshopify.com"])
STRIPE_WEBHOOK_SECRETS = env.list("STRIPE_WEBHOOK_SECRETS", default=[])
STRIPE_WEBHOOK_TOLERANCE = env.int("STRIPE_WEBHOOK_TOLERANCE", default=300)
# The Checkout Session metadata key carrying the shop's own marketing opt-in (true/yes/1/opt_in).
STRIPE_CONSENT_METADATA_KEY = env.str("STRIPE_CONSENT_METADATA_KEY", default="marketing_consent")
WEBHOOK_MAX_BODY_BYTES = env.int("WEBHOOK_MAX_BODY_BYTES", default=5 * 1024 * 1024)
# A sender's timestamp (a level's, a product's, a checkout's `updated_at`, …) more than this many
# seconds ahead of our clock is refused as invalid: the stale guards keep the newest one seen,
# so a far-future one would freeze its item. Room for the senders' clock skew.
WEBHOOK_MAX_FUTURE_SECONDS = env.int("WEBHOOK_MAX_FUTURE_SECONDS", default=300)
# request.body refuses larger bodies with a 400 before our 413 check could answer.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(WEBHOOK_MAX_BODY_BYTES + 1, 2_621_440)
# Waits between the attempts of a failing delivery job (RQ Retry); one more attempt than waits.
DELIVERY_RETRY_INTERVALS = env.list(
    "DELIVERY_RETRY_INTERVALS", cast=int, default=[10, 60, 300, 900, 3600]
)
# Waits between the attempts of a promotion start or end whose Ads call failed transiently
# (RQ Retry); the minute check (promotions.catch_up) also tries again. Unset: the deliveries'
# table, which promotions used before they had their own.
PROMOTION_RETRY_INTERVALS = env.list(
    "PROMOTION_RETRY_INTERVALS", cast=int, default=list(DELIVERY_RETRY_INTERVALS)
)
# After this many seconds without a live job in Redis, the sweeper takes over a delivery still
# `received` or `failed`, and a reminder evaluation past its due time.
DELIVERY_SWEEP_AFTER = env.int("DELIVERY_SWEEP_AFTER", default=60)
# A job whose topic supersedes itself (stock levels) takes up to this many waiting deliveries of
# its shop and topic along (its own included): a burst is worked off in a few jobs, the others'
# jobs find theirs taken. 1 turns it off. bench/worker.py measures what it saves.
DELIVERY_BATCH_SIZE = env.int("DELIVERY_BATCH_SIZE", default=100)
if DELIVERY_BATCH_SIZE < 1:
    raise ImproperlyConfigured("set DELIVERY_BATCH_SIZE to 1 (no batches) or more")
# And takes followers along only while their stored bodies, with its own, stay within this many
# bytes: a burst of large bodies is not loaded (and parsed) all at once by one worker.
DELIVERY_BATCH_MAX_BYTES = env.int("DELIVERY_BATCH_MAX_BYTES", default=1024 * 1024)
if DELIVERY_BATCH_MAX_BYTES < 1:
    raise ImproperlyConfigured("set DELIVERY_BATCH_MAX_BYTES to 1 or more")
# Raw bodies are dropped after this many days by the nightly run; the metadata stays.
DELIVERY_RETENTION_DAYS = env.int("DELIVERY_RETENTION_DAYS", default=30)

# --- Shopify Admin API (nightly reconciliation, webhook subscription healing) ----------------
# Apps created in the Shopify admin (before 2026): their static Admin API token. Wins when set.
SHOPIFY_ADMIN_TOKEN = env.str("SHOPIFY_ADMIN_TOKEN", default="")
# Dev Dashboard apps (all new apps since 2026-01-01): the client id; with the secret below we fetch
# 24-hour tokens by the client credentials grant and share them through Redis.
SHOPIFY_CLIENT_ID = env.str("SHOPIFY_CLIENT_ID", default="")
# The app's client secret; it is also the webhook signing secret, hence the default.
SHOPIFY_CLIENT_SECRET = env.str(
    "SHOPIFY_CLIENT_SECRET", default=next(iter(SHOPIFY_WEBHOOK_SECRETS), "")
)
# Who owns the webhook subscriptions: `api` (we check them nightly and re-create missing ones) or
# `toml` (declared in the app's shopify.app.toml; Shopify does not list those, so we never create).
SHOPIFY_WEBHOOKS_MANAGED_BY = env.str("SHOPIFY_WEBHOOKS_MANAGED_BY", default="api").strip().lower()
if SHOPIFY_WEBHOOKS_MANAGED_BY not in ("api", "toml"):
    raise ImproperlyConfigured(
        f"SHOPIFY_WEBHOOKS_MANAGED_BY must be 'api' or 'toml', not {SHOPIFY_WEBHOOKS_MANAGED_BY!r}"
    )
SHOPIFY_API_VERSION = env.str("SHOPIFY_API_VERSION", default="2026-07")
SHOPIFY_ADMIN_URL = env.str(
    "SHOPIFY_ADMIN_URL", default=f"https://{(SHOPIFY_SHOP_DOMAINS or ['localhost'])[0]}"
).rstrip("/")
# The one shop (myshopify domain) the Admin API credentials above belong to; unset: the host of
# SHOPIFY_ADMIN_URL. Set it only when that URL is not the shop's own (a proxy, a stand-in): a
# shop/redact of any other shop is refused, since only its own credentials can confirm it.
SHOPIFY_ADMIN_SHOP = env.str("SHOPIFY_ADMIN_SHOP", default="").strip().lower()

PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")

# A vendor call a page waits on (the admin's product and ad group pickers, a save that asks
# Shopify for a product's variants): seconds each call may take. A sync web worker waits that
# long, so it stays short; jobs keep their own budgets (ADS_CALL_TIMEOUT, the job timeouts).
VENDOR_INTERACTIVE_TIMEOUT = env.float("VENDOR_INTERACTIVE_TIMEOUT", default=4.0)
if VENDOR_INTERACTIVE_TIMEOUT <= 0:
    raise ImproperlyConfigured("set VENDOR_INTERACTIVE_TIMEOUT to a number of seconds above 0")

# --- Google Ads -------------------------------------------------------------------------------
# `dryrun` records what would be sent; `google` calls the API with the client's own GOOGLE_ADS_*
# variables (or GOOGLE_ADS_CONFIGURATION_FILE_PATH), login_customer_id included.
ADS_BACKEND = env.str("ADS_BACKEND", default="dryrun")
GOOGLE_ADS_CUSTOMER_ID = env.str("GOOGLE_ADS_CUSTOMER_ID", default="").replace("-", "")
# The SDK requires use_proto_plus; this one applies when the client is configured through
# GOOGLE_ADS_* variables (a YAML file's own `use_proto_plus` key wins). Both settings work.
GOOGLE_ADS_USE_PROTO_PLUS = env.bool("GOOGLE_ADS_USE_PROTO_PLUS", default=True)
# The client's credentials from the environment; each wins over what the set-up page stored
# (automation/platform/connections.py). The SDK also reads other GOOGLE_ADS_* variables itself.
GOOGLE_ADS_DEVELOPER_TOKEN = env.str("GOOGLE_ADS_DEVELOPER_TOKEN", default="")
GOOGLE_ADS_CLIENT_ID = env.str("GOOGLE_ADS_CLIENT_ID", default="")
GOOGLE_ADS_CLIENT_SECRET = env.str("GOOGLE_ADS_CLIENT_SECRET", default="")
GOOGLE_ADS_REFRESH_TOKEN = env.str("GOOGLE_ADS_REFRESH_TOKEN", default="")
GOOGLE_ADS_LOGIN_CUSTOMER_ID = env.str("GOOGLE_ADS_LOGIN_CUSTOMER_ID", default="").replace("-", "")
# Google's OAuth 2.0 endpoints for "Connect with Google" (settable so tests use a stand-in).
GOOGLE_OAUTH_AUTH_URI = env.str(
    "GOOGLE_OAUTH_AUTH_URI", default="https://accounts.google.com/o/oauth2/auth"
)
GOOGLE_OAUTH_TOKEN_URI = env.str(
    "GOOGLE_OAUTH_TOKEN_URI", default="https://oauth2.googleapis.com/token"
)
# The SDK's secrets from the environment, listed so that a vendor's error text is logged with
# them masked (automation/platform/masking.py; stored ones are added there).
GOOGLE_ADS_SECRETS = [
    value
    for value in (
        env.str(name, default="")
        for name in (
            "GOOGLE_ADS_DEVELOPER_TOKEN",
            "GOOGLE_ADS_CLIENT_SECRET",
            "GOOGLE_ADS_REFRESH_TOKEN",
        )
    )
    if value
]
# One status change: up to ADS_RETRIES + 1 calls of at most ADS_CALL_TIMEOUT seconds each, with
# jittered waits of at most ADS_BACKOFF_CAP between them (worst case 5 × 20 s + 2 + 4 + 8 + 16 s).
ADS_CALL_TIMEOUT = env.float("ADS_CALL_TIMEOUT", default=20.0)
ADS_RETRIES = env.int("ADS_RETRIES", default=4)
ADS_BACKOFF_BASE = env.float("ADS_BACKOFF_BASE", default=2.0)
ADS_BACKOFF_CAP = env.float("ADS_BACKOFF_CAP", default=30.0)
# RQ kills a delivery job after DELIVERY_JOB_TIMEOUT seconds. An item may have several ad groups,
# so no fixed timeout covers the worst case above; instead every job's Ads calls share one
# deadline, ADS_JOB_MARGIN seconds before the job's own RQ timeout (this one for deliveries):
# no call starts after it, each call's timeout is cut to the time left, and what remains goes
# to the job's RQ retry (DELIVERY_RETRY_INTERVALS). The margin covers the work after the calls.
DELIVERY_JOB_TIMEOUT = env.int("DELIVERY_JOB_TIMEOUT", default=90)
ADS_JOB_MARGIN = env.float("ADS_JOB_MARGIN", default=10.0)
if ADS_JOB_MARGIN >= DELIVERY_JOB_TIMEOUT:
    raise ImproperlyConfigured("set ADS_JOB_MARGIN below DELIVERY_JOB_TIMEOUT")

# --- Abandoned checkout reminders ------------------------------------------------------------
# Delay, frequency cap and the decision's probabilities live in the admin (ReminderSettings).
SHOP_NAME = env.str("SHOP_NAME", default="Elbkerzen")
# The shop's own hosts a recovery link may point to, besides SHOPIFY_SHOP_DOMAINS and the
# vendors' checkout hosts: the custom domain Shopify serves checkout on (www.elbkerzen.de) and
# a custom domain for Stripe Checkout (pay.elbkerzen.de). A link to any other host: no mail.
SHOP_STOREFRONT_DOMAINS = [
    host.strip().lower() for host in env.list("SHOP_STOREFRONT_DOMAINS", default=[]) if host.strip()
]
# Waits between attempts of a reminder evaluation whose mail could not be sent, or that could not
# ask Shopify or Stripe whether the buyer paid meanwhile: after the last one the reminder is
# skipped with the reason (never sent unasked). The default gives up after about 21 minutes.
REMINDER_RETRY_INTERVALS = env.list("REMINDER_RETRY_INTERVALS", cast=int, default=[60, 300, 900])
# Seconds each question "did the buyer pay meanwhile?" may take per request (Shopify's Admin API
# or Stripe's Checkout Sessions API); a job asks at most a few times, well inside its RQ timeout.
REMINDER_PAID_CHECK_TIMEOUT = env.float("REMINDER_PAID_CHECK_TIMEOUT", default=8.0)
if REMINDER_PAID_CHECK_TIMEOUT <= 0:
    raise ImproperlyConfigured("set REMINDER_PAID_CHECK_TIMEOUT to a number of seconds above 0")
# Whom a reminder asks before it goes out: `vendor` (Shopify or Stripe, always in production).
# `stored` trusts our own records alone; only the demo history uses it, for a shop that does not
# exist at Shopify and whose every order has passed through our inbox already. Not read from the
# environment on purpose: a real shop never sends unasked.
REMINDER_PAID_CHECK = "vendor"
# Stripe's secret (or restricted, Checkout Sessions read) key, to ask whether a session was paid.
STRIPE_API_KEY = env.str("STRIPE_API_KEY", default="")
STRIPE_API_URL = env.str("STRIPE_API_URL", default="https://api.stripe.com").rstrip("/")

# --- E-mail ---------------------------------------------------------------------------------
# Which service sends: `smtp` (EMAIL_URL, the default) or the merchant's mail service through
# django-anymail's backend for it, with that service's API key (anymail's settings names:
# https://anymail.dev/en/stable/esps/brevo/#settings, .../esps/postmark/#settings).
EMAIL_SERVICE = env.str("EMAIL_SERVICE", default="smtp").strip().lower()
# service: (anymail's backend, the environment variable with its key, anymail's setting)
MAIL_SERVICE_BACKENDS = {
    "brevo": ("anymail.backends.brevo.EmailBackend", "BREVO_API_KEY", "BREVO_API_KEY"),
    "postmark": (
        "anymail.backends.postmark.EmailBackend",
        "POSTMARK_SERVER_TOKEN",
        "POSTMARK_SERVER_TOKEN",
    ),
}
if EMAIL_SERVICE != "smtp" and EMAIL_SERVICE not in MAIL_SERVICE_BACKENDS:
    raise ImproperlyConfigured(
        f"EMAIL_SERVICE must be smtp, {', '.join(MAIL_SERVICE_BACKENDS)}, not {EMAIL_SERVICE!r}"
    )
# Tracking webhooks (/anymail/<service>/tracking/) answer only requests with one of these
# basic-auth `user:password` pairs (comma-separated while rotating); unset, they answer 403.
ANYMAIL = {
    "WEBHOOK_SECRET": [
        secret.strip()
        for secret in env.list("ANYMAIL_WEBHOOK_SECRET", default=[])
        if secret.strip()
    ],
    # Seconds each call to the service's API may take: reminders and alerts are sent from
    # jobs, and a job's retry covers a slow service (anymail's default is 30).
    "REQUESTS_TIMEOUT": env.float("EMAIL_SERVICE_TIMEOUT", default=10.0),
}
if ANYMAIL["REQUESTS_TIMEOUT"] <= 0:
    raise ImproperlyConfigured("set EMAIL_SERVICE_TIMEOUT to a number of seconds above 0")
if EMAIL_SERVICE == "smtp":
    vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
else:
    EMAIL_BACKEND, _key_variable, _key_setting = MAIL_SERVICE_BACKENDS[EMAIL_SERVICE]
    ANYMAIL[_key_setting] = env.str(_key_variable, default="")
    if not ANYMAIL[_key_setting]:
        raise ImproperlyConfigured(f"set {_key_variable} for EMAIL_SERVICE={EMAIL_SERVICE}")
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="automation@elbkerzen.example")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
ALERT_EMAILS = env.list("ALERT_EMAILS", default=[])
# With DEBUG off EMAIL_URL must name a mail server: a console, file, in-memory or dummy backend
# fails `check --deploy`, turns /healthz's `mail` to error and skips reminders ("no mail server
# configured") instead of writing customers' mails into the log. Not read from the environment;
# tests turn it off, since Django's test runner swaps in the in-memory backend.
EMAIL_REQUIRE_SERVER = not DEBUG

# --- Production hardening (on whenever DEBUG is off) -----------------------------------------
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# JSON lines in production, readable lines in development; every line of a delivery's
# processing names it, and e-mail addresses are masked whatever logs them.
LOG_FORMAT = env.str("LOG_FORMAT", default="plain" if DEBUG else "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "delivery": {"()": "automation.platform.log_context.DeliveryIdFilter"},
        "redact": {"()": "automation.platform.log_context.RedactEmailsFilter"},
        "secrets": {"()": "automation.platform.log_context.MaskSecretsFilter"},
    },
    "formatters": {
        "plain": {
            "format": "%(asctime)s %(levelname)s %(name)s [delivery %(delivery_id)s] %(message)s"
        },
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(delivery_id)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["delivery", "redact", "secrets"],
        }
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

# Prometheus scrapes /metrics with this bearer token (it also shows /healthz's parts). Unset,
# only a caller on this host that did not come through a proxy (no X-Forwarded-*/Forwarded/
# X-Real-IP header) may scrape. Behind a proxy, set it (automation/ui/health.monitoring_refusal).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
