"""One row per interval and group: the table behind a report's CSV and charts.

The analytics answer (`selectors.analytics_for_team`) gives a series for the whole selection and
totals per group; a report also wants each group's series. This reads the same rollup pieces
(or raw traces) as the series, keyed by interval *and* group, for the groups the answer ranked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import plan as planning
from .reading import new_acc, read_raw
from .selectors import AnalyticsQuery, _check_raw, _read, _snapshot, analytics_for_team, plan_for
from .slices import raw_reasons, slice_for
from .stats import Stats


@dataclass(frozen=True)
class Row:
    period_start: str  # ISO, the interval's start (UTC)
    group: Any  # the group's key ("" without group_by; None when traces lack the field)
    stats: Stats


def table_for_team(
    *, team_id: int, query: AnalyticsQuery, now: datetime, live: bool = True
) -> tuple[dict[str, Any], list[Row]]:
    """The analytics answer for ``query`` and its rows: every interval of the range, oldest first,
    and in each one every ranked group (largest cost first), zeros included. (``live``: as
    `analytics_for_team`'s.)"""
    body = analytics_for_team(team_id=team_id, query=query, now=now, live=live)
    plan = plan_for(query, now)
    acc = new_acc()
    f, group_by = query.trace_filter, query.group_by
    keys: list[Any] = [g["key"] for g in body["groups"]] if group_by else [""]
    with _snapshot():
        if group_by is None:
            series_slice = slice_for(f, None)
            _read_pieces(acc, team_id, query, plan, series_slice, groups=False)
        else:
            _read_pieces(acc, team_id, query, plan, slice_for(f, group_by), groups=True)
    rows = [
        Row(planning.iso(start), key, acc.get((i, key)) or Stats())
        for i, start in enumerate(plan.starts[:-1])
        for key in keys
    ]
    return body, rows


def _read_pieces(
    acc: Any, team_id: int, query: AnalyticsQuery, plan: planning.TimePlan, slice_: Any, *, groups: bool
) -> None:
    f, group_by = query.trace_filter, query.group_by
    # Counted into ``acc`` under (interval, key); a series without group_by lands under key "".
    series, grouped = (new_acc(), acc) if groups else (acc, None)
    if slice_ is None:
        everything = [(plan.since, plan.until)]
        _check_raw(team_id, f, everything, f"The rollups cannot answer {' and '.join(raw_reasons(f, group_by))}")
        ranges = everything
    else:
        ranges = plan.pieces.get("raw", [])
        _check_raw(team_id, f, ranges, "Minutes older than the minute rollups are counted from raw traces")
        _read(acc, team_id, slice_, plan.pieces, plan, plan.starts, "latency")
    read_raw(
        series=series,
        groups=grouped,
        rate_limited=None,
        team_id=team_id,
        trace_filter=f,
        ranges=ranges,
        group_by=group_by if groups else None,
        index_of=plan.index_of,
        groups_per_interval=True,
    )
