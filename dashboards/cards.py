"""What a widget's card shows, made from its `Answer`: a number, an SVG line or bar chart (the
analytics page's `analytics.charts`, each column or bar a link to the traces behind it) or a table.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from analytics import charts
from analytics.page import Links, compact, duration, money_tick, percent, score_text
from config.money import usd

from .answers import Answer
from .definition import METRIC_LABELS, filter_params

PALETTE = 6


def formatter(metric: str, *, axis: bool = False) -> Callable[[float], str]:
    if metric == "cost":
        return money_tick if axis else usd
    if metric == "error_rate":
        return percent
    if metric.startswith(("latency_", "ttft_")):
        return duration
    if metric == "score_avg":
        return score_text
    return compact if axis else (lambda v: f"{v:,.0f}")


def shown(value: float | None, metric: str) -> str:
    return "–" if value is None else formatter(metric)(value)


def card(answer: Answer) -> dict[str, Any]:
    w = answer.widget
    metric, chart = w["metric"], w["chart"]
    out: dict[str, Any] = {
        "widget": w,
        "metric_label": metric_label(w),
        "error": answer.error,
        "kind": chart,
        "sub": _sub(w),
    }
    if answer.error:
        return out
    links = Links({k: [v] for k, v in filter_params(w.get("filters") or {}).items()})
    since, until = answer.range.get("since", ""), answer.range.get("until", "")
    fmt = formatter(metric)
    if chart == "number":
        out["value"] = shown(answer.value, metric)
        out["href"] = links.to(since, until)
        out["count"] = answer.count
        return out
    if w.get("group_by") and chart in ("bar", "table"):
        group_by = w["group_by"]
        rows: list[dict[str, Any]] = [
            {
                "key": "" if key in ("", None) else str(key),
                "value": shown(value, metric),
                "raw": value or 0,
                "href": links.to(since, until, **{group_by: str(key)}) if key not in ("", None) else "",
            }
            for key, value in answer.groups
        ]
        most = max((r["raw"] for r in rows), default=0) or 1
        for r in rows:
            r["width"] = round(r["raw"] / most * 100, 1)
        out["kind"] = "groups-bar" if chart == "bar" else "groups-table"
        out["rows"] = rows
        out["group_by"] = group_by
        return out
    starts = [t for t, _ in answer.points]
    bounds = [*starts, until]
    interval = answer.range.get("interval", "")
    labels = [_label(bounds[i], interval) for i in range(len(starts))]
    hrefs = [links.to(bounds[i], bounds[i + 1]) for i in range(len(starts))]
    x_labels = [(i, _tick(bounds[i], interval, since, until)) for i in charts.x_label_positions(len(starts))]
    axis_fmt = formatter(metric, axis=True)
    whole = metric not in ("cost", "error_rate", "score_avg") and not metric.startswith(("latency_", "ttft_"))
    if chart == "table":
        out["rows"] = [
            {"label": labels[i], "value": shown(v, metric), "href": hrefs[i]} for i, (_t, v) in enumerate(answer.points)
        ]
        out["kind"] = "series-table"
        return out
    if chart == "bar":
        columns = [
            charts.Column(labels[i], hrefs[i], [charts.Segment(v or 0, "series-c0", hrefs[i], fmt(v or 0))])
            for i, (_t, v) in enumerate(answer.points)
        ]
        out["svg"] = charts.stacked_bars(columns, label=w["title"], fmt=axis_fmt, x_labels=x_labels, whole=whole)
        return out
    if answer.lines:  # a line per group
        group_by = w["group_by"]
        series = [
            charts.Line(str(key) if key not in ("", None) else "none", f"series-c{n % PALETTE}")
            for n, (key, _v) in enumerate(answer.lines)
        ]
        columns = [
            charts.Column(labels[i], hrefs[i], points=[values[i] for _key, values in answer.lines])
            for i in range(len(starts))
        ]
        out["legend"] = [(line.css, line.name) for line in series]
        out["group_by"] = group_by
    else:
        series = [charts.Line(metric_label(w), "series-c0")]
        columns = [charts.Column(labels[i], hrefs[i], points=[v]) for i, (_t, v) in enumerate(answer.points)]
    out["svg"] = charts.lines(columns, series, label=w["title"], fmt=axis_fmt, x_labels=x_labels)
    return out


def metric_label(w: dict[str, Any]) -> str:
    """ "Cost (USD)"; for a score's figure, with the score's name ("Score average: helpful")."""
    label = METRIC_LABELS[w["metric"]]
    return f"{label}: {w['score']}" if w.get("score") else label


def _sub(w: dict[str, Any]) -> str:
    parts = [metric_label(w)]
    if w.get("group_by"):
        parts.append(f"by {w['group_by']}")
    parts.append(
        {"1h": "last hour", "24h": "last 24 hours", "7d": "last 7 days", "30d": "last 30 days"}[w["time_range"]]
    )
    if w.get("interval"):
        parts.append(f"per {w['interval']}")
    filters = filter_params(w.get("filters") or {})
    if filters:
        parts.append(" ".join(f"{k}={v}" for k, v in filters.items()))
    return " · ".join(parts)


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def _label(a: str, interval: str) -> str:
    start = _parse(a)
    if interval == "day":
        return start.strftime("%a %b %-d")
    return start.strftime("%b %-d, %H:%M UTC")


def _tick(a: str, interval: str, since: str, until: str) -> str:
    start = _parse(a)
    span = _parse(until) - _parse(since)
    if interval == "day" or (interval == "hour" and span.days >= 2):
        return start.strftime("%b %-d")
    return start.strftime("%H:%M")
