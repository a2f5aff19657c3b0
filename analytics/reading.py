"""Reading figures: folded rollup rows, traces not folded yet (`analytics.pending`), and raw
traces, into `Stats`.

Every reader adds into ``out[(interval index, group key)]``; the caller picks the pieces (which
grain answers which seconds, `analytics.plan`) so that every trace is counted exactly once.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django.db.models import Q

from traces.filters import TraceFilter
from traces.models import calls_only
from traces.selectors import traces_for_team

from . import merged
from .parts import Acc, parts_of
from .pending import PendingPart
from .plan import Ranges
from .slices import RAW_COLUMN, Slice
from .stats import ADD_TRACE_FIELDS, Stats


def new_acc() -> Acc:
    return defaultdict(Stats)


def read_rollups(
    acc: Acc,
    *,
    team_id: int,
    slice_: Slice,
    pieces: dict[str, Ranges],
    since: int,
    until: int,
    starts: list[int] | None,
    hists: str = "both",
    extra_where: dict[str, Any] | None = None,
    point_quantiles: tuple[float, ...] | None = None,
) -> None:
    """Add the rollups of ``pieces`` and the traces of [since, until) not folded yet (but those of
    the minutes raw traces answer) into ``acc`` under (interval index, group key); ``starts`` are
    the intervals' starts, None for one interval (index 0). ``hists``: "both", "latency", "ttft" or
    "none" (counters only). All the parts are read in one statement that also works out each row's
    interval (`analytics.merged`)."""
    merged.read(
        acc,
        team_id=team_id,
        parts=parts_of(slice_, pieces, extra_where=extra_where),
        starts=starts,
        hists=hists,
        point_quantiles=point_quantiles,
        pending=PendingPart(
            {**slice_.trace_where, **(extra_where or {})}, slice_.trace_group, since, until, pieces.get("raw", [])
        ),
    )


def raw_queryset(team_id: int, trace_filter: TraceFilter, ranges: Ranges) -> Any:
    untimed = dataclasses.replace(trace_filter, since=None, until=None)
    qs = calls_only(traces_for_team(team_id, untimed))  # as the rollups: calls, no structural spans
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
    fields = ["timestamp", "provider", column or "provider", *ADD_TRACE_FIELDS]
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
