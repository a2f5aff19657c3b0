from django.core.exceptions import ImproperlyConfigured

from config import embedded

from .env import BASE_DIR, DATA_DIR, data_secret_key, env

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="") or data_secret_key()
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc assets served locally: no CDN needed
    "django_htmx",
    "template_partials",  # {% partialdef %} and "page.html#fragment" renders (built into Django 6)
    "django_celery_beat",
    "accounts",
    "traces",
    "routing",
    "delivery",
    "integrations",
    "analytics",
    "reports",
    "alerts",
    "repricing",
    "dashboards",
    "privacy",
    "debugmode",
    "diagnostics",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "config.middleware.ChunkedBodyMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = "config.wsgi.application"

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
                "accounts.context_processors.dashboard",
                "diagnostics.context_processors.debug_banner",
            ],
            "builtins": ["template_partials.templatetags.partials"],
        },
    }
]

# Postgres: DATABASE_URL, else the embedded Postgres that bin/run starts in the data folder
# (config/embedded.py); one engine everywhere.
DATA_DIR.mkdir(parents=True, exist_ok=True)
DATABASE_URL = env.str("DATABASE_URL", default="")
DATABASES = {"default": env.db_url_config(DATABASE_URL) if DATABASE_URL else embedded.database_settings(DATA_DIR)}
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured(f"DATABASE_URL must be a Postgres URL (postgres://…), not {DATABASE_URL.split(':')[0]}:")
# psycopg 3's pool; persistent connections would double-pool.
DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
    "min_size": env.int("DATABASE_POOL_MIN", default=2),
    "max_size": env.int("DATABASE_POOL_MAX", default=20),
    "timeout": 10,
}
DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis (cache, invalidation bus, Celery's broker): REDIS_URL, else the embedded Valkey.
REDIS_URL = env.str("REDIS_URL", default="") or embedded.redis_url(DATA_DIR)
CACHES = {"default": {"BACKEND": "config.cache.ResilientRedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": "tr"}}

AUTHENTICATION_BACKENDS = ["accounts.backends.UsernameOrEmailBackend"]  # the username or the e-mail
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]  # the dashboard's stylesheet, scripts and vendored htmx
# Static files (admin, dashboard) are served by a URL route (config/urls.py), not a middleware: a
# sync-only middleware would put a thread hop in front of every ASGI request, API calls included.

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.UserTokenAuthentication",
        "accounts.authentication.ApiKeyAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.permissions.HasApiKey"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.jsonbody.JSONBodyParser"],
    "DEFAULT_SCHEMA_CLASS": "config.openapi.ProblemAutoSchema",
    "EXCEPTION_HANDLER": "config.problems.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "tracerelay API",
    "DESCRIPTION": "Capture, price, route and deliver LLM traces. Errors are RFC 9457 problem+json.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "TraceStatusEnum": "traces.models.Status",
        "TraceSourceEnum": "traces.models.Source",
        "SpanKindEnum": "traces.models.Kind",
        "KindEnum": "traces.proxy.models.UpstreamKind",
        "WidgetMetricEnum": "dashboards.definition.METRICS",
        "WidgetChartEnum": "dashboards.definition.CHARTS",
        "WidgetTimeRangeEnum": "dashboards.definition.TIME_RANGES",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "traces.otlp.openapi.add_otlp_path",
        "traces.score_api.require_score_body",
        "traces.export_api.require_import_body",
    ],
    "TAGS": [
        {"name": "Trace Management", "description": "Send traces, read the feed and single traces; sample plants."},
    ],
}

# Trace limits (DESIGN.md, Trace).
TRACE_MAX_BYTES = env.int("TRACERELAY_TRACE_MAX_BYTES", default=1024 * 1024)
BATCH_MAX_BYTES = env.int("TRACERELAY_BATCH_MAX_BYTES", default=10 * 1024 * 1024)
BATCH_MAX_TRACES = env.int("TRACERELAY_BATCH_MAX_TRACES", default=1000)
TRACE_MAX_TAGS = 50
TRACE_MAX_METADATA_KEYS = 64
DATA_UPLOAD_MAX_MEMORY_SIZE = BATCH_MAX_BYTES + 1024 * 1024
# POST /api/v1/traces/import (docs/export.md): the JSON Lines body's limit, after gunzip.
IMPORT_MAX_BYTES = env.int("TRACERELAY_IMPORT_MAX_BYTES", default=64 * 1024 * 1024)
# OTLP ingest (docs/otlp.md): body limit (after gunzip), and requests waiting per process before 503.
OTLP_MAX_BYTES = env.int("TRACERELAY_OTLP_MAX_BYTES", default=16 * 1024 * 1024)
OTLP_MAX_PENDING = env.int("TRACERELAY_OTLP_MAX_PENDING", default=8)
# /metrics (docs/deployment.md): a bearer token, or (unset) internal addresses only; the folder where
# every process keeps its prometheus-client values (bin/run sets it; unset: this process only).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}
