"""The write path and the fold: deltas commit with their traces, fold into one row per slice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction
from django_celery_beat.models import PeriodicTask

from analytics import rollups, tasks
from analytics.models import COUNTERS, DIMENSIONS, HISTOGRAMS, DayRollup, HourRollup, Kind, MinuteRollup, RollupDelta
from config.bulk import insert_rows
from traces.models import SPAN_PROVIDER

from ..factories import TraceFactory
from .data import make_traces

pytestmark = pytest.mark.django_db
WHEN = datetime(2026, 11, 20, 10, 15, 30, tzinfo=UTC)


def test_deltas_roll_back_with_their_traces(team):
    rows = TraceFactory.build_batch(3, team=team, timestamp=WHEN)
    with pytest.raises(RuntimeError), transaction.atomic():
        insert_rows(rows)
        rollups.record(rows)
        raise RuntimeError("the ingest transaction fails")
    assert not RollupDelta.objects.exists()


def _stored(rows):
    """As ingest: the traces and their deltas in one transaction (on Postgres, `record` adds up
    the stored rows)."""
    with transaction.atomic():
        insert_rows(rows)
        rollups.record(rows)
    return rows


def test_one_batch_makes_one_delta_per_slice_and_tag(team):
    rows = TraceFactory.build_batch(4, team=team, timestamp=WHEN, tags=["a", "b"])
    rows += TraceFactory.build_batch(2, team=team, timestamp=WHEN, model="gpt-4o-mini", tags=["a", "a"])
    _stored(rows)
    dims = RollupDelta.objects.filter(kind=Kind.DIMS).order_by("model")
    assert [(d.model, d.count, d.bucket) for d in dims] == [
        ("gpt-4o", 4, int(WHEN.timestamp()) // 60 * 60),
        ("gpt-4o-mini", 2, int(WHEN.timestamp()) // 60 * 60),
    ]
    tags = {d.key: d.count for d in RollupDelta.objects.filter(kind=Kind.TAG)}
    assert tags == {"a": 6, "b": 4}  # a repeated tag counts once per trace


def test_folds_add_into_existing_rows(team):
    for _ in range(2):
        _stored(TraceFactory.build_batch(3, team=team, timestamp=WHEN, prompt_tokens=10))
        assert rollups.fold() == 1  # no tags: one DIMS delta per batch
    for model, bucket in ((MinuteRollup, 60), (HourRollup, 3600), (DayRollup, 86400)):
        row = model.objects.get(kind=Kind.ALL)
        assert (row.count, row.prompt_tokens, row.bucket) == (6, 60, int(WHEN.timestamp()) // bucket * bucket)
        assert model.objects.get(kind=Kind.MODEL).key == "gpt-4o"
        assert model.objects.get(kind=Kind.PROVIDER).status == "success"
    assert not RollupDelta.objects.exists()


def test_beat_gets_both_schedules_and_the_fold_task_folds(team, settings):
    settings.TRACERELAY_ANALYTICS_FOLD_INTERVAL_S = 5
    tasks.ensure_schedules()
    tasks.ensure_schedules()  # idempotent
    fold = PeriodicTask.objects.get(name=tasks.FOLD_TASK_NAME)
    assert (fold.task, fold.interval.every, fold.queue) == ("analytics.fold", 5, "ingest")
    assert PeriodicTask.objects.get(name=tasks.RETENTION_TASK_NAME).interval.every == 3600
    _stored(TraceFactory.build_batch(2, team=team, timestamp=WHEN))
    tasks.fold()
    assert not RollupDelta.objects.exists()
    assert MinuteRollup.objects.get(kind=Kind.ALL).count == 2


def _deltas(rows):
    fields = ["team_id", "bucket", "kind", *DIMENSIONS, "key", *COUNTERS, *HISTOGRAMS]
    return sorted(tuple(str(getattr(d, f)) for f in fields) for d in rows)


def test_postgres_adds_up_the_same_deltas_as_python(team, other_team):
    """`record` on Postgres (SQL over the stored rows) and `build_deltas` (SQLite) agree to the
    last histogram bucket, on varied traces: two teams, minutes, statuses, tags (repeated, and
    not strings), no latency, zero latency, latencies on bucket edges, unpriced, a manual span."""
    rows = make_traces(team.id, n=400, start=WHEN, span=timedelta(minutes=3))
    rows += make_traces(other_team.id, n=50, start=WHEN, span=timedelta(minutes=1), seed=4)
    edges = [0, 1, 2, 49, 50, 51, 1000, 65535, 65536, 10**7, None]
    for i, latency in enumerate(edges):
        rows[i].latency_ms, rows[i].time_to_first_token_ms = latency, edges[-1 - i]
    rows[20].tags, rows[21].tags = ["x", "x", "y"], ["x", 3, None]
    rows[22].provider, rows[22].model = SPAN_PROVIDER, "span:block"
    rows[23].cost, rows[23].unpriced = None, True
    _stored(rows)
    in_sql = list(RollupDelta.objects.all())
    assert len(in_sql) > 40
    assert _deltas(in_sql) == _deltas(rollups.build_deltas(rows))
