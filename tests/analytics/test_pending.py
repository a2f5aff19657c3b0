"""Traces not folded yet are counted from the traces table (analytics.pending): every figure is
the recount's with all of them pending, the same after the fold, with filters, groups and tags."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import transaction

from analytics import rollups, snapshots
from analytics.selectors import analytics_for_team, analytics_groups, parse_query

from .data import check, make_traces, store

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 20, 15, 17, 23, tzinfo=UTC)
CASES: list[tuple[dict[str, Any], Any, str | None]] = [
    ({"since": "2026-11-18T15:00:00Z"}, lambda t: True, None),
    ({"since": "2026-11-18T15:00:00Z", "group_by": "tag", "limit": 2}, lambda t: True, "tag"),
    ({"since": "2026-11-19T00:00:00Z", "interval": "day", "tz": "Europe/Paris"}, lambda t: True, "model"),
    ({"time_range": "1h", "interval": "minute"}, lambda t: True, "provider"),
    ({"since": "2026-11-18T15:00:00Z", "tag": "beta"}, lambda t: "beta" in t.tags, None),
    ({"since": "2026-11-18T15:00:00Z", "model": "gpt-4*"}, lambda t: t.model.startswith("gpt-4"), "status"),
    (
        {"since": "2026-11-18T15:00:00Z", "status": "error,rate_limited", "provider": "openai"},
        lambda t: t.status in ("error", "rate_limited") and t.provider == "openai",
        "environment",
    ),
    (
        {"since": "2026-11-18T15:00:00Z", "environment": "production"},
        lambda t: t.environment == "production",
        "service",
    ),
]


def _run(team_id: int, params: dict[str, Any], group: str | None) -> dict[str, Any]:
    given = {k: v for k, v in params.items() if k not in ("limit", "group_by")}
    query = parse_query({**given, **({"group_by": group} if group else {})}, now=NOW, limit=params.get("limit"))
    return analytics_for_team(team_id=team_id, query=query, now=NOW)


def _check(body: dict[str, Any], rows: list, keep: Any, group: str | None, limit: int | None) -> None:
    if limit is None:
        check(body, rows, keep, group=group)
        return
    full = {**body, "groups": None}
    check(full, rows, keep)
    assert len(body["groups"]) == limit


def test_pending_traces_are_counted_exactly_and_the_fold_changes_nothing(team, other_team):
    rows = make_traces(team.id, n=900, start=NOW - timedelta(days=2), span=timedelta(days=2) - timedelta(seconds=1))
    store(rows, batch=100)
    store(make_traces(other_team.id, n=90, start=NOW - timedelta(days=1), span=timedelta(days=1), seed=3))
    before = []
    for params, keep, group in CASES:
        body = _run(team.id, params, group)
        _check(body, rows, keep, group, params.get("limit"))
        before.append(body)
    assert rollups.fold() == 990
    assert [_run(team.id, params, group) for params, _keep, group in CASES] == before


@pytest.mark.django_db(transaction=True)
def test_groups_shown_are_the_same_pending_or_folded(team):
    rows = make_traces(team.id, n=400, start=NOW - timedelta(hours=20), span=timedelta(hours=20))
    store(rows[:200])
    rollups.fold()
    store(rows[200:])
    query = parse_query({"since": "2026-11-19T15:00:00Z"}, now=NOW, limit=3)
    pending = analytics_groups(team_id=team.id, query=query, group_by="tag", now=NOW)
    assert len(pending) == 3
    rollups.fold()
    assert analytics_groups(team_id=team.id, query=query, group_by="tag", now=NOW) == pending
    for group in pending:
        assert group["count"] == sum(1 for t in rows if group["key"] in t.tags)


def test_a_pending_trace_deleted_counts_nowhere(team):
    rows = make_traces(team.id, n=120, start=NOW - timedelta(hours=2), span=timedelta(hours=2))
    store(rows)
    gone = rows[::3]
    for t in gone:
        t.delete()
    kept = [t for t in rows if t not in gone]
    body = _run(team.id, {"time_range": "24h"}, "tag")
    check(body, kept, group="tag")
    assert rollups.fold() == len(kept)
    assert _run(team.id, {"time_range": "24h"}, "tag") == body


@pytest.mark.django_db(transaction=True)
def test_a_fold_between_a_readers_statements_counts_nothing_twice(team, monkeypatch):
    """Outside REPEATABLE READ (an alert evaluated in its own transaction) a fold may commit between
    the reader's look at the fold's snapshot and its statement: the statement checks the snapshot it
    sees itself, so the traces the fold added count once."""
    rows = make_traces(team.id, n=60, start=NOW - timedelta(hours=2), span=timedelta(hours=2))
    store(rows)
    assert rollups.fold() == 60
    monkeypatch.setattr(snapshots, "stored", lambda: snapshots.NOTHING_FOLDED)  # (read before the fold)
    with transaction.atomic():  # (not the outermost block: READ COMMITTED)
        body = _run(team.id, {"time_range": "24h"}, None)
    check(body, rows)
