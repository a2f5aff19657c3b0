"""Beat tasks: fold pending traces into the rollups (every TRACERELAY_ANALYTICS_FOLD_INTERVAL_S) and enforce
retention (hourly). Both are front doors to services, nothing more."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import beat_init
from django.conf import settings

from config.celery import Queue, ensure_interval_task

from . import retention, rollups

log = logging.getLogger(__name__)

FOLD_TASK_NAME = "analytics: fold rollup deltas"  # (the name deployments' beat schedules hold)
RETENTION_TASK_NAME = "analytics: delete data past retention"
RETENTION_EVERY_S = 3600


@shared_task(name="analytics.fold", queue=Queue.INGEST, ignore_result=True)
def fold() -> None:
    folded = rollups.fold()
    if folded:
        log.debug("analytics: folded %d traces", folded)


@shared_task(name="analytics.retention", queue=Queue.INGEST, ignore_result=True)
def enforce_retention() -> None:
    report = retention.retention_enforce()
    if report.traces or report.rollups:
        log.info("retention: deleted %d traces and %d rollup rows", report.traces, report.rollups)


def ensure_schedules() -> None:
    """Write both periodic tasks (django-celery-beat), as delivery.tasks does for the sweeper."""
    fold_every = max(1, round(float(settings.TRACERELAY_ANALYTICS_FOLD_INTERVAL_S)))
    ensure_interval_task(name=FOLD_TASK_NAME, task="analytics.fold", every=fold_every, queue=Queue.INGEST)
    ensure_interval_task(
        name=RETENTION_TASK_NAME, task="analytics.retention", every=RETENTION_EVERY_S, queue=Queue.INGEST
    )


@beat_init.connect
def _register(sender: Any = None, **kwargs: Any) -> None:
    try:
        ensure_schedules()
    except Exception:  # beat must still start; the schedules can be fixed in the admin
        log.exception("could not register the analytics schedules")
