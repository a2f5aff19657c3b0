"""Reads of alerts and their events, within a team; and their JSON (API and pages alike)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from config.crypto import mask

from .models import Alert, AlertEvent
from .notify import signing_secret, window_json

EVENTS_SHOWN = 100


def alerts_for_team(team_id: int) -> QuerySet[Alert]:
    return Alert.objects.filter(team_id=team_id).order_by("-builtin", "name", "id")


def alert_for_team(team_id: int, alert_id: int) -> Alert | None:
    return Alert.objects.select_related("team").filter(team_id=team_id, pk=alert_id).first()


def events_for_alert(alert: Alert, limit: int = EVENTS_SHOWN) -> list[AlertEvent]:
    return list(AlertEvent.objects.filter(alert=alert).order_by("-at", "-id")[:limit])


def alert_json(alert: Alert) -> dict[str, Any]:
    return {
        "id": alert.pk,
        "name": alert.name,
        "metric": alert.metric,
        "threshold": float(alert.threshold),
        "window": window_json(alert),
        "scope": dict(alert.scope or {}),
        "notify": {"emails": list(alert.emails or []), "webhooks": [{"url": h["url"]} for h in alert.webhooks or []]},
        "signing_secret": mask(signing_secret(alert)),
        "enabled": alert.enabled,
        "builtin": alert.builtin or None,
        "state": alert.state,
        "last_value": float(alert.last_value) if alert.last_value is not None else None,
        "last_evaluated_at": alert.last_evaluated_at.isoformat() if alert.last_evaluated_at else None,
        "created_at": alert.created_at.isoformat(),
        "updated_at": alert.updated_at.isoformat(),
    }


def event_json(event: AlertEvent) -> dict[str, Any]:
    return {
        "id": event.pk,
        "type": event.kind,
        "at": event.at.isoformat(),
        "value": float(event.value),
        "threshold": float(event.threshold),
        "window": {"start": event.window_start.isoformat(), "end": event.window_end.isoformat()},
        "notifications": event.notifications,
    }
