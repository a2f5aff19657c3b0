"""Reads of reports and runs, always within a team; and their JSON, shared by the API and pages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from django.urls import reverse

from .models import Report, ReportRun, RunStatus

RUNS_SHOWN = 50


def reports_for_team(team_id: int) -> QuerySet[Report]:
    return Report.objects.filter(team_id=team_id).order_by("name", "id")


def report_for_team(team_id: int, report_id: int) -> Report | None:
    return Report.objects.select_related("team").filter(team_id=team_id, pk=report_id).first()


def runs_for_report(report: Report, limit: int = RUNS_SHOWN) -> list[ReportRun]:
    return list(ReportRun.objects.filter(report=report).defer("csv", "pdf").order_by("-created_at", "-id")[:limit])


def last_runs(team_id: int) -> dict[int, ReportRun]:
    """Each report's newest run (for the list page): one query, whatever the history's length."""
    newest = ReportRun.objects.filter(report=OuterRef("pk")).order_by("-created_at", "-id").values("pk")[:1]
    ids = [i for i in reports_for_team(team_id).annotate(last=Subquery(newest)).values_list("last", flat=True) if i]
    return {run.report_id: run for run in ReportRun.objects.filter(pk__in=ids).defer("csv", "pdf")}


def run_for_report(report: Report, run_id: int, *, with_files: bool = False) -> ReportRun | None:
    runs = ReportRun.objects.filter(report=report, pk=run_id)
    return (runs if with_files else runs.defer("csv", "pdf")).first()


def run_file(run: ReportRun, fmt: str) -> bytes | None:
    data = getattr(run, fmt, None)
    return bytes(data) if data is not None else None


def report_json(report: Report) -> dict[str, Any]:
    return {
        "id": report.pk,
        "name": report.name,
        "filters": dict(report.filters or {}),
        "group_by": report.group_by or None,
        "interval": report.interval or None,
        "time_range": report.time_range or None,
        "since": report.since.isoformat() if report.since else None,
        "until": report.until.isoformat() if report.until else None,
        "formats": list(report.formats),
        "recipients": list(report.recipients or []),
        "schedule": report.schedule or None,
        "skip_empty_groups": report.skip_empty_groups,
        "created_at": report.created_at.isoformat(),
        "updated_at": report.updated_at.isoformat(),
    }


def run_json(run: ReportRun, formats: list[str], absolute: Callable[[str], str] = str) -> dict[str, Any]:
    files: dict[str, str | None] = {}
    for fmt in formats:
        ready = run.status == RunStatus.SUCCEEDED
        url = reverse("report-run-file", args=[run.report_id, run.pk, fmt])
        files[fmt] = absolute(url) if ready else None
    return {
        "id": run.pk,
        "report_id": run.report_id,
        "status": run.status,
        "trigger": run.trigger,
        "since": run.since.isoformat(),
        "until": run.until.isoformat(),
        "attempts": run.attempts,
        "error": run.error or None,
        "files": files,
        "emailed_to": list(run.emailed_to or []),
        "not_emailed": run.not_emailed or None,
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }
