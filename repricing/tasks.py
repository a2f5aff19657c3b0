"""Worker tasks: carry out a re-pricing job, and (beat, every TRACERELAY_REPRICE_SWEEP_INTERVAL_S)
queue again the jobs no worker is carrying out. Front doors to repricing.services, nothing more."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import beat_init
from django.conf import settings

from config.celery import Queue, ensure_interval_task

from . import services

log = logging.getLogger(__name__)
SWEEP_TASK = "repricing.sweep"
SWEEP_TASK_NAME = "repricing: take over abandoned re-pricing jobs"


@shared_task(name=services.RUN_TASK, queue=Queue.REPORTS, ignore_result=True)
def run(job_id: int) -> None:
    services.job_run(job_id=job_id)


@shared_task(name=SWEEP_TASK, queue=Queue.REPORTS, ignore_result=True)
def sweep() -> None:
    queued = services.sweep()
    if queued:
        log.info("repricing: queued again %s", ", ".join(map(str, queued)))


@beat_init.connect
def _register(sender: Any = None, **kwargs: Any) -> None:
    try:
        every = max(1, round(float(settings.TRACERELAY_REPRICE_SWEEP_INTERVAL_S)))
        ensure_interval_task(name=SWEEP_TASK_NAME, task=SWEEP_TASK, every=every, queue=Queue.REPORTS)
    except Exception:  # beat must still start; the schedule can be fixed in the admin
        log.exception("could not register the re-pricing sweep")
