"""The write path and the fold: ingest names its traces in a pending batch row that commits with
them; the fold adds them into one row per slice, once, and deletes the batch row."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django_celery_beat.models import PeriodicTask

from analytics import rollups, sketch, tasks
from analytics.models import DayRollup, HourRollup, Kind, MinuteRollup, PendingBatch, RollupDelta
from config.bulk import insert_rows
from traces.models import SPAN_PROVIDER

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db
WHEN = datetime(2026, 11, 20, 10, 15, 30, tzinfo=UTC)
MINUTE = int(WHEN.timestamp()) // 60 * 60


def _stored(rows):
    """As ingest: the traces and their pending batch row in one transaction."""
    with transaction.atomic():
        insert_rows(rows)
        rollups.record(rows)
    return rows


def test_pending_rows_roll_back_with_their_traces(team):
    rows = TraceFactory.build_batch(3, team=team, timestamp=WHEN)
    with pytest.raises(RuntimeError), transaction.atomic():
        insert_rows(rows)
        rollups.record(rows)
        raise RuntimeError("the ingest transaction fails")
    assert not PendingBatch.objects.filter(team_id=team.id).exists()


def test_one_transaction_writes_one_row_per_team_without_the_spans(team, other_team):
    ours = TraceFactory.build_batch(2, team=team, timestamp=WHEN)
    ours.append(TraceFactory.build(team=team, timestamp=WHEN + timedelta(seconds=95)))
    span = TraceFactory.build(team=team, timestamp=WHEN + timedelta(hours=1), provider=SPAN_PROVIDER)
    theirs = TraceFactory.build_batch(1, team=other_team, timestamp=WHEN - timedelta(seconds=7))
    _stored([*ours, span, *theirs])
    batches = {b.team_id: b for b in PendingBatch.objects.filter(team_id__in=[team.id, other_team.id])}
    assert set(batches) == {team.id, other_team.id}
    mine = batches[team.id]
    assert sorted(mine.trace_ids) == sorted(t.id for t in ours)  # the span is no LLM call
    assert (mine.first_second, mine.last_second) == (int(WHEN.timestamp()), int(WHEN.timestamp()) + 95)
    assert batches[other_team.id].trace_ids == [theirs[0].id]


def test_only_spans_write_no_row(team):
    _stored([TraceFactory.build(team=team, timestamp=WHEN, provider=SPAN_PROVIDER)])
    assert not PendingBatch.objects.filter(team_id=team.id).exists()


def test_a_fold_makes_one_row_per_slice_and_tag(team):
    rows = TraceFactory.build_batch(4, team=team, timestamp=WHEN, tags=["a", "b"])
    rows += TraceFactory.build_batch(2, team=team, timestamp=WHEN, model="gpt-4o-mini", tags=["a", "a", 7])
    _stored(rows)
    assert rollups.fold() == 6
    dims = MinuteRollup.objects.filter(kind=Kind.DIMS).order_by("model")
    assert [(d.model, d.count, d.bucket) for d in dims] == [("gpt-4o", 4, MINUTE), ("gpt-4o-mini", 2, MINUTE)]
    tags = {d.key: d.count for d in MinuteRollup.objects.filter(kind=Kind.TAG)}
    assert tags == {"a": 6, "b": 4}  # a repeated tag counts once per trace; a non-string is no tag
    assert not PendingBatch.objects.filter(team_id=team.id).exists()


def test_folds_add_into_existing_rows(team):
    for _ in range(2):
        _stored(TraceFactory.build_batch(3, team=team, timestamp=WHEN, prompt_tokens=10))
        assert rollups.fold() == 3
    for model, bucket in ((MinuteRollup, 60), (HourRollup, 3600), (DayRollup, 86400)):
        row = model.objects.get(kind=Kind.ALL)
        assert (row.count, row.prompt_tokens, row.bucket) == (6, 60, int(WHEN.timestamp()) // bucket * bucket)
        assert (row.latency_keys, row.latency_counts) == ([sketch.key_of(420)], [6])
        assert model.objects.get(kind=Kind.MODEL).key == "gpt-4o"
        assert model.objects.get(kind=Kind.PROVIDER).status == "success"
    assert not PendingBatch.objects.filter(team_id=team.id).exists()


def test_a_second_fold_adds_nothing(team):
    _stored(TraceFactory.build_batch(3, team=team, timestamp=WHEN))
    assert rollups.fold() == 3
    before = list(MinuteRollup.objects.order_by("id").values())
    assert rollups.fold() == 0
    assert list(MinuteRollup.objects.order_by("id").values()) == before


def test_legacy_delta_rows_of_a_rolling_deploy_are_folded_once(team, monkeypatch):
    """Processes of the previous release write RollupDelta rows after the upgrade: the fold adds
    them into the rollups (with the pending batches of this release) and deletes them."""
    monkeypatch.setattr(rollups, "LEGACY_BATCH", 2)  # (several transactions)
    HourRollup.objects.create(team=team, bucket=7200, kind=Kind.ALL, count=2, latency_keys=[300], latency_counts=[2])
    for minute, model in ((7260, "gpt-4o"), (7320, "gpt-4o"), (7320, "claude")):
        RollupDelta.objects.create(
            team=team, bucket=minute, kind=Kind.DIMS, model=model, provider="openai", status="success",
            count=1, success=1, cost_e10=5, latency_count=1, latency_sum=410, latency_keys=[304], latency_counts=[1],
        )  # fmt: skip
    RollupDelta.objects.create(team=team, bucket=7320, kind=Kind.TAG, key="beta", count=1, success=1)
    _stored(TraceFactory.build_batch(2, team=team, timestamp=WHEN))

    assert rollups.fold() == 4 + 2  # delta rows, then traces
    hours = HourRollup.objects.filter(bucket=7200)
    got = hours.get(kind=Kind.ALL)
    assert (got.count, got.latency_keys, got.latency_counts) == (5, [300, 304], [2, 3])
    assert {r.key: r.count for r in hours.filter(kind=Kind.MODEL)} == {"gpt-4o": 2, "claude": 1}
    assert hours.get(kind=Kind.TAG).key == "beta"
    assert {r.bucket: r.count for r in MinuteRollup.objects.filter(kind=Kind.ALL, bucket__lt=86400)} == {
        7260: 1,
        7320: 2,
    }
    assert DayRollup.objects.get(kind=Kind.ALL, bucket=0).cost_e10 == 15
    assert HourRollup.objects.get(kind=Kind.ALL, bucket=MINUTE // 3600 * 3600).count == 2
    assert not RollupDelta.objects.exists()
    assert rollups.fold() == 0


def test_the_fold_works_through_many_batches(team):
    for i in range(7):
        _stored(TraceFactory.build_batch(2, team=team, timestamp=WHEN + timedelta(minutes=i)))
    assert rollups.fold(batch=3) == 14  # three transactions of at most 3 batch rows
    assert HourRollup.objects.get(kind=Kind.ALL).count == 14
    assert MinuteRollup.objects.filter(kind=Kind.ALL).count() == 7


def test_a_trace_deleted_before_the_fold_is_not_counted(team):
    rows = _stored(TraceFactory.build_batch(3, team=team, timestamp=WHEN))
    rows[0].delete()  # retention, say
    assert rollups.fold() == 2
    assert MinuteRollup.objects.get(kind=Kind.ALL).count == 2
    assert not PendingBatch.objects.filter(team_id=team.id).exists()


def test_a_batch_whose_traces_are_all_gone_is_dropped(team):
    rows = _stored(TraceFactory.build_batch(2, team=team, timestamp=WHEN))
    for row in rows:
        row.delete()
    assert rollups.fold() == 0
    assert not PendingBatch.objects.filter(team_id=team.id).exists()
    assert not MinuteRollup.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_ingest_transactions_neither_wait_nor_get_lost(team):
    """One ingest transaction stays open while another commits and a fold runs: the second never
    waits, the fold takes what is committed only, and a later fold the rest."""
    opened, release, finished = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def slow_ingest() -> None:
        try:
            with transaction.atomic():
                _stored(TraceFactory.build_batch(2, team=team, timestamp=WHEN))
                opened.set()
                assert release.wait(30)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            opened.set()
        finally:
            connection.close()
            finished.set()

    thread = threading.Thread(target=slow_ingest)
    thread.start()
    try:
        assert opened.wait(30)
        with connection.cursor() as cursor:  # (a wait would show as this timeout)
            cursor.execute("SET lock_timeout = '5s'")
        _stored(TraceFactory.build_batch(3, team=team, timestamp=WHEN))
        assert rollups.fold() == 3
        assert MinuteRollup.objects.get(kind=Kind.ALL).count == 3
    finally:
        release.set()
        assert finished.wait(30)
        thread.join()
    assert not errors
    assert rollups.fold() == 2
    assert MinuteRollup.objects.get(kind=Kind.ALL).count == 5
    assert not PendingBatch.objects.filter(team_id=team.id).exists()


def test_beat_gets_both_schedules_and_the_fold_task_folds(team, settings):
    settings.TRACERELAY_ANALYTICS_FOLD_INTERVAL_S = 5
    tasks.ensure_schedules()
    tasks.ensure_schedules()  # idempotent
    fold = PeriodicTask.objects.get(name=tasks.FOLD_TASK_NAME)
    assert (fold.task, fold.interval.every, fold.queue) == ("analytics.fold", 5, "ingest")
    assert PeriodicTask.objects.get(name=tasks.RETENTION_TASK_NAME).interval.every == 3600
    _stored(TraceFactory.build_batch(2, team=team, timestamp=WHEN))
    tasks.fold()
    assert not PendingBatch.objects.filter(team_id=team.id).exists()
    assert MinuteRollup.objects.get(kind=Kind.ALL).count == 2
