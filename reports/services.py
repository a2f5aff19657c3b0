"""Reports: save a definition (and its beat schedule), ask for a run, and carry a run out.

`run_request` writes a pending run and queues it (after commit); `run_execute` is what the worker
does: read the figures, render each format, store the files, email them. A failure is recorded on
the run; the task retries it (reports.tasks) and the last failure leaves it ``failed`` with its
error. A report the analytics cannot answer (a bad filter, a raw scan over its limit) fails at
once: trying again would not help.
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from accounts.services import audit
from analytics.selectors import AnalyticsError
from config.celery import Queue, app
from config.mail import public_url, undelivered_reason
from traces.filters import FilterError

from .content import report_content
from .definition import Definition, crontab_fields
from .models import Format, Report, ReportRun, RunStatus
from .render import csv_bytes, pdf_bytes

log = logging.getLogger(__name__)

RUN_TASK = "reports.run"
SCHEDULED_TASK = "reports.run_scheduled"
MIME: dict[str, str] = {Format.CSV: "text/csv", Format.PDF: "application/pdf"}


class PermanentFailure(Exception):
    """A run that would fail the same way again."""


def definition_of(report: Report) -> Definition:
    return Definition(
        name=report.name,
        filters=dict(report.filters or {}),
        group_by=report.group_by,
        interval=report.interval,
        time_range=report.time_range,
        since=report.since,
        until=report.until,
        formats=tuple(report.formats),
        recipients=tuple(report.recipients or ()),
        schedule=report.schedule,
        skip_empty_groups=report.skip_empty_groups,
    )


@transaction.atomic
def report_create(*, team_id: int, definition: Definition, actor: str, user: Any = None) -> Report:
    report = Report(team_id=team_id, created_by=user)
    _apply(report, definition)
    report.save()
    _sync_schedule(report)
    audit(team=team_id, actor=actor, action="report.create", target=f"report:{report.pk}", data={"name": report.name})
    return report


@transaction.atomic
def report_update(*, report: Report, definition: Definition, actor: str) -> Report:
    _apply(report, definition)
    report.updated_at = timezone.now()
    report.save()
    _sync_schedule(report)
    audit(team=report.team_id, actor=actor, action="report.update", target=f"report:{report.pk}")
    return report


@transaction.atomic
def report_delete(*, report: Report, actor: str) -> None:
    task = report.periodic_task
    audit(team=report.team_id, actor=actor, action="report.delete", target=f"report:{report.pk}")
    report.delete()
    if task is not None:
        task.delete()


def _apply(report: Report, d: Definition) -> None:
    values = asdict(d)
    values["formats"] = list(d.formats)
    values["recipients"] = list(d.recipients)
    for name, value in values.items():
        setattr(report, name, value)


def _sync_schedule(report: Report) -> None:
    """Keep the report's django-celery-beat task in step with its crontab (beat sees the change)."""
    task = report.periodic_task
    if not report.schedule:
        if task is not None:
            report.periodic_task = None
            report.save(update_fields=["periodic_task"])
            task.delete()
        return
    crontab, _ = CrontabSchedule.objects.get_or_create(**crontab_fields(report.schedule), timezone="UTC")
    fields = {
        "name": f"report {report.pk}: {report.name}"[:200],
        "task": SCHEDULED_TASK,
        "crontab": crontab,
        "interval": None,
        "args": f"[{report.pk}]",
        "queue": str(Queue.REPORTS),
        "enabled": True,
    }
    if task is None:
        report.periodic_task = PeriodicTask.objects.create(**fields)
        report.save(update_fields=["periodic_task"])
    else:
        for name, value in fields.items():
            setattr(task, name, value)
        task.save()


def run_request(*, report: Report, trigger: str = "manual", now: datetime | None = None) -> ReportRun:
    """A pending run over the report's period as of now, queued once this transaction commits."""
    since, until = definition_of(report).period(now or timezone.now())
    run = ReportRun.objects.create(report=report, trigger=trigger, since=since, until=until)
    transaction.on_commit(lambda: _publish(run.pk))
    return run


def _publish(run_id: int) -> None:
    """Queue the run by task name (this module imports no task module)."""
    try:
        app.send_task(RUN_TASK, args=[run_id], queue=str(Queue.REPORTS), retry=False)
    except Exception as exc:  # a broker error: say so on the run rather than leave it pending
        log.warning("could not queue report run %s: %s", run_id, exc)
        ReportRun.objects.filter(pk=run_id, status=RunStatus.PENDING).update(
            status=RunStatus.FAILED, error=f"Could not queue the run: {exc}", finished_at=timezone.now()
        )


def run_execute(*, run_id: int, final: bool) -> ReportRun | None:
    """Carry out a run. Raises after recording the error when another try may succeed (and
    ``final`` is false); marks it failed otherwise. None when the run is gone (report deleted)."""
    with transaction.atomic():
        run = ReportRun.objects.select_for_update().select_related("report__team").filter(pk=run_id).first()
        if run is None or run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            return run
        run.status, run.started_at, run.attempts = RunStatus.RUNNING, timezone.now(), run.attempts + 1
        run.save(update_fields=["status", "started_at", "attempts"])
    report = run.report
    definition = definition_of(report)
    try:
        try:
            content = report_content(
                team_id=report.team_id,
                team_name=report.team.name,
                definition=definition,
                since=run.since,
                until=run.until,
            )
        except (AnalyticsError, FilterError) as exc:
            raise PermanentFailure(f"{exc.param}: {exc.message}") from exc
        files: dict[str, bytes] = {}
        if Format.CSV in definition.formats:
            files[Format.CSV] = csv_bytes(content)
        if Format.PDF in definition.formats:
            files[Format.PDF] = pdf_bytes(content)
        run.csv, run.pdf = files.get(Format.CSV), files.get(Format.PDF)
        run.save(update_fields=["csv", "pdf"])
        if definition.recipients:
            _email(run, definition, files)
            # A backend that writes to the log (no EMAIL_URL) reached nobody: the run says so.
            run.not_emailed = undelivered_reason() or ""
            run.emailed_to = [] if run.not_emailed else list(definition.recipients)
    except Exception as exc:
        permanent = isinstance(exc, PermanentFailure)
        run.error = str(exc) or exc.__class__.__name__
        run.status = RunStatus.FAILED if (final or permanent) else RunStatus.PENDING
        run.finished_at = timezone.now() if run.status == RunStatus.FAILED else None
        run.save(update_fields=["error", "status", "finished_at"])
        log.warning("report run %s (attempt %s) failed: %s", run.pk, run.attempts, run.error)
        if run.status == RunStatus.PENDING:
            raise
        return run
    run.status, run.error, run.finished_at = RunStatus.SUCCEEDED, "", timezone.now()
    run.save(update_fields=["status", "error", "finished_at", "emailed_to", "not_emailed"])
    return run


def _email(run: ReportRun, definition: Definition, files: dict[str, bytes]) -> None:
    period = f"{run.since:%Y-%m-%d %H:%M} to {run.until:%Y-%m-%d %H:%M} UTC"
    message = EmailMessage(
        subject=f"[tracerelay] {definition.name}: {period}",
        body=(
            f"The report \u201c{definition.name}\u201d of team {run.report.team.name} for {period} is attached"
            f" ({', '.join(fmt.upper() for fmt in files)}).\n\n"
            f"The report and its runs: {public_url(reverse('report-detail', args=[run.report_id]))}\n\n"
            "You receive it because you are on the report's recipient list in tracerelay.\n"
        ),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=list(definition.recipients),
    )
    for fmt, data in files.items():
        message.attach(file_name(run, fmt), data, MIME[fmt])
    message.send(fail_silently=False)


def file_name(run: ReportRun, fmt: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", run.report.name).strip("-").lower()[:60] or "report"
    return f"{slug}-{run.since:%Y%m%d}-{run.until:%Y%m%d}.{fmt}"
