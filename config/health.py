from __future__ import annotations

import time
from typing import Any

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from config.celery import Queue, app


def check_database() -> str:
    """ "ok", or "error: <exception class>" when the database does not answer a query."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception as exc:  # any driver error means not ready
        return f"error: {exc.__class__.__name__}"


def check_broker() -> str:
    """ "ok", or "error: <exception class>" when the broker refuses a connection."""
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return "ok"
    except Exception as exc:
        return f"error: {exc.__class__.__name__}"


def worker_status(timeout: float = 1.0) -> dict[str, Any]:
    """The Celery workers that answer a ping within ``timeout`` seconds (a broadcast: slow when none do)."""
    started = time.monotonic()
    try:
        replies = app.control.inspect(timeout=timeout).ping() or {}
    except Exception as exc:
        return {"status": f"error: {exc.__class__.__name__}", "workers": []}
    return {
        "status": "ok" if replies else "no workers answered",
        "workers": sorted(replies),
        "waited_s": round(time.monotonic() - started, 2),
    }


def queue_depths() -> dict[str, int | str]:
    """Messages waiting in each Celery queue (`config.celery.Queue`), as the broker reports them."""
    depths: dict[str, int | str] = {}
    try:
        with app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
            for queue in Queue:
                channel = conn.channel()
                try:
                    depths[str(queue)] = int(channel.queue_declare(queue=str(queue), passive=True).message_count)
                except Exception:  # the queue was never declared: nothing was ever sent to it
                    depths[str(queue)] = 0
                finally:
                    channel.close()
    except Exception as exc:
        return {str(queue): f"error: {exc.__class__.__name__}" for queue in Queue}
    return depths


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers."""
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: the database answers a query and the broker accepts a connection."""
    checks = {"database": check_database(), "broker": check_broker()}
    ready = all(v == "ok" for v in checks.values())
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)
