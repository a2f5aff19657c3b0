"""Writes: start a backfill, cancel one (each audited)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.services import audit
from integrations.models import Integration

from ..models import BACKFILL_ACTIVE, Backfill, BackfillStatus, Delivery, DeliveryStatus
from . import job as jobs

DEFAULT_PER_SECOND = 200
MAX_PER_SECOND = 10_000


class NotCancellable(Exception):
    def __init__(self, status: str) -> None:
        super().__init__(f"only a pending or running backfill can be cancelled; this one is {status}")
        self.status = status


def backfill_start(
    *,
    integration: Integration,
    since: datetime,
    until: datetime,
    filters: Mapping[str, Any],
    apply_rules: bool,
    max_per_second: int | None,
    actor: str,
) -> Backfill:
    """A pending job, published to the backfill queue once the transaction commits."""
    with transaction.atomic():
        job = Backfill.objects.create(
            team_id=integration.team_id,
            integration=integration,
            since=since,
            until=until,
            filters=dict(filters),
            apply_rules=apply_rules,
            max_per_second=max_per_second or DEFAULT_PER_SECOND,
            created_by=actor,
        )
        audit(
            team=integration.team_id,
            actor=actor,
            action="integration.backfill",
            target=integration.name,
            data={
                "backfill": job.pk,
                "since": since.isoformat(),
                "until": until.isoformat(),
                "apply_rules": apply_rules,
            },
        )
        transaction.on_commit(lambda: jobs.publish_job(job.pk))
    return job


def backfill_cancel(*, job: Backfill, actor: str) -> Backfill:
    """Stop the job; its rows not yet sent are withdrawn (a later backfill may send those traces)."""
    now = timezone.now()
    with transaction.atomic():
        changed = Backfill.objects.filter(pk=job.pk, status__in=BACKFILL_ACTIVE).update(
            status=BackfillStatus.CANCELLED, finished_at=now, claim_token=None, heartbeat_at=None
        )
        if not changed:
            job.refresh_from_db()
            raise NotCancellable(job.status)
        Delivery.objects.filter(backfill_id=job.pk, status=DeliveryStatus.PENDING, batch_id__isnull=True).delete()
        counts = jobs.outcome_counts(job.pk)
        Backfill.objects.filter(pk=job.pk).update(sent=counts["sent"], failed=counts["failed"])
        audit(team=job.team_id, actor=actor, action="integration.backfill_cancel", target=str(job.pk))
    job.refresh_from_db()
    return job
