"""A run's structural spans (any kind but `llm` and `embedding`, docs/runs.md) are listed in the feed
but are no calls: analytics (rollups, pending and raw reads), alerts and the session/user call counts
leave them out, even when they carry usage (an agent span wrapping its calls) or an error."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from alerts.models import Alert, Metric, WindowType
from alerts.windows import measure
from analytics import rollups
from traces.filters import TraceFilter
from traces.selectors import trace_groups

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/analytics"


@pytest.fixture
def stored(team):
    now = timezone.now()
    rows = [
        TraceFactory(team=team, timestamp=now - timedelta(minutes=4), cost=Decimal("0.5"), session_id="s1"),
        # the agent span around the call, which failed: not a call, not an LLM error; its usage is the
        # call's, reported again (OpenTelemetry's wrapper spans do): never added twice
        TraceFactory(
            team=team,
            timestamp=now - timedelta(minutes=4, seconds=1),
            kind="agent",
            name="checkout",
            model="",
            provider="",
            prompt_tokens=100,
            completion_tokens=20,
            total_tokens=120,
            cost=None,
            unpriced=False,
            latency_ms=900,
            status="error",
            session_id="s1",
            user_id="u1",
        ),
        TraceFactory(
            team=team,
            timestamp=now - timedelta(minutes=3),
            kind="tool",
            name="search",
            model="",
            provider="",
            prompt_tokens=0,
            completion_tokens=0,
            total_tokens=0,
            cost=None,
            session_id="s1",
        ),
    ]
    return rows


@pytest.mark.parametrize("fold", [False, True])
def test_analytics_count_calls_only(api, stored, fold):
    if fold:
        rollups.fold()
    body = api.get(URL, {"time_range": "1h", "group_by": "provider"}).json()
    totals = body["totals"]
    assert (totals["count"], totals["errors"], totals["unpriced"]) == (1, 0, 0)
    assert totals["total_tokens"] == stored[0].total_tokens
    assert [g["key"] for g in body["groups"]] == ["openai"]


def test_raw_reads_leave_spans_out_too(api, stored):
    # a latency filter is not in the rollups: the figures come from the traces themselves
    body = api.get(URL, {"time_range": "1h", "latency_max": "1000"}).json()
    assert body["source"] == "raw"
    assert (body["totals"]["count"], body["totals"]["errors"]) == (1, 0)


def test_a_kind_filter_is_read_raw(api, stored):
    body = api.get(URL, {"time_range": "1h", "kind": "llm"}).json()
    assert body["source"] == "raw" and body["totals"]["count"] == 1
    assert api.get(URL, {"time_range": "1h", "kind": "agent"}).json()["totals"]["count"] == 0


def test_sessions_count_calls_not_spans(team, stored):
    (session,) = trace_groups(team_id=team.pk, field="session_id", trace_filter=TraceFilter(), limit=10)
    assert (session["calls"], session["errors"], session["unpriced"]) == (1, 0, 0)
    (user,) = trace_groups(team_id=team.pk, field="user_id", trace_filter=TraceFilter(), limit=10)
    assert (user["calls"], user["errors"]) == (0, 0)


def test_alerts_measure_calls_only(team, stored):
    now = timezone.now()
    tokens = Alert(team=team, metric=Metric.TOKENS, window_type=WindowType.ROLLING, window_minutes=60, scope={})
    assert measure(tokens, now - timedelta(hours=1), now) == stored[0].total_tokens
    unpriced = Alert(team=team, metric=Metric.UNPRICED, window_type=WindowType.ROLLING, window_minutes=60, scope={})
    assert measure(unpriced, now - timedelta(hours=1), now) == 0


def test_the_feed_still_lists_spans(api, stored):
    data = api.get("/api/v1/traces").json()["data"]
    assert sorted(t["kind"] for t in data) == ["agent", "llm", "tool"]
    assert [t["kind"] for t in api.get("/api/v1/traces", {"kind": "agent,tool"}).json()["data"]] == ["tool", "agent"]
