"""Reads of re-pricing jobs, and a job's JSON (the API's and the dashboard's)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from .models import RepriceJob

RECENT = 20


def job_for_team(team_id: int, job_id: int) -> RepriceJob | None:
    return RepriceJob.objects.filter(team_id=team_id, pk=job_id).first()


def recent_jobs(team_id: int, limit: int = RECENT) -> QuerySet[RepriceJob]:
    return RepriceJob.objects.filter(team_id=team_id).order_by("-created_at", "-id")[:limit]


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def job_json(job: RepriceJob) -> dict[str, Any]:
    return {
        "id": job.pk,
        "status": job.status,
        "since": _iso(job.since),
        "until": _iso(job.until),
        "model": job.model or None,
        "redeliver": job.redeliver,
        "traces_total": job.traces_total,
        "traces_done": job.traces_done,
        "traces_changed": job.traces_changed,
        "deliveries_requeued": job.deliveries_requeued,
        "cost_before": float(job.cost_before),
        "cost_after": float(job.cost_after),
        "by_model": {
            model: {
                "traces": entry["traces"],
                "changed": entry["changed"],
                "cost_before": float(entry["cost_before"]),
                "cost_after": float(entry["cost_after"]),
            }
            for model, entry in sorted((job.by_model or {}).items())
        },
        "created_at": _iso(job.created_at),
        "finished_at": _iso(job.finished_at),
        "error": job.error or None,
    }
