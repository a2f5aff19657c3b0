"""Beat evaluates every alert every TRACERELAY_ALERT_EVALUATE_INTERVAL_S (a front door to
alerts.services, nothing more)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import beat_init
from django.conf import settings

from config.celery import Queue, ensure_interval_task

from . import services

log = logging.getLogger(__name__)
EVALUATE_TASK_NAME = "alerts: evaluate spend alerts"


@shared_task(name="alerts.evaluate", queue=Queue.REPORTS, ignore_result=True)
def evaluate() -> None:
    outcomes = services.evaluate_all()
    events = [o for o in outcomes if o.event]
    if events:
        log.info("alerts: %s", ", ".join(f"{o.alert_id} {o.event}" for o in events))


@beat_init.connect
def _register(sender: Any = None, **kwargs: Any) -> None:
    try:
        every = max(1, round(float(settings.TRACERELAY_ALERT_EVALUATE_INTERVAL_S)))
        ensure_interval_task(name=EVALUATE_TASK_NAME, task="alerts.evaluate", every=every, queue=Queue.REPORTS)
    except Exception:  # beat must still start; the schedule can be fixed in the admin
        log.exception("could not register the alerts schedule")
