"""0002 turns the stored JSON histograms into key and count arrays, row by row, and back."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("analytics", "0001_initial")]
AFTER = [("analytics", "0002_histogram_arrays")]


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
def test_leftover_deltas_are_folded_when_their_table_goes(back_to_the_latest):
    """0004: deltas written before the upgrade are added into the rollups, then RollupDelta goes."""
    old = _migrate([("analytics", "0003_rollup_kind_bucket_index")])
    team = old.get_model("accounts", "Team").objects.create(name="Upgraded")
    hour = old.get_model("analytics", "HourRollup").objects.create(
        team_id=team.pk, bucket=7200, kind=1, count=2, latency_keys=[300], latency_counts=[2]
    )
    deltas = old.get_model("analytics", "RollupDelta")
    for minute, model in ((7260, "gpt-4o"), (7320, "gpt-4o"), (7320, "claude")):
        deltas.objects.create(
            team_id=team.pk, bucket=minute, kind=0, model=model, provider="openai", status="success",
            count=1, success=1, cost_e10=5, latency_count=1, latency_sum=410, latency_keys=[304], latency_counts=[1],
        )  # fmt: skip
    deltas.objects.create(team_id=team.pk, bucket=7320, kind=2, key="beta", count=1, success=1)

    new = _migrate([("analytics", "0004_pending_batch")])
    hours = new.get_model("analytics", "HourRollup").objects
    got = hours.get(pk=hour.pk)
    assert (got.count, got.latency_keys, got.latency_counts) == (5, [300, 304], [2, 3])
    assert {r.key: r.count for r in hours.filter(kind=3)} == {"gpt-4o": 2, "claude": 1}
    assert hours.get(kind=2).key == "beta"
    minutes = new.get_model("analytics", "MinuteRollup").objects
    assert {r.bucket: r.count for r in minutes.filter(kind=1)} == {7260: 1, 7320: 2}
    assert new.get_model("analytics", "DayRollup").objects.get(kind=1).cost_e10 == 15
    assert "analytics_rollupdelta" not in connection.introspection.table_names()
