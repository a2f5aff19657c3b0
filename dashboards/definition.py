"""What a board holds, checked once for the API and the pages: `parse_board` returns a `Board` or
raises `BoardError` with errors per field, a widget's named by its index (``widgets[2].metric``,
``widgets[0].filters.model``), the shape the API's problem+json and the forms both show.

A widget is one question to the analytics API (`metric`, `filters`, `group_by`, `interval`,
`time_range`) and how its answer is drawn (`chart`). Its filters, group-by, interval and range are
checked by the analytics API's own parser and planner (`analytics.selectors.parse_query`,
`plan_for`), so a board accepts exactly what `GET /api/v1/analytics` accepts. What cannot be known
when the board is saved (a filter the rollups cannot answer over more traces than a raw scan may
count) is said in the widget's card when it is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from analytics.plan import INTERVALS
from analytics.scores import ScoreNameError, check_score_name
from analytics.selectors import AnalyticsError, AnalyticsQuery, parse_query, plan_for
from analytics.slices import GROUP_BY
from config.fields import has_control_characters
from traces.filters import FILTER_PARAMS, FilterError

MAX_NAME = 200
MAX_TITLE = 200
MAX_WIDGETS = 24
WIDGET_FIELDS = ("title", "metric", "filters", "group_by", "interval", "time_range", "chart")
# `score`: only with a score metric (the analytics API's `score=<name>`); in a widget's JSON only then.
OPTIONAL_FIELDS = ("score",)
BOARD_FIELDS = ("name", "widgets")
PERIOD_PARAMS = ("since", "until", "time_range")
FILTER_KEYS = tuple(p for p in FILTER_PARAMS if p not in PERIOD_PARAMS)
TIME_RANGES = ("1h", "24h", "7d", "30d")  # the analytics API's (and page's) ranges
DEFAULT_TIME_RANGE = "24h"
CHARTS = ("number", "line", "bar", "table")

# Metric → (label, where it is in an answer: a totals field, or (histogram, statistic)).
TOTALS = (
    "count",
    "success",
    "errors",
    "rate_limited",
    "error_rate",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    # The token parts (traces.usage.DETAIL_FIELDS): sums like the tokens.
    "cached_tokens",
    "cache_write_tokens",
    "input_audio_tokens",
    "input_image_tokens",
    "reasoning_tokens",
    "output_audio_tokens",
    "output_image_tokens",
    "cost",
    "unpriced",
    "estimated_usage",
)
PERCENTILES = tuple(f"{h}_{s}" for h in ("latency", "ttft") for s in ("p50", "p90", "p95", "p99", "mean"))
# A score's average (a boolean counts 1/0) and count, with the widget's `score` naming it: read from
# the analytics answer's `score` (docs/analytics.md#scores), over the range or per interval; no groups.
SCORE_METRICS = ("score_avg", "score_count")
METRICS = (*TOTALS, *PERCENTILES, *SCORE_METRICS)
# What a series point (and a group's point per interval) carries: the totals and latency p50/p95.
PER_INTERVAL = (*TOTALS, "latency_p50", "latency_p95", *SCORE_METRICS)
METRIC_LABELS = {
    "count": "Calls",
    "success": "Successful calls",
    "errors": "Failed calls",
    "rate_limited": "Rate-limited calls",
    "error_rate": "Error rate",
    "prompt_tokens": "Prompt tokens",
    "completion_tokens": "Completion tokens",
    "total_tokens": "Tokens",
    "cached_tokens": "Cached prompt tokens",
    "cache_write_tokens": "Cache-write tokens",
    "input_audio_tokens": "Audio prompt tokens",
    "input_image_tokens": "Image prompt tokens",
    "reasoning_tokens": "Reasoning tokens",
    "output_audio_tokens": "Audio completion tokens",
    "output_image_tokens": "Image completion tokens",
    "cost": "Cost (USD)",
    "unpriced": "Unpriced calls",
    "estimated_usage": "Calls with estimated tokens",
    **{
        f"{h}_{s}": f"{'Latency' if h == 'latency' else 'Time to first token'} {s if s != 'mean' else 'mean'}"
        for h in ("latency", "ttft")
        for s in ("p50", "p90", "p95", "p99", "mean")
    },
    "score_avg": "Score average",
    "score_count": "Scores",
}
CHART_LABELS = {
    "number": "Number",
    "line": "Line over time",
    "bar": "Bars (over time, or per group with group_by)",
    "table": "Table",
}


class BoardError(ValueError):
    """``errors``: field → messages (``name``, ``widgets``, ``widgets[i].<field>``)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__(errors)


@dataclass(frozen=True)
class Board:
    name: str
    widgets: list[dict[str, Any]] = field(default_factory=list)


def widget_query(widget: Mapping[str, Any], *, now: datetime | None = None, limit: int | None = None) -> AnalyticsQuery:
    """The analytics question a (checked) widget asks; raises FilterError or AnalyticsError."""
    params = {
        **filter_params(widget.get("filters") or {}),
        "time_range": widget.get("time_range") or DEFAULT_TIME_RANGE,
    }
    for name in ("interval", "group_by", "score"):
        if widget.get(name):
            params[name] = widget[name]
    return parse_query(params, now=now, limit=limit)


def filter_params(filters: Mapping[str, Any]) -> dict[str, str]:
    """A widget's filters as the analytics API's query parameters (numbers and booleans as text,
    lists joined with commas)."""
    out: dict[str, str] = {}
    for key, raw in filters.items():
        if isinstance(raw, bool):
            out[key] = "true" if raw else "false"
        elif isinstance(raw, list):
            out[key] = ",".join(raw)
        else:
            out[key] = str(raw)
    return out


def parse_board(data: Mapping[str, Any], *, base: Board | None = None) -> Board:
    """Check a board: all of it (``base`` None) or the fields ``data`` holds over ``base`` (a PATCH:
    ``widgets`` given replaces the whole list, in its order)."""
    errors: dict[str, list[str]] = {}
    for key in sorted(set(data) - set(BOARD_FIELDS), key=str):
        errors[str(key)] = ["Unknown field: a board has name and widgets."]
    name = base.name if base is not None else ""
    widgets = list(base.widgets) if base is not None else []
    if "name" in data:
        value = data["name"]
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME or has_control_characters(value):
            errors["name"] = [f"A name, 1-{MAX_NAME} characters, on one line (no control characters)."]
        else:
            name = value.strip()
    elif base is None:
        errors["name"] = ["This field is required."]
    if "widgets" in data:
        raw = data["widgets"]
        if not isinstance(raw, list):  # null too: an empty board is []
            errors["widgets"] = ["A list of widgets (objects), in the order shown."]
        elif len(raw) > MAX_WIDGETS:
            errors["widgets"] = [f"At most {MAX_WIDGETS} widgets on a board."]
        else:
            now = timezone.now()
            widgets = []
            for i, item in enumerate(raw):
                widget = _widget(item, f"widgets[{i}]", errors, now)
                if widget is not None:
                    widgets.append(widget)
    if errors:
        raise BoardError(errors)
    return Board(name=name, widgets=widgets)


def check_widget(data: Mapping[str, Any], *, prefix: str = "") -> dict[str, Any]:
    """One widget alone (the dashboard's widget form); errors keyed by field, after ``prefix``."""
    errors: dict[str, list[str]] = {}
    widget = _widget(data, prefix, errors, timezone.now())
    if widget is None:
        raise BoardError(errors)
    return widget


def _widget(item: Any, at: str, errors: dict[str, list[str]], now: datetime) -> dict[str, Any] | None:
    def where(name: str) -> str:
        return f"{at}.{name}" if at else name

    mine: dict[str, list[str]] = {}
    if not isinstance(item, Mapping):
        errors[at or "widget"] = [f"A widget is an object with {', '.join(WIDGET_FIELDS)}."]
        return None
    for key in sorted(set(item) - set(WIDGET_FIELDS) - set(OPTIONAL_FIELDS), key=str):
        mine[where(str(key))] = [f"Unknown field: a widget has {', '.join(WIDGET_FIELDS)}."]
    out: dict[str, Any] = {}

    title = item.get("title")
    if "title" not in item:
        mine[where("title")] = ["This field is required."]
    elif not isinstance(title, str) or not title.strip() or len(title) > MAX_TITLE or has_control_characters(title):
        mine[where("title")] = [f"A title, 1-{MAX_TITLE} characters, on one line (no control characters)."]
    else:
        out["title"] = title.strip()

    metric = item.get("metric")
    if "metric" not in item:
        mine[where("metric")] = ["This field is required."]
    elif metric not in METRICS:
        mine[where("metric")] = [f"Use one of {', '.join(METRICS)}."]
    out["metric"] = metric

    filters = item.get("filters")
    out["filters"] = _filters(filters, where("filters"), mine)

    for name, allowed in (("group_by", GROUP_BY), ("interval", tuple(INTERVALS))):
        value = item.get(name)
        if value is not None and value not in allowed:
            mine[where(name)] = [f"Use one of {', '.join(allowed)}, or null."]
        out[name] = value

    time_range = item.get("time_range")
    if time_range is None:
        time_range = DEFAULT_TIME_RANGE
    elif time_range not in TIME_RANGES:
        mine[where("time_range")] = [f"Use one of {', '.join(TIME_RANGES)} (the analytics API's ranges)."]
    out["time_range"] = time_range

    score = item.get("score")
    if metric in SCORE_METRICS:
        if not isinstance(score, str) or not score:
            mine[where("score")] = ["Name the score (a numeric or boolean one) whose figure this is."]
        else:
            try:
                check_score_name(score)
            except ScoreNameError as exc:
                mine[where("score")] = [str(exc)]
    elif score is not None:
        mine[where("score")] = ["Only with metric score_avg or score_count."]
    out["score"] = score if metric in SCORE_METRICS else None

    chart = item.get("chart")
    if "chart" not in item:
        mine[where("chart")] = ["This field is required."]
    elif chart not in CHARTS:
        mine[where("chart")] = [f"Use one of {', '.join(CHARTS)}."]
    out["chart"] = chart

    if not mine:
        _check_combination(out, where, mine)
    if not mine:
        try:
            plan_for(widget_query(out, now=now), now)
        except FilterError as exc:
            mine[where(f"filters.{exc.param}")] = [exc.message]
        except AnalyticsError as exc:
            name = exc.param if exc.param in ("interval", "group_by") else "interval"
            mine[where(name)] = [exc.message]
    if mine:
        errors.update(mine)
        return None
    return widget_fields(out)


def widget_fields(widget: Mapping[str, Any]) -> dict[str, Any]:
    """A widget's JSON: every field of WIDGET_FIELDS, and `score` when it has one."""
    out = {name: widget.get(name) for name in WIDGET_FIELDS}
    if widget.get("score"):
        out["score"] = widget["score"]
    return out


def _check_combination(widget: dict[str, Any], where: Any, errors: dict[str, list[str]]) -> None:
    chart, metric, group_by = widget["chart"], widget["metric"], widget["group_by"]
    if metric in SCORE_METRICS and group_by:
        errors[where("group_by")] = ["A score's figure has no groups: leave group_by out."]
        return
    if chart == "number" and group_by:
        errors[where("group_by")] = [
            "A number shows one figure for the range: leave group_by out, or use bar or table."
        ]
        return
    over_time = chart == "line" or (chart in ("bar", "table") and not group_by)
    if over_time and metric not in PER_INTERVAL:
        errors[where("metric")] = [
            f"A {chart} over time needs a figure kept per interval: {', '.join(PER_INTERVAL)}. "
            f"{metric} is given for the whole range: use a number, or a bar or table with group_by."
        ]


def _filters(value: Any, at: str, errors: dict[str, list[str]]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors[at] = ['An object of trace feed filters, e.g. {"model": "gpt-4o*", "status": "error"}.']
        return {}
    out: dict[str, Any] = {}
    for key, raw in value.items():
        if key in PERIOD_PARAMS:
            errors[f"{at}.{key}"] = ["Give the period as the widget's time_range, not as a filter."]
        elif not isinstance(key, str) or (key not in FILTER_KEYS and not key.startswith("metadata.")):
            errors[f"{at}.{key}"] = [f"Unknown filter; known: {', '.join(FILTER_KEYS)}, metadata.<key>."]
        elif isinstance(raw, bool | str | int | float) or (
            isinstance(raw, list) and raw and all(isinstance(v, str) for v in raw)
        ):
            out[key] = raw
        else:
            errors[f"{at}.{key}"] = ["A string, number, boolean or list of strings."]
    if not any(k.startswith(f"{at}.") for k in errors):
        try:
            parse_query(filter_params(out), now=timezone.now(), limit=None)
        except FilterError as exc:
            errors[f"{at}.{exc.param}"] = [exc.message]
    return out
