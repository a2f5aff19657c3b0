"""A re-pricing job for real: asked over the API, carried out by a Celery worker on the reports
queue, which is killed (SIGKILL) half-way; a second worker's beat finds the job's claim gone silent,
queues it again, and the job goes on from its cursor: every trace is priced once, and the rollups
end equal to the traces."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from django.db.models import Sum

from analytics import rollups
from analytics.models import HourRollup, Kind
from analytics.stats import cost_units
from config.bulk import insert_rows
from repricing.models import JobStatus, RepriceJob
from traces.models import Trace
from traces.pricing import price

from ..factories import TraceFactory
from .conftest import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
START = datetime(2026, 11, 3, tzinfo=UTC)
TRACES = 3000
ENV = {"TRACERELAY_REPRICE_CHUNK": "20", "TRACERELAY_REPRICE_STALE_S": "2", "TRACERELAY_REPRICE_SWEEP_INTERVAL_S": "1"}


def test_a_job_survives_its_worker_being_killed(start_worker, team, api):
    rows = [
        TraceFactory.build(team=team, timestamp=START + timedelta(seconds=20 * i), cost=Decimal("0.5"))
        for i in range(TRACES)
    ]
    with transaction.atomic():
        insert_rows(rows)
    assert rollups.fold() == TRACES
    first = start_worker(queues="reports", **ENV)
    r = api.post(
        "/api/v1/prices/reprice",
        {"since": START.isoformat(), "until": (START + timedelta(days=1)).isoformat()},
        format="json",
    )
    assert r.status_code == 202, r.content
    job_id = r.json()["id"]
    try:
        wait_for(lambda: RepriceJob.objects.get(pk=job_id).traces_done >= 200, timeout=120, what="the first chunks")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{first.log_tail()}") from None
    first.kill()  # SIGKILL, mid-job
    job = RepriceJob.objects.get(pk=job_id)
    assert job.status == JobStatus.RUNNING and 0 < job.traces_done < TRACES

    second = start_worker(queues="reports", **ENV)
    try:
        wait_for(
            lambda: RepriceJob.objects.get(pk=job_id).status == JobStatus.SUCCEEDED, timeout=180, what="the job's end"
        )
    except AssertionError as error:
        raise AssertionError(f"{error}\n{second.log_tail()}") from None
    job = RepriceJob.objects.get(pk=job_id)
    assert job.attempts == 2
    assert job.traces_total == job.traces_done == job.traces_changed == TRACES  # each trace once
    right = price(model="gpt-4o", provider="openai", prompt_tokens=100, completion_tokens=50).cost
    assert set(Trace.objects.filter(team=team).values_list("cost", flat=True)) == {right}
    assert job.cost_before == Decimal("0.5") * TRACES and job.cost_after == right * TRACES
    rollups.fold()
    folded = HourRollup.objects.filter(team=team, kind=Kind.ALL).aggregate(v=Sum("cost_e10"))["v"]
    assert folded == cost_units(right) * TRACES
    r = api.get(f"/api/v1/prices/reprice/{job_id}")
    assert r.json()["status"] == "succeeded" and r.json()["traces_done"] == TRACES
