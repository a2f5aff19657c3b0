"""Writes for debug mode: switch it on for a chosen period or off, and delete expired records."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.services import audit

from . import state
from .models import DebugMode, DebugRecord

# The periods an admin may choose: debug mode records request bodies, so it never stays on for long.
DURATIONS: dict[str, tuple[int, str]] = {
    "15m": (15 * 60, "15 minutes"),
    "1h": (3600, "1 hour"),
    "4h": (4 * 3600, "4 hours"),
    "24h": (24 * 3600, "24 hours"),
}


class UnknownDuration(ValueError):
    pass


@transaction.atomic
def debug_mode_enable(*, team_id: int, duration: str, actor: str) -> DebugMode:
    """Debug mode on for ``duration`` (a key of `DURATIONS`) from now; every process sees it within
    a second (`state`), and it switches itself off when the time has passed."""
    if duration not in DURATIONS:
        raise UnknownDuration(f"Choose one of {', '.join(label for _, label in DURATIONS.values())}.")
    seconds, label = DURATIONS[duration]
    now = timezone.now()
    row, _ = DebugMode.objects.select_for_update().get_or_create(team_id=team_id)
    row.until, row.duration_s, row.changed_at, row.changed_by = now + timedelta(seconds=seconds), seconds, now, actor
    row.save()
    audit(team=team_id, actor=actor, action="debug_mode.enable", target=label, data={"until": row.until.isoformat()})
    transaction.on_commit(lambda: state.publish(team_id), robust=True)
    return row


@transaction.atomic
def debug_mode_disable(*, team_id: int, actor: str) -> DebugMode:
    now = timezone.now()
    row, _ = DebugMode.objects.select_for_update().get_or_create(team_id=team_id)
    was_on = row.is_on(now)
    row.until, row.changed_at, row.changed_by = None, now, actor
    row.save()
    if was_on:
        audit(team=team_id, actor=actor, action="debug_mode.disable")
    transaction.on_commit(lambda: state.publish(team_id), robust=True)
    return row


def retention_hours() -> float:
    return float(settings.TRACERELAY_DEBUG_RETENTION_HOURS)


def debug_records_expire(now: datetime | None = None) -> int:
    """Delete debug records older than the retention; returns how many."""
    cutoff = (now or timezone.now()) - timedelta(hours=retention_hours())
    deleted, _ = DebugRecord.objects.filter(created_at__lt=cutoff).delete()
    return deleted
