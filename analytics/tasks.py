"""Beat tasks: fold rollup deltas (every TRACERELAY_ANALYTICS_FOLD_INTERVAL_S) and enforce
retention (hourly). Both are front doors to services, nothing more."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import beat_init
from django.conf import settings

from config.celery import Queue

from . import retention, rollups

log = logging.getLogger(__name__)

FOLD_TASK_NAME = "analytics: fold rollup deltas"
RETENTION_TASK_NAME = "analytics: delete data past retention"
RETENTION_EVERY_S = 3600


@shared_task(name="analytics.fold", queue=Queue.INGEST, ignore_result=True)
def fold() -> None:
    folded = rollups.fold()
    if folded:
        log.debug("analytics: folded %d delta rows", folded)


@shared_task(name="analytics.retention", queue=Queue.INGEST, ignore_result=True)
def enforce_retention() -> None:
    report = retention.retention_enforce()
    if report.traces or report.rollups:
        log.info("retention: deleted %d traces and %d rollup rows", report.traces, report.rollups)


def ensure_schedules() -> None:
    """Write both periodic tasks (django-celery-beat), as routing.tasks does for the sweeper."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    for name, task, every in (
        (FOLD_TASK_NAME, "analytics.fold", max(1, round(float(settings.TRACERELAY_ANALYTICS_FOLD_INTERVAL_S)))),
        (RETENTION_TASK_NAME, "analytics.retention", RETENTION_EVERY_S),
    ):
        interval = IntervalSchedule.objects.filter(every=every, period=IntervalSchedule.SECONDS).order_by("pk").first()
        if interval is None:
            interval = IntervalSchedule.objects.create(every=every, period=IntervalSchedule.SECONDS)
        PeriodicTask.objects.update_or_create(
            name=name,
            defaults={
                "task": task,
                "interval": interval,
                "queue": str(Queue.INGEST),
                "expire_seconds": every,  # a late run is useless: the next one is coming
                "enabled": True,
            },
        )


@beat_init.connect
def _register(sender: Any = None, **kwargs: Any) -> None:
    try:
        ensure_schedules()
    except Exception:  # beat must still start; the schedules can be fixed in the admin
        log.exception("could not register the analytics schedules")
