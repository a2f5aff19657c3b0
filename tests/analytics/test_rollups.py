"""The write path and the fold: deltas commit with their traces, fold into one row per slice."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import transaction
from django_celery_beat.models import PeriodicTask

from analytics import rollups, tasks
from analytics.models import DayRollup, HourRollup, Kind, MinuteRollup, RollupDelta
from config.bulk import insert_rows

from ..factories import TraceFactory

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
    """As ingest: the traces and their deltas in one transaction."""
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
