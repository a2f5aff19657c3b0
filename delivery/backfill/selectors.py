"""Reads: backfill jobs, with their live counts while they run."""

from __future__ import annotations

from ..models import BACKFILL_ACTIVE, Backfill
from .job import outcome_counts


def backfill_for(team_id: int, backfill_id: int) -> Backfill | None:
    return Backfill.objects.select_related("integration").filter(team_id=team_id, pk=backfill_id).first()


def backfills_of(team_id: int, integration_id: int, *, limit: int = 50) -> list[Backfill]:
    return list(
        Backfill.objects.select_related("integration")
        .filter(team_id=team_id, integration_id=integration_id)
        .order_by("-id")[:limit]
    )


def with_live_counts(job: Backfill) -> Backfill:
    """A running job's sent/failed from its rows now (the job writes them every step anyway)."""
    if job.status in BACKFILL_ACTIVE:
        counts = outcome_counts(job.pk)
        job.sent, job.failed = counts["sent"], counts["failed"]
    return job


def progress(job: Backfill) -> int:
    """Percent of the traces done (sent, skipped or failed)."""
    if not job.total:
        return 100 if job.status not in BACKFILL_ACTIVE else 0
    return min(100, round(100 * (job.sent + job.skipped + job.failed) / job.total))
