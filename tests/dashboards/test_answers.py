"""A widget's figures are the analytics API's: the same answer `GET /api/v1/analytics` gives for
the widget's question, picked out per chart (a number, a series, groups, a line per group)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test.utils import override_settings
from django.utils import timezone

from dashboards.answers import widget_answer
from dashboards.definition import check_widget

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def calls(team, other_team):
    base = timezone.now().replace(minute=0, second=30, microsecond=0) - timedelta(hours=3)
    rows = [
        TraceFactory(team=team, timestamp=base, model="gpt-4o", provider="openai", cost=Decimal("0.5"),
                     latency_ms=400, environment="production"),
        TraceFactory(team=team, timestamp=base + timedelta(minutes=1), model="gpt-4o", provider="openai",
                     status="error", cost=Decimal("0.25"), latency_ms=900, environment="production"),
        TraceFactory(team=team, timestamp=base + timedelta(hours=1), model="claude-3-5-haiku",
                     provider="anthropic", cost=Decimal("1.5"), latency_ms=1200, tags=["beta"]),
        TraceFactory(team=other_team, timestamp=base, model="gpt-4o", cost=Decimal("9")),
    ]  # fmt: skip
    return rows


def analytics(api, **params: Any) -> dict[str, Any]:
    r = api.get("/api/v1/analytics", params)
    assert r.status_code == 200, r.content
    return r.json()


def answer(team, **fields: Any):
    widget = check_widget({"title": "w", **fields})
    return widget_answer(team_id=team.pk, widget=widget)


def test_a_number_is_the_answers_total(api, team, calls):
    a = answer(team, metric="cost", chart="number")
    assert not a.error
    assert a.value == analytics(api, time_range="24h")["totals"]["cost"] == pytest.approx(2.25)
    assert a.count == 3  # the other team's call is not counted
    p95 = answer(team, metric="latency_p95", chart="number", filters={"provider": "openai"})
    assert p95.value == analytics(api, time_range="24h", provider="openai")["latency_ms"]["p95"]
    ttft = answer(team, metric="ttft_mean", chart="number")
    assert ttft.value is None  # no streamed call: no figure, never 0


def test_a_line_is_the_answers_series(api, team, calls):
    a = answer(team, metric="count", chart="line", interval="hour", time_range="24h")
    body = analytics(api, time_range="24h", interval="hour")
    assert a.points == [(p["t"], p["count"]) for p in body["series"]]
    assert sum(v or 0 for _t, v in a.points) == 3
    errors = answer(team, metric="error_rate", chart="bar", interval="hour", filters={"environment": "production"})
    body = analytics(api, time_range="24h", interval="hour", environment="production")
    assert errors.points == [(p["t"], p["error_rate"]) for p in body["series"]]
    p50 = answer(team, metric="latency_p50", chart="table", interval="hour")
    assert p50.points == [(p["t"], p["p50"]) for p in analytics(api, time_range="24h", interval="hour")["series"]]


def test_bars_per_group_are_the_answers_groups(api, team, calls):
    a = answer(team, metric="cost", chart="bar", group_by="model", time_range="7d")
    body = analytics(api, time_range="7d", group_by="model")
    assert a.groups == [(g["key"], g["cost"]) for g in body["groups"]]
    assert [key for key, _v in a.groups] == ["claude-3-5-haiku", "gpt-4o"]  # largest cost first
    tags = answer(team, metric="count", chart="table", group_by="tag")
    assert tags.groups == [("beta", 1)]


def test_a_line_per_group_adds_up_to_each_groups_total(api, team, calls):
    a = answer(team, metric="cost", chart="line", group_by="provider", interval="hour")
    body = analytics(api, time_range="24h", interval="hour", group_by="provider")
    assert [key for key, _values in a.lines] == [g["key"] for g in body["groups"]]
    for key, values in a.lines:
        group = next(g for g in body["groups"] if g["key"] == key)
        assert sum(v or 0 for v in values) == pytest.approx(group["cost"])
        assert len(values) == len(body["series"])


@override_settings(TRACERELAY_ANALYTICS_RAW_SCAN_MAX=1)
def test_a_question_the_analytics_cannot_answer_is_the_widgets_error(team, calls):
    a = answer(team, metric="count", chart="number", filters={"cost_min": 0.1})
    assert "raw-scan limit" in a.error
    assert a.value is None


def test_the_token_parts_are_widget_figures(api, team):
    base = timezone.now().replace(minute=0, second=30, microsecond=0) - timedelta(hours=2)
    TraceFactory(
        team=team,
        timestamp=base,
        model="gpt-4o",
        prompt_tokens=1000,
        cached_tokens=800,
        input_image_tokens=100,
        completion_tokens=300,
        reasoning_tokens=200,
        output_audio_tokens=50,
    )
    TraceFactory(team=team, timestamp=base + timedelta(hours=1), model="gpt-4o", prompt_tokens=10,
                 input_audio_tokens=4, completion_tokens=5)  # fmt: skip
    want = {"cached_tokens": 800, "input_image_tokens": 100, "input_audio_tokens": 4, "reasoning_tokens": 200,
            "output_audio_tokens": 50, "output_image_tokens": 0, "cache_write_tokens": 0}  # fmt: skip
    totals = analytics(api, time_range="24h")["totals"]
    for metric, value in want.items():
        a = answer(team, metric=metric, chart="number")
        assert not a.error and a.value == totals[metric] == value, metric
    line = answer(team, metric="input_audio_tokens", chart="line", interval="hour", time_range="24h")
    assert sum(v or 0 for _t, v in line.points) == 4
