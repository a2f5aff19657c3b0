"""A widget's answer: its question put to the analytics selectors (the ones `GET /api/v1/analytics`
and `/analytics` use; no other query path), and the one figure it shows picked out of the answer.

- ``number``: the figure over the whole range (`analytics_for_team`'s totals or percentiles);
- ``line``, and ``bar``/``table`` without group_by: the figure per interval (the answer's series);
- ``line`` with group_by: one line per group, the figure per interval (`breakdown.table_for_team`,
  what reports read), the `LINE_GROUPS` largest groups by cost;
- ``bar``/``table`` with group_by: the figure per group over the range (`analytics_groups`), the
  `GROUP_LIMIT` largest groups by cost.
A question the analytics cannot answer (a raw scan over its limit) is the answer's ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from analytics.breakdown import table_for_team
from analytics.plan import iso
from analytics.selectors import AnalyticsError, analytics_for_team, analytics_groups, plan_for
from analytics.stats import Stats
from traces.filters import FilterError

from .definition import SCORE_METRICS, TOTALS, widget_query

GROUP_LIMIT = 10
LINE_GROUPS = 6  # one colour each (series-c0 … c5)


@dataclass
class Answer:
    widget: dict[str, Any]
    error: str = ""
    range: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    value: float | None = None  # number
    count: int = 0  # traces in the range (a number's context)
    points: list[tuple[str, float | None]] = field(default_factory=list)  # over time: (interval start, value)
    groups: list[tuple[Any, float | None]] = field(default_factory=list)  # per group over the range
    lines: list[tuple[Any, list[float | None]]] = field(default_factory=list)  # per group, one value per interval


def widget_answer(*, team_id: int, widget: Mapping[str, Any], now: datetime | None = None) -> Answer:
    now = now or timezone.now()
    answer = Answer(dict(widget))
    chart, metric, group_by = widget["chart"], widget["metric"], widget.get("group_by")
    try:
        if group_by and chart in ("bar", "table"):
            query = widget_query(widget, now=now, limit=GROUP_LIMIT)
            groups = analytics_groups(
                team_id=team_id, query=query, group_by=group_by, now=now, ttft=metric.startswith("ttft_")
            )
            answer.groups = [(g["key"], figure(g, metric)) for g in groups]
            body = None
        elif group_by and chart == "line":
            query = widget_query(widget, now=now, limit=LINE_GROUPS)
            body, rows = table_for_team(team_id=team_id, query=query, now=now, live=False)
            keys = [g["key"] for g in body["groups"] or []]
            starts = [p["t"] for p in body["series"]]
            cells = {(row.period_start, row.group): row.stats for row in rows}
            answer.lines = [(key, [stats_figure(cells.get((t, key)), metric) for t in starts]) for key in keys]
            answer.points = [(t, None) for t in starts]
        else:
            query = widget_query(widget, now=now)
            body = analytics_for_team(team_id=team_id, query=query, now=now, live=False)
            if metric in SCORE_METRICS:  # the answer's `score`: its figure over the range, or per interval
                stat = metric.removeprefix("score_")
                score = body["score"]
                if chart == "number":
                    answer.value, answer.count = score[stat], score["count"]
                else:
                    answer.points = [(p["t"], p[stat]) for p in score["series"]]
            elif chart == "number":
                answer.value = figure(body, metric)
                answer.count = body["totals"]["count"]
            else:
                answer.points = [(p["t"], point_figure(p, metric)) for p in body["series"]]
    except (FilterError, AnalyticsError) as exc:
        answer.error = exc.message
        return answer
    if body is not None:
        answer.range, answer.source = body["range"], body["source"]
    else:  # (the groups' reads planned the same range)
        plan = plan_for(query, now)
        answer.range = {"since": iso(plan.since), "until": iso(plan.until), "interval": plan.interval}
    return answer


def figure(body: Mapping[str, Any], metric: str) -> float | None:
    """The metric in an answer (or one of its groups): a totals field, or a percentile."""
    if metric in TOTALS:
        totals = body.get("totals", body)
        return totals[metric]
    histogram, stat = metric.rsplit("_", 1)
    return body[f"{histogram}_ms"][stat]


def point_figure(point: Mapping[str, Any], metric: str) -> float | None:
    """The metric in a series point (totals, and latency p50/p95)."""
    if metric in TOTALS:
        return point[metric]
    return point[metric.removeprefix("latency_")]


def stats_figure(stats: Stats | None, metric: str) -> float | None:
    stats = stats or Stats()
    if metric in TOTALS:
        return stats.totals()[metric]
    return stats.percentiles("latency")[metric.removeprefix("latency_")]
