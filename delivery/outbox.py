"""The outbox: Delivery rows written in the trace's own transaction, dispatched after it commits.

The ingest path calls `deliveries_for` to build the rows (it bulk-inserts them beside the Trace
rows) and `enqueue_on_commit` with their ids. Publishing is best effort: when the broker is
down the rows simply stay ``pending`` in the database and the sweeper (`delivery.tasks.sweep_outbox`)
dispatches them once the broker is back. Nothing is lost, nothing blocks the ingest for long.

Tasks are published by name (`DELIVER_TASK`), so this module imports no task module: the tasks
import the engine, and the engine imports this module.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.bulk import build_row
from config.celery import Queue, app
from routing.router import RoutingResult
from traces.models import Trace

from .models import Delivery, DeliveryStatus

log = logging.getLogger(__name__)

# The deliver task's name: kept from when it lived in `routing` (queued messages carry it).
DELIVER_TASK = "routing.deliver"

# After a failed publish, skip publishing for a few seconds: each attempt against a dead broker
# costs a connection timeout, and the sweeper dispatches the rows anyway once it is back.
_BROKER_BACKOFF_S = 5.0
_broker_down_until = 0.0
_lock = threading.Lock()


def deliveries_for(trace: Trace, result: RoutingResult) -> list[Delivery]:
    """Unsaved outbox rows, one per kept routing decision (the caller inserts them)."""
    now = timezone.now()
    return [
        build_row(
            Delivery,
            {
                "team_id": trace.team_id,
                "trace_id": trace.pk,
                "destination": decision.destination.name,
                "spec": decision.destination.as_dict(),
                "rule_name": decision.rule,
                "status": DeliveryStatus.PENDING,
                "next_attempt_at": now,
                "created_at": now,
                "updated_at": now,
            },
        )
        for decision in result.kept
    ]


def enqueue_on_commit(delivery_ids: Sequence[int]) -> None:
    """Publish delivery tasks for these rows once the current transaction commits.

    Outside a transaction Django runs the callback at once. A broker failure is logged, never raised.
    """
    ids = [int(i) for i in delivery_ids]
    if not ids:
        return
    transaction.on_commit(lambda: publish(ids))


def publish(delivery_ids: Iterable[int], *, countdown: float | None = None) -> bool:
    """Send `deliver` tasks for the ids, in chunks. True when all were handed to the broker."""
    global _broker_down_until
    ids = list(delivery_ids)
    if not ids:
        return True
    if time.monotonic() < _broker_down_until:
        return False
    chunk = max(1, int(settings.TRACERELAY_DELIVERY_TASK_CHUNK))
    try:
        for start in range(0, len(ids), chunk):
            app.send_task(
                DELIVER_TASK,
                args=[ids[start : start + chunk]],
                countdown=countdown,
                queue=str(Queue.DELIVERY),
                retry=False,
            )
    except Exception as exc:  # any broker/transport error: the rows are safe in the outbox
        with _lock:
            _broker_down_until = time.monotonic() + _BROKER_BACKOFF_S
        log.warning("could not publish %d deliveries (the sweeper will pick them up): %s", len(ids), exc)
        return False
    return True
