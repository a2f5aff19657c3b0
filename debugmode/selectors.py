"""Reads for debug mode: its state for the settings page, and the records of a trace."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from .models import DebugMode, DebugRecord, RecordKind


def debug_mode(team_id: int) -> DebugMode:
    """The team's debug mode row; an unsaved "off" one when it was never switched on."""
    return DebugMode.objects.filter(team_id=team_id).first() or DebugMode(team_id=team_id)


def trace_debug_records(trace_pk: Any) -> dict[str, list[DebugRecord]]:
    """A trace's records, oldest first: ``{"routing": [...], "export": [...]}``."""
    out: dict[str, list[DebugRecord]] = {RecordKind.ROUTING: [], RecordKind.EXPORT: []}
    for record in DebugRecord.objects.filter(trace_id=trace_pk).order_by("created_at", "id"):
        out.setdefault(record.kind, []).append(record)
    return out


def recent_debug_records(*, team_id: int | None = None, limit: int = 200) -> QuerySet[DebugRecord]:
    """The newest records (of one team, or all for the operator's bundle)."""
    records = DebugRecord.objects.order_by("-created_at", "-id")
    if team_id is not None:
        records = records.filter(team_id=team_id)
    return records[:limit]


def record_count(team_id: int) -> int:
    return DebugRecord.objects.filter(team_id=team_id).count()


def minutes_left(mode: DebugMode) -> int:
    if not mode.is_on():
        return 0
    assert mode.until is not None
    return max(1, round((mode.until - timezone.now()).total_seconds() / 60))
