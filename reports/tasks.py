"""Worker tasks: run a report (retried with backoff, then failed with its error) and the beat
entry point of a scheduled report. Front doors to reports.services, nothing more."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings

from config.celery import Queue

from . import services
from .models import Report


@shared_task(name=services.RUN_TASK, queue=Queue.REPORTS, bind=True, ignore_result=True, max_retries=None)
def run_report(self: Any, run_id: int) -> None:
    attempts = max(1, settings.TRACERELAY_REPORT_ATTEMPTS)
    final = self.request.retries + 1 >= attempts
    try:
        services.run_execute(run_id=run_id, final=final)
    except Exception as exc:
        delay = settings.TRACERELAY_REPORT_RETRY_DELAY_S * (2**self.request.retries)
        raise self.retry(exc=exc, countdown=delay)


@shared_task(name=services.SCHEDULED_TASK, queue=Queue.REPORTS, ignore_result=True)
def run_scheduled(report_id: int) -> None:
    report = Report.objects.filter(pk=report_id).first()
    if report is not None:  # (deleted meanwhile: its beat entry goes with it)
        services.run_request(report=report, trigger="schedule")
