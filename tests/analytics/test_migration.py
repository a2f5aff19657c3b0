"""0002 turns the stored JSON histograms into key and count arrays, row by row, and back; 0005
names each trace's transaction instead of batch rows, and back."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("analytics", "0001_initial")]
AFTER = [("analytics", "0002_histogram_arrays")]
LATEST = "0007_rollup_media_tokens"


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def back_to_the_latest():
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_existing_rows_keep_their_histograms(back_to_the_latest):
    old = _migrate(BEFORE)
    team = old.get_model("accounts", "Team").objects.create(name="Migrated")
    hour = old.get_model("analytics", "HourRollup").objects.create(
        team_id=team.pk, bucket=3600, kind=1, count=5, latency_hist="[-1,1,310,3,345,1]", ttft_hist="[]"
    )
    delta = old.get_model("analytics", "RollupDelta").objects.create(
        team_id=team.pk, bucket=60, kind=0, count=1, latency_hist="[200,1]", ttft_hist="[150,1]"
    )
    old.get_model("analytics", "DayRollup").objects.create(team_id=team.pk, bucket=0, kind=1, count=0)

    new = _migrate(AFTER)
    got = new.get_model("analytics", "HourRollup").objects.get(pk=hour.pk)
    assert (got.count, got.latency_keys, got.latency_counts) == (5, [-1, 310, 345], [1, 3, 1])
    assert (got.ttft_keys, got.ttft_counts) == ([], [])
    got = new.get_model("analytics", "RollupDelta").objects.get(pk=delta.pk)
    assert (got.latency_keys, got.latency_counts, got.ttft_keys, got.ttft_counts) == ([200], [1], [150], [1])
    day = new.get_model("analytics", "DayRollup").objects.get()
    assert (day.latency_keys, day.ttft_keys) == ([], [])  # the old default "[]"

    back = _migrate(BEFORE)
    assert back.get_model("analytics", "HourRollup").objects.get(pk=hour.pk).latency_hist == "[-1,1,310,3,345,1]"
    assert back.get_model("analytics", "RollupDelta").objects.get(pk=delta.pk).ttft_hist == "[150,1]"


@pytest.mark.django_db(transaction=True)
def test_back_from_0005_pending_traces_become_batch_rows_and_forward_again_count_once(back_to_the_latest):
    """Back: the traces the fold's snapshot does not see become the previous release's batch rows
    and the column goes; forward again: those rows are folded, once."""
    from analytics import rollups
    from analytics.selectors import analytics_for_team, parse_query
    from config.bulk import insert_rows

    from ..factories import TeamFactory, TraceFactory

    team = TeamFactory()
    folded = TraceFactory.build_batch(2, team=team)
    insert_rows(folded)
    assert rollups.fold() == 2
    pending = TraceFactory.build_batch(3, team=team)
    insert_rows(pending)

    old = _migrate([("analytics", "0004_pending_batch")])
    batch = old.get_model("analytics", "PendingBatch").objects.get(team_id=team.pk)
    assert sorted(batch.trace_ids) == sorted(t.id for t in pending)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM information_schema.columns WHERE column_name = 'rollup_xid'")
        assert cursor.fetchone()[0] == 0

    # Forward again, through 0005 to the latest (the code below reads the latest rollup columns).
    _migrate([("analytics", "0005_fold_by_xid")])
    _migrate([("analytics", LATEST)])
    now = max(t.timestamp for t in [*folded, *pending])
    query = parse_query({"time_range": "24h"}, now=now, limit=None)
    assert analytics_for_team(team_id=team.pk, query=query, now=now)["totals"]["count"] == 5
    assert rollups.fold() == 3
    assert analytics_for_team(team_id=team.pk, query=query, now=now)["totals"]["count"] == 5
