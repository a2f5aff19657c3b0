"""The diagnostic bundle: one zip an operator (or a team admin) attaches to a bug report.

Files (all JSON but the README):

- ``versions.json``: Python, Django, the platform and the key packages;
- ``settings.json``: the settings on `SETTINGS_ALLOWED` only (an allow-list: a setting added later
  is left out until someone decides it is safe), URLs reduced to scheme, host, port and path;
- ``health.json``: database, broker, cache and workers (`config/health.py`);
- ``queues.json``: messages waiting per Celery queue, and outbox rows per status;
- ``deliveries.json``: per destination, the last 24 hours: rows per status and the most frequent errors;
- ``errors.json``: the most recent delivery errors;
- ``debug_records.json``: the most recent debug records (masked when recorded: debugmode/masking.py).

After it is built, every file goes through a final scrub that replaces every secret the server
knows (SECRET_KEY, the database, e-mail and broker passwords, Fernet keys, every integration's
secret fields and credential headers) in plain, base64 and URL-encoded forms, and anything the
PII detector recognises as an API key or token. `tests/diagnostics/test_bundle.py` plants secrets
everywhere and searches the zip for each.
"""

from __future__ import annotations

import io
import json
import logging
import platform
import sys
import zipfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import timedelta
from importlib import metadata
from typing import Any
from urllib.parse import unquote, urlsplit

import django
from django.conf import settings
from django.core.cache import cache
from django.db.models import Count
from django.utils import timezone

from config.health import check_broker, check_database, queue_depths, worker_status
from debugmode.masking import Masker, secret_values
from debugmode.selectors import recent_debug_records
from delivery.models import Delivery, DeliveryStatus
from integrations.models import Integration
from integrations.registry import exporter_class
from integrations.selectors import full_config

log = logging.getLogger(__name__)

PACKAGES = (
    "Django",
    "djangorestframework",
    "celery",
    "kombu",
    "redis",
    "psycopg",
    "httpx",
    "django-celery-beat",
    "drf-spectacular",
    "cryptography",
    "uvicorn",
    "orjson",
    "phonenumbers",
    "google-re2",
    "genai-prices",
    "common-expression-language",
    "protobuf",
)

# Settings copied as they are. Nothing else is: a setting not listed here never reaches the bundle.
SETTINGS_ALLOWED = (
    "DEBUG",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "HTTPS",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SESSION_COOKIE_AGE",
    "TIME_ZONE",
    "USE_TZ",
    "LANGUAGE_CODE",
    "INSTALLED_APPS",
    "MIDDLEWARE",
    "DATA_UPLOAD_MAX_MEMORY_SIZE",
    "TRACE_MAX_BYTES",
    "BATCH_MAX_BYTES",
    "BATCH_MAX_TRACES",
    "OTLP_MAX_BYTES",
    "OTLP_MAX_PENDING",
    "EMAIL_BACKEND",
    "EMAIL_HOST",
    "EMAIL_PORT",
    "EMAIL_USE_TLS",
    "EMAIL_USE_SSL",
    "CELERY_TASK_DEFAULT_QUEUE",
    "CELERY_WORKER_PREFETCH_MULTIPLIER",
    "CELERY_BEAT_SCHEDULER",
    "TRACERELAY_OUTBOX_SWEEP_INTERVAL_S",
    "TRACERELAY_OUTBOX_SWEEP_GRACE_S",
    "TRACERELAY_DELIVERY_TASK_CHUNK",
    "TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S",
    "TRACERELAY_DELIVERY_LEASE_S",
    "TRACERELAY_DELIVERY_HEARTBEAT_S",
    "TRACERELAY_BREAKER_FAILURES",
    "TRACERELAY_BREAKER_COOLDOWN_S",
    "TRACERELAY_ANALYTICS_FOLD_INTERVAL_S",
    "TRACERELAY_RETENTION_TRACE_DAYS",
    "TRACERELAY_RETENTION_ROLLUP_DAYS",
    "TRACERELAY_RETENTION_MINUTE_HOURS",
    "TRACERELAY_DEBUG_RETENTION_HOURS",
    "TRACERELAY_ALLOW_PRIVATE_DESTINATIONS",
    "TRACERELAY_LOGIN_MAX_FAILURES",
    "TRACERELAY_LOGIN_WINDOW_S",
    "TRACERELAY_INVITE_TTL_S",
    "TRACERELAY_OPENAI_BASE_URL",
    "TRACERELAY_ANTHROPIC_BASE_URL",
    "TRACERELAY_PROXY_CONNECT_TIMEOUT",
    "TRACERELAY_PROXY_READ_TIMEOUT",
    "TRACERELAY_PROXY_MAX_CONNECTIONS",
    "TRACERELAY_PROXY_MAX_BODY_BYTES",
    "TRACERELAY_PROXY_CACHE_TTL",
    "TRACERELAY_PROXY_CAPTURE_MAX_BYTES",
    "TRACERELAY_PROXY_WRITER_BATCH",
    "TRACERELAY_PROXY_WRITER_QUEUE_MAX",
)
# Connection settings, reduced to where they point (never a user name or password).
URL_SETTINGS = ("REDIS_URL", "CELERY_BROKER_URL")

ERROR_WINDOW = timedelta(hours=24)
RECENT_ERRORS = 50
RECENT_DEBUG_RECORDS = 100
TOP_ERRORS = 5
ERROR_CHARS = 500


def build_bundle(*, team_id: int | None = None) -> bytes:
    """The zip's bytes. ``team_id``: deliveries, errors and debug records of that team only (the
    dashboard's download); None: every team (the operator's `manage.py diagnostic_bundle`)."""
    now = timezone.now()
    files: dict[str, Any] = {
        "versions.json": versions(),
        "settings.json": allowed_settings(),
        "health.json": health(),
        "queues.json": queues(team_id),
        "deliveries.json": delivery_summary(team_id, now),
        "errors.json": recent_errors(team_id),
        "debug_records.json": debug_records(team_id),
    }
    scrub = Masker(known_secrets())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("README.txt", _readme(now, team_id, sorted(files)))
        for name, content in files.items():
            text = json.dumps(content, indent=2, sort_keys=True, default=str, ensure_ascii=False)
            archive.writestr(name, scrub.text(text))
    return buffer.getvalue()


def _readme(now: Any, team_id: int | None, names: list[str]) -> str:
    scope = f"team {team_id}" if team_id is not None else "every team"
    return (
        f"tracerelay diagnostic bundle, made {now.isoformat()} for {scope}.\n"
        "Secrets are removed: settings are copied from an allow-list, connection URLs keep only where\n"
        "they point, and every file was scrubbed of every secret the server knows.\n\n" + "\n".join(names) + "\n"
    )


def versions() -> dict[str, Any]:
    packages: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "django": django.get_version(),
        "platform": platform.platform(),
        "packages": packages,
    }


def where(url: str) -> str:
    """A connection URL reduced to scheme://host:port/path (no user, password or query)."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def allowed_settings() -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(settings, name) for name in SETTINGS_ALLOWED if hasattr(settings, name)}
    for name in URL_SETTINGS:
        out[name] = where(str(getattr(settings, name, "") or ""))
    database = settings.DATABASES["default"]
    out["DATABASES"] = {
        "default": {key: database.get(key) for key in ("ENGINE", "NAME", "HOST", "PORT", "CONN_MAX_AGE")}
    }
    out["CACHES"] = {"default": {"BACKEND": settings.CACHES["default"].get("BACKEND")}}
    out["SECRET_KEY"] = "set" if settings.SECRET_KEY else "not set"
    out["TRACERELAY_FERNET_KEYS"] = f"{len(settings.TRACERELAY_FERNET_KEYS)} key(s)"
    return out


def health() -> dict[str, Any]:
    try:
        cache.set("diagnostics:ping", 1, 10)
        cache_status = "ok" if cache.get("diagnostics:ping") == 1 else "error: no answer"
    except Exception as exc:
        cache_status = f"error: {exc.__class__.__name__}"
    return {
        "database": check_database(),
        "broker": check_broker(),
        "cache": cache_status,
        "workers": worker_status(timeout=1.0),
    }


def _deliveries(team_id: int | None) -> Any:
    rows = Delivery.objects.all()
    return rows.filter(team_id=team_id) if team_id is not None else rows


def queues(team_id: int | None) -> dict[str, Any]:
    outbox = Counter(
        dict(
            _deliveries(team_id)
            .filter(status__in=[DeliveryStatus.PENDING, DeliveryStatus.SENDING])
            .values_list("status")
            .annotate(n=Count("id"))
            .values_list("status", "n")
        )
    )
    return {"celery": queue_depths(), "outbox": {str(k): v for k, v in outbox.items()}}


def _error(text: str) -> str:
    text = " ".join((text or "").split())
    return text[:ERROR_CHARS]


def delivery_summary(team_id: int | None, now: Any) -> list[dict[str, Any]]:
    rows = _deliveries(team_id).filter(updated_at__gte=now - ERROR_WINDOW)
    counts: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
    for team, destination, status, n in (
        rows.values_list("team_id", "destination", "status").annotate(n=Count("id")).order_by()
    ):
        counts[(team, destination)][status] += n
    errors: dict[tuple[int, str], Counter[str]] = defaultdict(Counter)
    last: dict[tuple[int, str], Any] = {}
    failing = rows.exclude(last_error="").order_by("-updated_at")
    for team, destination, error, updated in failing.values_list("team_id", "destination", "last_error", "updated_at")[
        :5000
    ]:
        errors[(team, destination)][_error(error)] += 1
        last.setdefault((team, destination), updated)
    return [
        {
            "team_id": team,
            "destination": destination,
            "window_hours": ERROR_WINDOW.total_seconds() / 3600,
            "by_status": dict(counts[(team, destination)]),
            "last_error_at": last.get((team, destination)),
            "top_errors": [{"error": e, "rows": n} for e, n in errors[(team, destination)].most_common(TOP_ERRORS)],
        }
        for team, destination in sorted(counts)
    ]


def recent_errors(team_id: int | None) -> list[dict[str, Any]]:
    rows = _deliveries(team_id).exclude(last_error="").order_by("-updated_at")[:RECENT_ERRORS]
    return [
        {
            "at": row.updated_at,
            "team_id": row.team_id,
            "destination": row.destination,
            "status": row.status,
            "attempts": row.attempts,
            "http_status": row.last_status_code,
            "error": _error(row.last_error),
        }
        for row in rows
    ]


def debug_records(team_id: int | None) -> list[dict[str, Any]]:
    return [
        {
            "at": record.created_at,
            "team_id": record.team_id,
            "trace": str(record.trace_id),
            "kind": record.kind,
            "destination": record.destination,
            "data": record.data,
        }
        for record in recent_debug_records(team_id=team_id, limit=RECENT_DEBUG_RECORDS)
    ]


def known_secrets() -> list[str]:
    """Every secret the server knows, for the final scrub."""
    values: list[str] = [settings.SECRET_KEY, *settings.TRACERELAY_FERNET_KEYS]
    values.append(getattr(settings, "EMAIL_HOST_PASSWORD", "") or "")
    values.append(settings.DATABASES["default"].get("PASSWORD") or "")
    for name in URL_SETTINGS:
        password = urlsplit(str(getattr(settings, name, "") or "")).password
        if password:
            values.extend([password, unquote(password)])
    values.extend(_integration_secrets(Integration.objects.all()))
    return [v for v in values if isinstance(v, str) and v]


def _integration_secrets(integrations: Iterable[Integration]) -> list[str]:
    values: list[str] = []
    for integration in integrations:
        try:
            config = full_config(integration)
            fields = exporter_class(integration.platform).secret_fields
        except Exception:  # undecryptable (a rotated key): its secrets are not readable here either
            log.warning("diagnostics: cannot read the secrets of integration %s", integration.pk)
            continue
        values.extend(secret_values(config, fields))
    return values
