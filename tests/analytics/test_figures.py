"""Every figure of GET /api/v1/analytics against a brute-force recount of generated traces:
counts and sums exact, percentiles within 1%, with filters and group-bys, across interval
boundaries and time zones, with some traces folded and some pending (and late traces)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from analytics import rollups
from analytics.selectors import analytics_for_team, analytics_groups, parse_query

from ..factories import TeamFactory
from .data import check, day_starts, make_traces, store

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 15, 17, 23, 500000, tzinfo=UTC)


def _build(name: str, n: int) -> tuple[Any, list, Any]:
    team = TeamFactory(name=name)
    rows = make_traces(team.id, n=n, start=NOW - timedelta(days=3), span=timedelta(days=3) - timedelta(seconds=1))
    store(rows[: n * 2 // 3])
    rollups.fold()
    store(rows[n * 2 // 3 :])  # not folded yet; timestamps all over the range, so many land in folded buckets (late)
    # Another team's traces must never show.
    other = TeamFactory(name=f"{name}-others")
    store(make_traces(other.id, n=n // 10, start=NOW - timedelta(days=2), span=timedelta(days=2), seed=9))
    return team, rows, other


@pytest.fixture(scope="module")
def dataset(django_db_setup, django_db_blocker):
    """Built once for the module (committed), removed after it: the tests only read it."""
    with django_db_blocker.unblock():
        team, rows, other = _build("figures", 3000)
    yield team, rows
    with django_db_blocker.unblock():
        team.delete()
        other.delete()


def run(team, **params: Any) -> dict[str, Any]:
    query = parse_query({k: v for k, v in params.items() if k != "limit"}, now=NOW, limit=params.get("limit"))
    return analytics_for_team(team_id=team.id, query=query, now=NOW)


def test_it_counts_everything_by_hour(dataset):
    team, rows = dataset
    body = run(team, since="2026-11-17T15:40:00Z", interval="hour")
    assert body["source"] == "rollups"
    assert body["range"]["since"] == "2026-11-17T15:00:00Z"  # widened to the interval
    assert body["range"]["until"] == "2026-11-20T16:00:00Z"
    assert len(body["series"]) == 73
    check(body, rows)


def test_the_default_range_is_the_last_day_by_hour(dataset):
    team, rows = dataset
    body = run(team)
    assert body["range"]["interval"] == "hour"
    assert len(body["series"]) == 25  # 24 hours, widened to whole hours at both ends
    check(body, rows)


def test_minutes_over_a_short_range(dataset):
    team, rows = dataset
    body = run(team, time_range="1h")
    assert body["range"]["interval"] == "minute"
    assert len(body["series"]) == 61
    check(body, rows)


@pytest.mark.parametrize("tz", ["UTC", "America/New_York", "Asia/Kolkata", "Australia/Eucla"])
def test_days_start_at_midnight_in_the_time_zone(dataset, tz):
    team, rows = dataset
    body = run(team, since="2026-11-17T00:00:00Z", interval="day", tz=tz)
    zone = ZoneInfo(tz)
    starts = day_starts(datetime(2026, 11, 17, tzinfo=UTC), NOW, zone)
    check(body, rows, starts=starts)
    assert body["range"]["tz"] == tz


@pytest.mark.parametrize(
    ("params", "keep"),
    [
        ({"model": "gpt-4o"}, lambda t: t.model == "gpt-4o"),
        ({"model": "gpt-4*"}, lambda t: t.model.startswith("gpt-4")),
        ({"provider": "anthropic"}, lambda t: t.provider == "anthropic"),
        ({"status": "error,rate_limited"}, lambda t: t.status in ("error", "rate_limited")),
        ({"environment": "development"}, lambda t: t.environment == "development"),
        ({"model": "gpt-4o", "status": "success"}, lambda t: t.model == "gpt-4o" and t.status == "success"),
        ({"tag": "beta"}, lambda t: "beta" in t.tags),
    ],
)
def test_filters_the_rollups_answer(dataset, params, keep):
    team, rows = dataset
    body = run(team, since="2026-11-18T06:00:00Z", **params)
    assert body["source"] == "rollups"
    check(body, rows, keep)


@pytest.mark.parametrize(
    ("params", "keep"),
    [
        ({"cost_min": "0.005"}, lambda t: t.cost is not None and t.cost >= 0.005),
        ({"latency_max": "500"}, lambda t: t.latency_ms is not None and t.latency_ms <= 500),
        ({"metadata.customer": "acme"}, lambda t: t.metadata.get("customer") == "acme"),
        ({"destination": "datadog"}, lambda t: "datadog" in t.destinations),
        ({"tag": "beta,search"}, lambda t: {"beta", "search"} <= set(t.tags)),
        ({"tag": "beta", "model": "gpt-4o"}, lambda t: "beta" in t.tags and t.model == "gpt-4o"),
        ({"user_id": "u2"}, lambda t: t.user_id == "u2"),  # the rollups hold no user: once ignored
    ],
)
def test_filters_counted_from_raw_traces(dataset, params, keep):
    team, rows = dataset
    body = run(team, since="2026-11-18T06:00:00Z", **params)
    assert body["source"] == "raw"
    check(body, rows, keep)


@pytest.mark.parametrize(
    "group", ["model", "provider", "status", "environment", "service", "user", "tag", "destination"]
)
def test_groups(dataset, group):
    team, rows = dataset
    body = run(team, since="2026-11-17T15:40:00Z", group_by=group)
    check(body, rows, group=group)


@pytest.mark.parametrize(
    ("params", "keep", "group"),
    [
        ({"provider": "openai"}, lambda t: t.provider == "openai", "model"),
        ({"status": "success"}, lambda t: t.status == "success", "environment"),
        ({"model": "gpt-4*"}, lambda t: t.model.startswith("gpt-4"), "model"),
        ({"environment": "production"}, lambda t: t.environment == "production", "tag"),
        ({"cost_min": "0.001"}, lambda t: t.cost is not None and t.cost >= 0.001, "model"),
    ],
)
def test_groups_with_filters(dataset, params, keep, group):
    team, rows = dataset
    body = run(team, since="2026-11-17T20:00:00Z", interval="day", tz="Europe/Paris", group_by=group, **params)
    check(body, rows, keep, group=group)


def test_group_limit(dataset):
    team, rows = dataset
    body = run(team, since="2026-11-18T00:00:00Z", group_by="model", limit=2)
    assert len(body["groups"]) == 2
    full = run(team, since="2026-11-18T00:00:00Z", group_by="model")
    assert body["groups"] == full["groups"][:2]


@pytest.mark.parametrize("group", ["model", "tag", "user"])  # (user: from raw traces)
def test_groups_alone_and_without_ttft(dataset, group):
    """`analytics_groups` (the dashboard's breakdowns) gives the answer's groups; with
    ``ttft=False`` the same but null TTFT percentiles."""
    team, _rows = dataset
    params = {"since": "2026-11-18T00:00:00Z", "group_by": group}
    body = run(team, **params)
    query = parse_query(params, now=NOW, limit=None)
    assert analytics_groups(team_id=team.id, query=query, group_by=group, now=NOW) == body["groups"]
    lean = analytics_groups(team_id=team.id, query=query, group_by=group, now=NOW, ttft=False)
    no_ttft = {"p50": None, "p90": None, "p95": None, "p99": None}
    assert lean == [{**g, "ttft_ms": {**no_ttft, "mean": g["ttft_ms"]["mean"]}} for g in body["groups"]]
    assert any(g["ttft_ms"]["p50"] is not None for g in body["groups"])


def test_folding_changes_no_figure(transactional_db):
    team, _rows, _other = _build("folding", 900)
    params = [
        {"since": "2026-11-17T15:40:00Z", "group_by": "model"},
        {"since": "2026-11-17T00:00:00Z", "interval": "day", "tz": "Asia/Kolkata", "group_by": "tag"},
        {"time_range": "1h", "status": "error"},
        {"since": "2026-11-18T00:00:00Z", "provider": "openai", "group_by": "environment"},
    ]
    before = [run(team, **p) for p in params]
    assert rollups.fold() > 0
    assert rollups.fold() == 0
    after = [run(team, **p) for p in params]
    assert after == before
