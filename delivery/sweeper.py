"""The sweeper: re-dispatch outbox rows whose task was lost, take back claims of dead workers."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.db.models.functions import Now
from django.utils import timezone

from config import metrics

from . import outbox
from .models import Delivery, DeliveryStatus, DeliveryWorker

log = logging.getLogger(__name__)

# Rows per sweeper run (it runs again in a few seconds if there were more), and per takeover.
SWEEP_LIMIT = 10_000
LEASE_EXPIRED = "its worker stopped renewing its lease before recording an outcome (it died); sending again"
CLAIM_TIMED_OUT = "the worker sending this row stopped before recording an outcome; sending again"


@dataclass
class SweepReport:
    reclaimed: int = 0  # sending rows whose worker vanished (lease expired) or held them too long
    dispatched: int = 0  # pending, due rows handed to the broker again


def sweep(*, now: datetime | None = None, limit: int = SWEEP_LIMIT, take_over: bool = True) -> SweepReport:
    """Re-dispatch outbox rows whose task was lost: due but never picked up (the on_commit publish
    failed, the broker lost the message), or claimed by a worker that died mid-send.

    A dead worker's claims are taken over when its lease expires (`take_over_expired`, which every
    live worker's heartbeat also runs, so it rarely waits for this sweep; not when ``take_over`` is
    false: this process's own lease is too young to tell). Any claim older than the claim timeout
    is taken back too, lease or not: a send stuck in a live process, or a row claimed where no
    lease was held.
    """
    now = now or timezone.now()
    report = SweepReport()
    if take_over:
        report.reclaimed += take_over_expired(limit=limit)
    claim_timeout = timedelta(seconds=float(settings.TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S))
    grace = timedelta(seconds=float(settings.TRACERELAY_OUTBOX_SWEEP_GRACE_S))

    held_too_long = Delivery.objects.filter(status=DeliveryStatus.SENDING, claimed_at__lt=now - claim_timeout)
    stale = list(held_too_long.order_by("batch_id", "pk").values_list("pk", flat=True)[:limit])
    if stale:
        report.reclaimed += _take_back(held_too_long.filter(pk__in=stale), CLAIM_TIMED_OUT, "claim_timeout", now)

    lost = list(
        Delivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now - grace)
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lte=now - grace))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    if lost:
        Delivery.objects.filter(pk__in=lost).update(dispatched_at=now)
    ids = [*stale, *lost]
    if ids and outbox.publish(ids):
        report.dispatched = len(ids)
    return report


def lease_seconds() -> float:
    """TRACERELAY_DELIVERY_LEASE_S: how old a worker's heartbeat may get before it is taken for dead."""
    return max(1.0, float(settings.TRACERELAY_DELIVERY_LEASE_S))


def expired_workers() -> QuerySet[DeliveryWorker]:
    """Workers whose heartbeat is older than the lease, by the database's clock (`delivery.lease`)."""
    return DeliveryWorker.objects.filter(heartbeat_at__lt=Now() - timedelta(seconds=lease_seconds()))


def take_over_expired(*, limit: int = SWEEP_LIMIT) -> int:
    """Put the rows that workers with an expired lease were sending back to pending and dispatch
    them (their batches re-form whole: `delivery.batches`); the number taken over.

    One conditional UPDATE, whose condition is the lease still being expired when it runs: a
    worker that renewed meanwhile keeps its rows. Costs one look-up in the (small) worker table
    when no lease expired. A worker with nothing left is forgotten.
    """
    if not expired_workers().exists():
        return 0
    held = Delivery.objects.filter(status=DeliveryStatus.SENDING, claimed_by__in=expired_workers().values("pk"))
    ids = list(held.order_by("batch_id", "pk").values_list("pk", flat=True)[:limit])
    taken = _take_back(held.filter(pk__in=ids), LEASE_EXPIRED, "lease_expired", timezone.now()) if ids else 0
    if taken:
        log.warning("took over %d deliveries from delivery workers whose lease expired", taken)
        outbox.publish(ids)
    if len(ids) < limit:
        still_held = Delivery.objects.filter(status=DeliveryStatus.SENDING, claimed_by__isnull=False)
        expired_workers().exclude(pk__in=still_held.values("claimed_by")).delete()
    return taken


def _take_back(rows: QuerySet[Delivery], message: str, reason: str, now: datetime) -> int:
    """Claims taken back from their worker: pending again, due now (the attempt made counts),
    marked dispatched (the caller publishes them, by batch: whole batches share a task)."""
    taken = rows.update(
        status=DeliveryStatus.PENDING,
        claim_token=None,
        next_attempt_at=now,
        dispatched_at=now,
        last_error=message,
        updated_at=now,
    )
    if taken:
        metrics.record_claims_taken_over(reason, taken)
    return int(taken)
