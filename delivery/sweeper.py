"""The sweeper: re-dispatch outbox rows whose task was lost, take back claims of dead workers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from config import metrics

from . import lease, outbox
from .models import Delivery, DeliveryStatus

# Rows per sweeper run (it runs again in a few seconds if there were more).
SWEEP_LIMIT = 10_000


@dataclass
class SweepReport:
    reclaimed: int = 0  # sending rows whose worker vanished (lease expired) or held them too long
    dispatched: int = 0  # pending, due rows handed to the broker again


def sweep(*, now: datetime | None = None, limit: int = SWEEP_LIMIT, take_over: bool = True) -> SweepReport:
    """Re-dispatch outbox rows whose task was lost: due but never picked up (the on_commit publish
    failed, the broker lost the message), or claimed by a worker that died mid-send.

    A dead worker's claims are taken over when its lease expires (`lease.take_over_expired`, which
    every live worker's heartbeat also runs, so it rarely waits for this sweep; not when
    ``take_over`` is false: this process's own lease is too young to tell). Any claim older than
    the claim timeout is taken back too, lease or not: a send stuck in a live process, or a row
    claimed where no lease was held.
    """
    now = now or timezone.now()
    report = SweepReport()
    if take_over:
        report.reclaimed += lease.take_over_expired(limit=limit)
    claim_timeout = timedelta(seconds=float(settings.TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S))
    grace = timedelta(seconds=float(settings.TRACERELAY_OUTBOX_SWEEP_GRACE_S))

    stale = list(
        Delivery.objects.filter(status=DeliveryStatus.SENDING, claimed_at__lt=now - claim_timeout).values_list(
            "pk", flat=True
        )[:limit]
    )
    if stale:
        timed_out = Delivery.objects.filter(
            pk__in=stale, status=DeliveryStatus.SENDING, claimed_at__lt=now - claim_timeout
        ).update(
            status=DeliveryStatus.PENDING,
            claim_token=None,
            next_attempt_at=now,
            dispatched_at=now,
            last_error="the worker sending this row stopped before recording an outcome; sending again",
            updated_at=now,
        )
        if timed_out:
            metrics.record_claims_taken_over("claim_timeout", timed_out)
        report.reclaimed += timed_out

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
