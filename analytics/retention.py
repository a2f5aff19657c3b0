"""Ageing data out per team (analytics.models.Retention, else the deployment's defaults).

Everything is deleted in small batches, each its own short transaction: ingest only inserts new
rows, so deleting old ones never waits on it or makes it wait (row locks on rows nobody else
touches). Traces go through the ORM's delete so their deliveries (the outbox) and anything else
that references a trace goes with them, whatever app holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Team
from delivery.models import RunRoute
from traces.models import Trace
from traces.runs.summary import after_retention

from .models import DayRollup, HourRollup, MinuteRollup, Retention

BATCH = 500


@dataclass
class RetentionReport:
    traces: int = 0
    rollups: int = 0


def retention_enforce(*, now: datetime | None = None, batch: int = BATCH) -> RetentionReport:
    now = now or timezone.now()
    report = RetentionReport()
    policies = {r.team_id: r for r in Retention.objects.all()}
    for team_id in Team.objects.values_list("id", flat=True).order_by("id"):
        policy = policies.get(team_id) or Retention(team_id=team_id)
        trace_cutoff = now - timedelta(days=policy.effective_trace_days)
        report.traces += _delete_in_batches(
            Trace.objects.filter(team_id=team_id, timestamp__lt=trace_cutoff), batch, orm=True
        )
        # The destinations of runs nothing was stored in since (their spans have just gone).
        _delete_in_batches(RunRoute.objects.filter(team_id=team_id, updated_at__lt=trace_cutoff), batch)
        with transaction.atomic():
            after_retention(team_id, trace_cutoff)  # the runs' summaries follow their spans
        # At a UTC midnight: a day row and its hours go together (a day row less some of its hours
        # answers part of a day, analytics.plan).
        rollup_cutoff = int((now - timedelta(days=policy.effective_rollup_days)).timestamp()) // 86400 * 86400
        for model in (HourRollup, DayRollup):
            report.rollups += _delete_in_batches(model.objects.filter(team_id=team_id, bucket__lt=rollup_cutoff), batch)
    minute_cutoff = int((now - timedelta(hours=settings.TRACERELAY_RETENTION_MINUTE_HOURS)).timestamp())
    report.rollups += _delete_in_batches(MinuteRollup.objects.filter(bucket__lt=minute_cutoff), batch)
    return report


def _delete_in_batches(qs: Any, batch: int, *, orm: bool = False) -> int:
    deleted = 0
    model = qs.model
    while True:
        ids = list(qs.values_list("pk", flat=True)[:batch])
        if not ids:
            return deleted
        with transaction.atomic():
            chosen = model._base_manager.filter(pk__in=ids)
            if orm:
                chosen.delete()  # cascades to deliveries (the outbox) and any other dependent rows
            else:
                chosen._raw_delete(chosen.db)
        deleted += len(ids)
