"""Beat task: delete debug records past their retention (hourly). A front door to the service."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import beat_init

from config.celery import Queue, ensure_interval_task

from .services import debug_records_expire

log = logging.getLogger(__name__)

RETENTION_TASK_NAME = "debugmode: delete expired debug records"
RETENTION_TASK = "debugmode.expire"
RETENTION_EVERY_S = 3600


@shared_task(name=RETENTION_TASK, queue=Queue.INGEST, ignore_result=True)
def expire_debug_records() -> None:
    deleted = debug_records_expire()
    if deleted:
        log.info("debug mode: deleted %d expired debug records", deleted)


def ensure_schedule() -> None:
    ensure_interval_task(name=RETENTION_TASK_NAME, task=RETENTION_TASK, every=RETENTION_EVERY_S, queue=Queue.INGEST)


@beat_init.connect
def _register(sender: Any = None, **kwargs: Any) -> None:
    try:
        ensure_schedule()
    except Exception:  # beat must still start; the schedule can be fixed in the admin
        log.exception("could not register the debug record retention schedule")
