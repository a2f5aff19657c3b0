"""Telling people: one email to the alert's addresses, and a POST to each webhook, signed as the
webhook destination signs (``X-Tracerelay-Signature: t=…,v1=HMAC-SHA256(secret, "<t>.<body>")``,
docs/destinations/webhook.md). Each is tried up to three times; what each answered is kept on
the event. Nothing here raises: a notification that fails must not stop the evaluation.

Webhook URLs pass the outbound URL guard when the alert is saved (alerts.definition), again before
each send, and where the connection is made (`delivery.client.http_client`'s guarded transport);
a refusal is recorded on the event and not retried."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.urls import reverse

from config.crypto import decrypt_json
from config.jsoncodec import dumps
from config.mail import public_url, undelivered_reason
from delivery.client import http_client
from integrations.exporters.webhook import SIGNATURE_HEADER, sign
from integrations.urlguard import UnsafeDestination, check_url

from .models import Alert, AlertEvent, EventKind
from .wording import describe_text, figure, window_words

log = logging.getLogger(__name__)
ATTEMPTS = 3
TIMEOUT_S = 10.0


def payload(alert: Alert, event: AlertEvent) -> dict[str, Any]:
    return {
        "type": f"alert.{event.kind}",
        "alert": {"id": alert.pk, "name": alert.name, "url": page_url(alert)},
        "value": float(event.value),
        "threshold": float(event.threshold),
        "window": {**window_json(alert), "start": _iso(event.window_start), "end": _iso(event.window_end)},
        "at": _iso(event.at),
    }


def window_json(alert: Alert) -> dict[str, Any]:
    if alert.window_type == "rolling":
        return {"type": "rolling", "minutes": alert.window_minutes}
    return {"type": "calendar", "period": alert.period}


def signing_secret(alert: Alert) -> str:
    return str(decrypt_json(alert.signing_secret).get("secret", "")) if alert.signing_secret else ""


def notify(alert: Alert, event: AlertEvent, emails: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    if emails:
        results["email"] = _email(alert, event, emails)
    if alert.webhooks:
        body = dumps(payload(alert, event))
        secret = signing_secret(alert)
        results["webhooks"] = [_post(hook["url"], body, secret) for hook in alert.webhooks]
    return results


def page_url(alert: Alert) -> str:
    """The alert's page in the dashboard (TRACERELAY_PUBLIC_URL)."""
    return public_url(reverse("alert-detail", args=[alert.pk]))


def _email(alert: Alert, event: AlertEvent, to: list[str]) -> str:
    value, threshold = figure(alert.metric, event.value), figure(alert.metric, event.threshold)
    what = "crossed" if event.kind == EventKind.FIRED else "is back under"
    subject = f"[tracerelay] {'FIRING' if event.kind == EventKind.FIRED else 'resolved'}: {alert.name}"
    body = (
        f"{alert.name} ({alert.team.name}) {what} its threshold: {describe_text(alert)}.\n\n"
        f"Value:     {value}\nThreshold: {threshold}\n"
        f"Window:    {_iso(event.window_start)} to {_iso(event.window_end)} ({window_words(alert)})\n"
        f"At:        {_iso(event.at)}\n\n"
        f"Open the alert: {page_url(alert)}\n"
    )
    try:
        EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, to).send(fail_silently=False)
    except Exception as exc:  # recorded on the event; the evaluation goes on
        log.warning("alert %s: email failed: %s", alert.pk, exc)
        return f"failed: {exc}"
    undelivered = undelivered_reason()
    return f"not sent: {undelivered}" if undelivered else "sent"


def _post(url: str, body: bytes, secret: str) -> dict[str, Any]:
    try:
        check_url(url)
    except UnsafeDestination as exc:
        return {"url": url, "ok": False, "error": str(exc)}
    error = ""
    for attempt in range(ATTEMPTS):
        headers = {"Content-Type": "application/json", "User-Agent": "tracerelay-alerts/1"}
        if secret:
            headers[SIGNATURE_HEADER] = sign(secret, body)
        try:
            response = http_client().post(url, content=body, headers=headers, timeout=TIMEOUT_S)
        except UnsafeDestination as exc:  # the connection's own check (the name now resolves elsewhere): final
            return {"url": url, "ok": False, "error": str(exc)}
        except Exception as exc:  # refused, timed out, …
            error = f"{exc.__class__.__name__}: {exc}"
        else:
            if response.status_code < 300:
                return {"url": url, "ok": True, "status": response.status_code, "attempts": attempt + 1}
            error = f"HTTP {response.status_code}"
            if response.status_code < 500 and response.status_code != 429:
                break  # the receiver refuses it: trying again will not help
        if attempt + 1 < ATTEMPTS:
            time.sleep(0.5 * 2**attempt)
    log.warning("alert webhook %s failed: %s", url, error)
    return {"url": url, "ok": False, "error": error}


def _iso(value: Any) -> str:
    return value.isoformat().replace("+00:00", "Z")
