"""Reading figures: folded rollup rows, deltas not folded yet, and raw traces, into `Stats`.

Every reader adds into ``out[(interval index, group key)]``; the caller picks the pieces (which
grain answers which seconds, `analytics.plan`) so that every trace is counted exactly once.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django.db.models import F, Q, Value

from traces.filters import TraceFilter
from traces.models import llm_calls
from traces.selectors import traces_for_team

from . import sketch
from .models import COUNTERS, GRAINS, RollupDelta, RollupFields
from .plan import Ranges
from .slices import RAW_COLUMN, Slice
from .stats import Stats

Acc = defaultdict[tuple[int, Any], Stats]
_NC = len(COUNTERS)


def new_acc() -> Acc:
    return defaultdict(Stats)


def _ranges_q(ranges: Ranges, column: str) -> Q:
    q = Q()
    for start, end in ranges:
        q |= Q(**{f"{column}__gte": start, f"{column}__lt": end})
    return q


def _add_rows(
    acc: Acc, rows: Any, index_of: Callable[[int], int], hists: str, skip: Callable[[int], bool] | None = None
) -> None:
    """Rows of (bucket, group key, *COUNTERS, then the histograms ``hists`` names)."""
    latency = hists in ("both", "latency")
    ttft = hists in ("both", "ttft")
    for row in rows:
        bucket = row[0]
        if skip is not None and skip(bucket):
            continue
        stats = acc[(index_of(bucket), row[1])]
        stats.add_counters(row[2 : 2 + _NC])
        if latency:
            sketch.merge_encoded(stats.latency, row[2 + _NC])
        if ttft:
            sketch.merge_encoded(stats.ttft, row[-1])


def _columns(group: str | None, hists: str) -> list[Any]:
    """``hists``: "both", "latency", "ttft" or "none" (counters only)."""
    columns: list[Any] = ["bucket", F(group) if group else Value("")]
    columns += COUNTERS
    if hists in ("both", "latency"):
        columns.append("latency_hist")
    if hists in ("both", "ttft"):
        columns.append("ttft_hist")
    return columns


def read_folded(
    acc: Acc,
    *,
    team_id: int,
    slice_: Slice,
    pieces: dict[str, Ranges],
    index_of: Callable[[int], int],
    hists: str = "both",
    extra_where: dict[str, Any] | None = None,
) -> None:
    for grain, (_size, model) in GRAINS.items():
        ranges = pieces.get(grain)
        if not ranges:
            continue
        qs = _rows(model, team_id, slice_.kind, {**slice_.where, **(extra_where or {})}, ranges)
        _add_rows(acc, qs.values_list(*_columns(slice_.group, hists)), index_of, hists)


def read_deltas(
    acc: Acc,
    *,
    team_id: int,
    slice_: Slice,
    since: int,
    until: int,
    raw: Ranges,
    index_of: Callable[[int], int],
    hists: str = "both",
    extra_where: dict[str, Any] | None = None,
) -> None:
    """Deltas in [since, until), except minutes that the raw traces answer."""
    qs = _rows(RollupDelta, team_id, slice_.delta_kind, {**slice_.delta_where, **(extra_where or {})}, [(since, until)])
    skip = _inside(raw) if raw else None
    _add_rows(acc, qs.values_list(*_columns(slice_.delta_group, hists)), index_of, hists, skip)


def _rows(model: type[RollupFields], team_id: int, kind: int, where: dict[str, Any], ranges: Ranges) -> Any:
    return model._default_manager.filter(team_id=team_id, kind=kind, **where).filter(_ranges_q(ranges, "bucket"))


def _inside(ranges: Ranges) -> Callable[[int], bool]:
    starts = [start for start, _ in ranges]

    def inside(second: int) -> bool:
        i = bisect.bisect_right(starts, second) - 1
        return i >= 0 and second < ranges[i][1]

    return inside


_RAW_FIELDS = (
    "status",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost",
    "unpriced",
    "usage_estimated",
    "latency_ms",
    "time_to_first_token_ms",
)


def raw_queryset(team_id: int, trace_filter: TraceFilter, ranges: Ranges) -> Any:
    untimed = dataclasses.replace(trace_filter, since=None, until=None)
    qs = llm_calls(traces_for_team(team_id, untimed))  # as the rollups: no manual spans
    if ranges:
        from datetime import UTC, datetime

        q = Q()
        for start, end in ranges:
            q |= Q(timestamp__gte=datetime.fromtimestamp(start, UTC), timestamp__lt=datetime.fromtimestamp(end, UTC))
        qs = qs.filter(q)
    return qs


def read_raw(
    *,
    series: Acc,
    groups: Acc | None,
    rate_limited: Acc | None,
    team_id: int,
    trace_filter: TraceFilter,
    ranges: Ranges,
    group_by: str | None,
    index_of: Callable[[int], int],
    groups_per_interval: bool = False,
) -> None:
    """Count raw traces in ``ranges``: into ``series`` per interval, ``groups`` per group key over
    the whole range (or per interval too, ``groups_per_interval``), and ``rate_limited`` (counters)
    per interval and provider."""
    if not ranges:
        return
    column = RAW_COLUMN[group_by] if group_by else None
    fields = ["timestamp", "provider", column or "provider", *_RAW_FIELDS]
    rows = raw_queryset(team_id, trace_filter, ranges).values_list(*fields)
    for row in rows.iterator(chunk_size=5000):
        index = index_of(int(row[0].timestamp()))
        args = row[3:]
        series[(index, "")].add_trace(*args)
        if rate_limited is not None and args[0] == "rate_limited":
            rate_limited[(index, row[1])].add_trace(*args)
        if groups is not None and column is not None:
            value = row[2]
            at = index if groups_per_interval else 0
            if isinstance(value, list):  # tags, destinations: once under each
                for item in dict.fromkeys(v for v in value if isinstance(v, str)):
                    groups[(at, item)].add_trace(*args)
            else:
                groups[(at, value)].add_trace(*args)
