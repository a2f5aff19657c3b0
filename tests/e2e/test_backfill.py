"""Backfill with real Celery workers (the `backfill` queue beside `delivery`): a webhook added after
traces were stored receives every one; the worker running the job is killed with SIGKILL halfway,
and a new worker takes the job over where it stopped (the sweep sees its heartbeat go stale),
sending each trace to the outbox once."""

from __future__ import annotations

import signal
from datetime import timedelta

import pytest
from django.db.models import Count
from django.utils import timezone

from delivery.models import Backfill, BackfillStatus, Delivery

from .conftest import trace, wait_for
from .sink import WebhookSink

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FAST = {
    "TRACERELAY_BACKFILL_SLICE_S": "1",
    "TRACERELAY_BACKFILL_STALE_S": "2",
    "TRACERELAY_BACKFILL_SWEEP_INTERVAL_S": "1",
    "TRACERELAY_DELIVERY_LEASE_S": "2",
    "TRACERELAY_DELIVERY_HEARTBEAT_S": "0.3",
}


def test_a_backfill_survives_its_worker_being_killed(product, start_worker, api):
    since = timezone.now() - timedelta(minutes=5)
    product.ingest(*[trace(id=f"bf-{i:03d}") for i in range(120)])  # no rule, no integration yet
    with WebhookSink() as sink:
        hook = product.webhook("archive", sink.url)
        worker = start_worker(queues="delivery,backfill", **FAST)
        response = api.post(
            f"/api/v1/integrations/{hook['id']}/backfill",
            {
                "since": since.isoformat(),
                "until": timezone.now().isoformat(),
                "apply_rules": False,
                "max_per_second": 20,
            },
            format="json",
        )
        assert response.status_code == 202, response.content
        job_id = response.json()["id"]

        wait_for(lambda: len(sink.stored) >= 30, timeout=60, what="a first part of the backfill delivered")
        worker.kill(signal.SIGKILL)
        job = Backfill.objects.get(pk=job_id)
        assert job.status == BackfillStatus.RUNNING and len(sink.stored) < 120

        start_worker(queues="delivery,backfill", **FAST)
        wait_for(
            lambda: Backfill.objects.get(pk=job_id).status == BackfillStatus.SUCCEEDED,
            timeout=120,
            what="the backfill finished by the new worker",
        )
        assert set(sink.stored) == {f"bf-{i:03d}" for i in range(120)}
        per_trace = Delivery.objects.filter(backfill_id=job_id).values("trace_id").annotate(n=Count("pk"))
        assert len(per_trace) == 120 and {row["n"] for row in per_trace} == {1}  # one outbox row each
        body = api.get(f"/api/v1/backfills/{job_id}").json()
        assert (body["total"], body["sent"], body["skipped"], body["failed"]) == (120, 120, 0, 0)
