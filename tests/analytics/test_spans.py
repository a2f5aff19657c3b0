"""The SDK's manual blocks (`tracerelay.trace()`: provider "span") are listed in the feed but are no
LLM calls: analytics (rollups and raw reads) and the session/user call counts leave them out."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from analytics import rollups
from traces.filters import TraceFilter
from traces.models import SPAN_PROVIDER
from traces.selectors import trace_groups

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/analytics"


@pytest.fixture
def stored(team):
    now = timezone.now()
    rows = [
        TraceFactory(team=team, timestamp=now - timedelta(minutes=4), cost=Decimal("0.5"), session_id="s1"),
        # a block that raised, around the call: not a call, not an LLM error
        TraceFactory(
            team=team,
            timestamp=now - timedelta(minutes=4, seconds=1),
            provider=SPAN_PROVIDER,
            model="span:checkout",
            prompt_tokens=0,
            completion_tokens=0,
            total_tokens=0,
            latency_ms=900,
            status="error",
            unpriced=True,
            session_id="s1",
        ),
    ]
    return rows


@pytest.mark.parametrize("fold", [False, True])
def test_analytics_count_llm_calls_only(api, stored, fold):
    if fold:
        rollups.fold()
    body = api.get(URL, {"time_range": "1h", "group_by": "provider"}).json()
    assert (body["totals"]["count"], body["totals"]["errors"]) == (1, 0)
    assert [g["key"] for g in body["groups"]] == ["openai"]


def test_raw_reads_leave_spans_out_too(api, stored):
    # a latency filter is not in the rollups: the figures come from the traces themselves
    body = api.get(URL, {"time_range": "1h", "latency_max": "1000"}).json()
    assert body["source"] == "raw"
    assert (body["totals"]["count"], body["totals"]["errors"]) == (1, 0)


def test_sessions_count_calls_not_blocks(team, stored):
    (session,) = trace_groups(team_id=team.pk, field="session_id", trace_filter=TraceFilter(), limit=10)
    assert (session["calls"], session["errors"], session["unpriced"]) == (1, 0, 0)


def test_the_feed_still_lists_blocks(api, stored):
    assert {t["provider"] for t in api.get("/api/v1/traces").json()["data"]} == {"openai", SPAN_PROVIDER}
