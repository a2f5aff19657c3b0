"""The write path and the fold: a trace row names its own transaction (rollup_xid) and ingest sends
nothing more; the fold adds the traces its stored snapshot does not see into one row per slice,
once, and stores the newer snapshot. Batch rows (the previous release's processes' form, in a
rolling deploy) are added and deleted."""

from __future__ import annotations

import io
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django_celery_beat.models import PeriodicTask

from analytics import rollups, sketch, snapshots, tasks
from analytics.models import DayRollup, HourRollup, Kind, MinuteRollup, PendingBatch, RollupDelta
from analytics.snapshots import Snapshot
from config.bulk import insert_rows

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db
WHEN = datetime(2026, 11, 20, 10, 15, 30, tzinfo=UTC)
MINUTE = int(WHEN.timestamp()) // 60 * 60


def _stored(rows):
    """As ingest: the traces in one transaction."""
    with transaction.atomic():
        insert_rows(rows)
    return rows


def _stored_by_previous_release(rows):
    """As the previous release's ingest: the traces and a batch row naming them, in one transaction."""
    with transaction.atomic():
        insert_rows(rows)
        seconds = [int(t.timestamp.timestamp()) for t in rows]
        PendingBatch.objects.create(
            team_id=rows[0].team_id,
            trace_ids=[t.id for t in rows],
            first_second=min(seconds),
            last_second=max(seconds),
        )
    return rows


def _xids(rows):
    with connection.cursor() as cursor:
        cursor.execute("SELECT rollup_xid::text FROM traces_trace WHERE id = ANY(%s)", [[t.id for t in rows]])
        return [None if x is None else int(x) for (x,) in cursor.fetchall()]


def test_a_trace_row_names_the_transaction_that_stored_it(team):
    rows = TraceFactory.build_batch(3, team=team, timestamp=WHEN)
    with transaction.atomic():
        insert_rows(rows)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_current_xact_id()::text")
            own = int(cursor.fetchone()[0])
    assert _xids(rows) == [own] * 3
    assert not PendingBatch.objects.exists()


def test_the_spans_are_not_counted(team, other_team):
    ours = TraceFactory.build_batch(2, team=team, timestamp=WHEN)
    span = TraceFactory.build(team=team, timestamp=WHEN + timedelta(hours=1), kind="tool", model="")
    theirs = TraceFactory.build_batch(1, team=other_team, timestamp=WHEN - timedelta(seconds=7))
    _stored([*ours, span, *theirs])
    assert rollups.fold() == 3  # the tool span is no call
    assert {r.team_id: r.count for r in HourRollup.objects.filter(kind=Kind.ALL)} == {team.id: 2, other_team.id: 1}


def test_a_fold_makes_one_row_per_slice_and_tag(team):
    rows = TraceFactory.build_batch(4, team=team, timestamp=WHEN, tags=["a", "b"])
    rows += TraceFactory.build_batch(2, team=team, timestamp=WHEN, model="gpt-4o-mini", tags=["a", "a", 7])
    _stored(rows)
    assert rollups.fold() == 6
    dims = MinuteRollup.objects.filter(kind=Kind.DIMS).order_by("model")
    assert [(d.model, d.count, d.bucket) for d in dims] == [("gpt-4o", 4, MINUTE), ("gpt-4o-mini", 2, MINUTE)]
    tags = {d.key: d.count for d in MinuteRollup.objects.filter(kind=Kind.TAG)}
    assert tags == {"a": 6, "b": 4}  # a repeated tag counts once per trace; a non-string is no tag


@pytest.mark.django_db(transaction=True)
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


@pytest.mark.django_db(transaction=True)
def test_the_fold_works_through_a_backlog_in_steps(team, monkeypatch):
    """Seven ingest transactions; at most about three traces a fold transaction: each step stores a
    snapshot cut below a transaction id, and every trace is counted once."""
    for i in range(7):
        _stored(TraceFactory.build_batch(2, team=team, timestamp=WHEN + timedelta(minutes=i)))
    stored: list[Snapshot] = []
    store = snapshots.store
    monkeypatch.setattr(snapshots, "store", lambda snapshot: (stored.append(snapshot), store(snapshot)))
    assert rollups.fold(traces=3) == 14
    assert len(stored) == 4  # 2 + 2 (the limit falls in a transaction: all of it), 2 + 2, 2 + 2, 2
    assert all(a.xmax < b.xmax for a, b in zip(stored, stored[1:], strict=False))
    assert HourRollup.objects.get(kind=Kind.ALL).count == 14
    assert MinuteRollup.objects.filter(kind=Kind.ALL).count() == 7
    assert rollups.fold() == 0


def test_the_fold_works_through_many_batch_rows(team):
    for i in range(7):
        _stored_by_previous_release(TraceFactory.build_batch(2, team=team, timestamp=WHEN + timedelta(minutes=i)))
    assert rollups.fold(batch=3) == 14  # three transactions of at most 3 batch rows
    assert HourRollup.objects.get(kind=Kind.ALL).count == 14
    assert not PendingBatch.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_traces_of_the_previous_release_count_through_their_batch_only(team):
    """Rolling deploy: a process on the previous release names its traces in a batch row. The
    migration's trigger clears their rollup_xid in that transaction, so they count once, whether
    this release's fold or the previous one (batch rows only) gets to them first."""
    old = _stored_by_previous_release(TraceFactory.build_batch(3, team=team, timestamp=WHEN))
    assert _xids(old) == [None] * 3
    new = _stored(TraceFactory.build_batch(2, team=team, timestamp=WHEN))
    assert None not in _xids(new)
    body = _figures(team)
    assert body["totals"]["count"] == 5
    assert rollups._fold_once(500) == (1, 3)  # the previous release's fold: batch rows only
    assert _figures(team)["totals"]["count"] == 5
    assert rollups.fold() == 2
    assert MinuteRollup.objects.get(kind=Kind.ALL).count == 5
    assert _figures(team) == body
    _stored_by_previous_release(TraceFactory.build_batch(1, team=team, timestamp=WHEN))
    assert rollups.fold() == 1
    assert MinuteRollup.objects.get(kind=Kind.ALL).count == 6


def _figures(team):
    from analytics.selectors import analytics_for_team, parse_query

    now = WHEN + timedelta(hours=1)
    return analytics_for_team(team_id=team.id, query=parse_query({"time_range": "24h"}, now=now, limit=None), now=now)


def test_a_trace_deleted_before_the_fold_is_not_counted(team):
    rows = _stored(TraceFactory.build_batch(3, team=team, timestamp=WHEN))
    rows[0].delete()  # retention, say
    assert rollups.fold() == 2
    assert MinuteRollup.objects.get(kind=Kind.ALL).count == 2


def test_a_batch_whose_traces_are_all_gone_is_dropped(team):
    rows = _stored_by_previous_release(TraceFactory.build_batch(2, team=team, timestamp=WHEN))
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


def test_beat_gets_both_schedules_and_the_fold_task_folds(team, settings):
    settings.TRACERELAY_ANALYTICS_FOLD_INTERVAL_S = 5
    tasks.ensure_schedules()
    tasks.ensure_schedules()  # idempotent
    fold = PeriodicTask.objects.get(name=tasks.FOLD_TASK_NAME)
    assert (fold.task, fold.interval.every, fold.queue) == ("analytics.fold", 5, "ingest")
    assert PeriodicTask.objects.get(name=tasks.RETENTION_TASK_NAME).interval.every == 3600
    _stored(TraceFactory.build_batch(2, team=team, timestamp=WHEN))
    tasks.fold()
    assert MinuteRollup.objects.get(kind=Kind.ALL).count == 2


@pytest.mark.django_db(transaction=True)
def test_after_a_logical_restore_the_fold_refuses_until_the_command_settles_it(team):
    """A dump restored into another cluster: its traces keep the old cluster's transaction ids, far
    above the new cluster's. The fold refuses (new traces would look folded); the command adds the
    traces the dump had pending and marks the restored ones folded; then folding goes on as usual."""
    old = 10**12
    folded = _stored(TraceFactory.build_batch(2, team=team, timestamp=WHEN))
    pending = _stored(TraceFactory.build_batch(3, team=team, timestamp=WHEN))
    MinuteRollup.objects.all().delete()  # (the old cluster's rollups counted the two folded ones)
    rollups.add_deltas(rollups.build_deltas(map(rollups.as_columns, folded)))
    with connection.cursor() as cursor:
        for xid, rows in ((old - 5, folded), (old + 5, pending)):
            ids = [t.id for t in rows]
            cursor.execute("UPDATE traces_trace SET rollup_xid = %s::xid8 WHERE id = ANY(%s)", [str(xid), ids])
    snapshots.store(Snapshot(old, old + 1))
    with pytest.raises(snapshots.IdsWentBack, match="analytics_after_restore"):
        rollups.fold()
    assert _figures(team)["totals"]["count"] == 5  # (the reads were right all along)

    out = io.StringIO()
    call_command("analytics_after_restore", stdout=out)
    assert "folded 3 restored traces that were pending; 5 traces marked folded" in out.getvalue()
    assert _xids([*folded, *pending]) == [None] * 5
    assert MinuteRollup.objects.get(kind=Kind.ALL, bucket=MINUTE).count == 5
    _stored(TraceFactory.build_batch(4, team=team, timestamp=WHEN))
    assert _figures(team)["totals"]["count"] == 9
    assert rollups.fold() == 4
    assert MinuteRollup.objects.get(kind=Kind.ALL, bucket=MINUTE).count == 9
    call_command("analytics_after_restore", stdout=out)
    assert "nothing to do" in out.getvalue()


def test_a_snapshot_cut_below_an_id_sees_what_it_saw_below_it_and_nothing_above():
    now = Snapshot.parse("100:120:103,110,115")
    assert str(now) == "100:120:103,110,115" and Snapshot.parse(str(Snapshot(5, 5))) == Snapshot(5, 5)
    for below in (90, 100, 104, 110, 111, 119, 120, 130):
        cut = now.cut(below)
        for xid in range(80, 140):
            assert cut.visible(xid) == (now.visible(xid) and xid < below), (below, xid)
    assert now.seeing(None) is now and now.seeing(105) is now  # below xmax: visible already
    mine = Snapshot(100, 120, (103,)).seeing(124)  # 120..123 were given out before 124: running
    assert mine == Snapshot(100, 125, (103, 120, 121, 122, 123))
    assert mine.visible(124) and not mine.visible(121) and not mine.visible(125)


def test_the_visibility_rule_is_postgres_own(db):
    snapshot = "100:120:103,110,115"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT x, pg_visible_in_snapshot(x::text::xid8, %s::pg_snapshot) FROM generate_series(90, 130) x",
            [snapshot],
        )
        assert all(Snapshot.parse(snapshot).visible(x) == seen for x, seen in cursor.fetchall())
