"""Reads of boards, always within a team, and their JSON (shared by the API and the pages)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from .definition import widget_fields
from .models import Dashboard


def dashboards_for_team(team_id: int) -> QuerySet[Dashboard]:
    return Dashboard.objects.filter(team_id=team_id).order_by("name", "id")


def dashboard_for_team(team_id: int, dashboard_id: int) -> Dashboard | None:
    return Dashboard.objects.filter(team_id=team_id, pk=dashboard_id).first()


def widget_json(widget: dict[str, Any]) -> dict[str, Any]:
    return widget_fields(widget)


def dashboard_json(dashboard: Dashboard) -> dict[str, Any]:
    return {
        "id": dashboard.pk,
        "name": dashboard.name,
        "widgets": [widget_json(w) for w in dashboard.widgets or []],
        "version": dashboard.version,
        "created_at": dashboard.created_at.isoformat(),
        "updated_at": dashboard.updated_at.isoformat(),
    }
