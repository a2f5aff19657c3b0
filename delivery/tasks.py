"""Delivery tasks: another front door to the engine and the sweeper, nothing more.

Tasks take Delivery ids, never payloads (the outbox row is the truth); results are ignored;
``acks_late`` so a message whose worker died is redelivered, and ``autoretry_for`` only the
database blips that may well pass on the next try. Everything else that can go wrong with a
destination is the engine's business (retries, breaker, fallbacks), recorded on the rows.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import beat_init, worker_process_init, worker_process_shutdown, worker_ready, worker_shutdown
from django.conf import settings
from django.db import InterfaceError, OperationalError

from config.celery import Queue, ensure_interval_task

from . import lease
from .backfill.job import BACKFILL_TASK, publish_job, run_slice, sweep_backfills
from .client import close_http_client
from .engine import deliver_batch
from .outbox import DELIVER_TASK
from .scores import SEND_SCORES_TASK, send_scores, sweep_scores
from .sweeper import sweep

log = logging.getLogger(__name__)

# Names kept from when these tasks lived in `routing`: queued messages and the beat schedule rows
# already in databases carry them.
SWEEPER_TASK_NAME = "routing: sweep the delivery outbox"
SWEEP_TASK = "routing.sweep_outbox"
BACKFILL_SWEEPER_NAME = "delivery: take over stalled backfills"
BACKFILL_SWEEP_TASK = "delivery.sweep_backfills"

# The options of every task that takes rows to send: redelivered if its worker dies, retried only on
# the database blips that may well pass on the next try.
_RETRY_DB_BLIPS: dict[str, Any] = {
    "ignore_result": True,
    "acks_late": True,
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "max_retries": 5,
}


@shared_task(
    name=DELIVER_TASK,
    queue=Queue.DELIVERY,
    **_RETRY_DB_BLIPS,
)
def deliver(delivery_ids: list[int]) -> None:
    _hold_lease()  # claims carry this process's lease (a prefork child starts its own here)
    report = deliver_batch(delivery_ids)
    if report.retried or report.dead or report.failed:
        log.info(
            "delivery batch: %d delivered, %d retrying, %d to fallback, %d dead, %d deferred",
            report.delivered,
            report.retried,
            report.failed,
            report.dead,
            report.deferred,
        )


@shared_task(
    name=SEND_SCORES_TASK,
    queue=Queue.DELIVERY,
    **_RETRY_DB_BLIPS,
)
def deliver_scores(score_delivery_ids: list[int]) -> None:
    report = send_scores(score_delivery_ids)
    if report.retried or report.dead:
        log.info("scores: %d delivered, %d retrying, %d dead", report.delivered, report.retried, report.dead)


@shared_task(name=SWEEP_TASK, queue=Queue.DELIVERY, ignore_result=True, acks_late=True)
def sweep_outbox() -> None:
    _hold_lease()
    scores = sweep_scores()
    if scores:
        log.info("outbox sweep: %d score deliveries dispatched", scores)
    report = sweep(take_over=lease.may_take_over())
    if report.reclaimed or report.dispatched:
        log.info("outbox sweep: %d reclaimed from dead workers, %d dispatched", report.reclaimed, report.dispatched)


@shared_task(
    name=BACKFILL_TASK,
    queue=Queue.BACKFILL,
    **_RETRY_DB_BLIPS,
)
def backfill(backfill_id: int) -> None:
    """Run a backfill for a slice of time, then hand it to a fresh task (docs/delivery.md, Backfill)."""
    if run_slice(backfill_id):
        publish_job(backfill_id)


@shared_task(name=BACKFILL_SWEEP_TASK, queue=Queue.BACKFILL, ignore_result=True)
def sweep_stalled_backfills() -> None:
    found = sweep_backfills()
    if found:
        log.info("backfill sweep: %d jobs published again", found)


def ensure_sweeper_schedule() -> None:
    """Write the sweeper's periodic task with TRACERELAY_OUTBOX_SWEEP_INTERVAL_S."""
    every = max(1, round(float(settings.TRACERELAY_OUTBOX_SWEEP_INTERVAL_S)))
    ensure_interval_task(name=SWEEPER_TASK_NAME, task=SWEEP_TASK, every=every, queue=Queue.DELIVERY)
    every = max(1, round(float(settings.TRACERELAY_BACKFILL_SWEEP_INTERVAL_S)))
    ensure_interval_task(name=BACKFILL_SWEEPER_NAME, task=BACKFILL_SWEEP_TASK, every=every, queue=Queue.BACKFILL)


@beat_init.connect
def _register_sweeper(sender: Any = None, **kwargs: Any) -> None:
    try:
        ensure_sweeper_schedule()
    except Exception:  # beat must still start; the schedule can be fixed in the admin
        log.exception("could not register the outbox sweeper schedule")


def _hold_lease() -> None:
    try:
        lease.start()
    except Exception:  # the database is away: this task fails on it anyway, or claims without a lease
        log.warning("could not register this delivery worker's lease", exc_info=True)


@worker_ready.connect
def _start_lease(sender: Any = None, **kwargs: Any) -> None:
    """A worker holds a lease from its start: its heartbeat also takes over the claims of workers
    that died, even before any task arrives (the dead worker's own messages are not redelivered
    until the broker's visibility timeout). With the prefork pool the children hold theirs (below):
    the parent must not open database connections that the children it forks later would inherit."""
    from celery.concurrency.prefork import TaskPool as PreforkPool

    if isinstance(getattr(sender, "pool", None), PreforkPool):
        return
    _hold_lease()


@worker_process_init.connect
def _start_child_lease(**kwargs: Any) -> None:
    """A prefork child (or the solo pool's process) holds a lease from its start."""
    _hold_lease()


@worker_process_shutdown.connect
def _close_client(**kwargs: Any) -> None:
    close_http_client()
    lease.stop()


@worker_shutdown.connect
def _give_lease_up(**kwargs: Any) -> None:
    lease.stop()
