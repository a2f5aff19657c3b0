"""GET /api/v1/analytics: the figures of a team's traces over a range, from rollups when they can
answer (analytics.slices) and from the raw traces (bounded) when they cannot.

All reads of one answer run in one snapshot (REPEATABLE READ on Postgres), so a fold committing
meanwhile cannot make a pending trace count twice or not at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from traces.filters import TraceFilter, parse_trace_filter

from . import plan as planning
from . import sketch, snapshots
from .live import queue_depth, rate_limit_headers
from .reading import Acc, new_acc, raw_queryset, read_raw, read_rollups
from .scores import ScoreNameError, check_score_name, score_figures
from .slices import GROUP_BY, Slice, raw_reasons, slice_for
from .stats import Stats

DEFAULT_RANGE = timedelta(hours=24)
GROUP_LIMIT_DEFAULT = 10
GROUP_LIMIT_MAX = 1000
PARAMS = ("interval", "group_by", "limit", "tz", "score")
MERGED_POINTS_MAX = 48  # series up to this many points give the totals' histograms too
POINT_QUANTILES = (sketch.QUANTILES["p50"], sketch.QUANTILES["p95"])  # a series point's


class AnalyticsError(ValueError):
    """A bad parameter, or a query the rollups cannot answer over more traces than a raw scan may
    count (``status`` 400 either way)."""

    def __init__(self, param: str, message: str, **extra: Any) -> None:
        self.param = param
        self.message = message
        self.extra = extra
        super().__init__(f"{param}: {message}")


@dataclass(frozen=True)
class AnalyticsQuery:
    trace_filter: TraceFilter
    interval: str | None
    group_by: str | None
    limit: int
    tz: ZoneInfo
    score: str | None = None  # a score's name: the answer's `score` (its average and count per interval)


def parse_query(params: Mapping[str, Any], *, now: datetime | None, limit: int | None) -> AnalyticsQuery:
    """The trace feed's filters (traces.filters) plus interval, group_by and tz; raises FilterError
    or AnalyticsError naming the parameter."""
    trace_filter = parse_trace_filter(params, now=now)
    interval = params.get("interval") or None
    if interval is not None and interval not in planning.INTERVALS:
        raise AnalyticsError("interval", "Use minute, hour or day.")
    group_by = params.get("group_by") or None
    if group_by is not None and group_by not in GROUP_BY:
        raise AnalyticsError("group_by", f"Use one of {', '.join(GROUP_BY)}.")
    tz_name = params.get("tz") or "UTC"
    try:
        if len(tz_name) > 64 or "\x00" in tz_name:
            raise ValueError(tz_name)
        tz = ZoneInfo(tz_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise AnalyticsError("tz", "An IANA time zone name, e.g. Europe/Paris.")
    score = params.get("score") if "score" in params else None
    if score is not None:  # (given empty: a 400, as its pattern says)
        try:
            check_score_name(score)
        except ScoreNameError as exc:
            raise AnalyticsError("score", str(exc))
    return AnalyticsQuery(trace_filter, interval, group_by, limit or GROUP_LIMIT_DEFAULT, tz, score)


def analytics_for_team(
    *, team_id: int, query: AnalyticsQuery, now: datetime | None = None, live: bool = True
) -> dict[str, Any]:
    """``live=False``: for a dashboard widget, which shows one figure of the range: no state of now
    (``queue`` null, ``rate_limits.latest`` empty) and no rate-limited series (``rate_limits.series``
    empty when the rollups answer: one read fewer)."""
    plan = plan_for(query, now)
    with _snapshot():
        body = _figures(team_id, query, plan, rate_limits=live)
        body["queue"] = queue_depth(team_id) if live else None
        body["rate_limits"]["latest"] = (
            rate_limit_headers(team_id, query.trace_filter, plan.since, plan.until) if live else []
        )
    return body


def analytics_groups(
    *, team_id: int, query: AnalyticsQuery, group_by: str, now: datetime | None = None, ttft: bool = True
) -> list[dict[str, Any]]:
    """Only ``groups`` of the answer for ``group_by`` (the dashboard shows several breakdowns of one
    range): the same reads as `analytics_for_team`'s, without the series. ``ttft=False``: the
    groups' TTFT percentiles are null (the mean stays), their histograms unread (half the arrays)."""
    if group_by not in GROUP_BY:
        raise AnalyticsError("group_by", f"Use one of {', '.join(GROUP_BY)}.")
    plan = plan_for(query, now)
    f = query.trace_filter
    acc = new_acc()
    with _snapshot():
        group_slice = slice_for(f, group_by)
        if group_slice is None:
            everything = [(plan.since, plan.until)]
            _check_raw(team_id, f, everything, f"The rollups cannot answer {' and '.join(raw_reasons(f, group_by))}")
            _raw_groups(acc, team_id, f, everything, group_by, plan)
        else:
            _rollup_groups(acc, team_id, f, group_slice, group_by, plan, query.limit, "both" if ttft else "latency")
    if not ttft:
        for stats in acc.values():
            stats.ttft.clear()  # (raw traces counted theirs)
    return _groups(acc, query.limit)


def plan_for(query: AnalyticsQuery, now: datetime | None) -> planning.TimePlan:
    """The query's range (default: the last 24 hours) cut into intervals and rollup pieces."""
    now = now or timezone.now()
    f = query.trace_filter
    until = f.until or now
    since = f.since or (until - DEFAULT_RANGE)
    if since >= until:
        raise AnalyticsError("since", "Must be earlier than until.")
    try:
        return planning.make_plan(
            since=since,
            until=until,
            interval=query.interval,
            tz=query.tz,
            now=now,
            minute_hours=settings.TRACERELAY_RETENTION_MINUTE_HOURS,
        )
    except planning.PlanError as exc:
        raise AnalyticsError(exc.param, exc.message)


def _rollup_groups(
    acc: Acc,
    team_id: int,
    f: TraceFilter,
    group_slice: Slice,
    group_by: str,
    plan: planning.TimePlan,
    limit: int,
    hists: str = "both",
) -> None:
    """Totals per group over the whole range, from the coarsest rollups (raw minutes, if any, too).
    Histograms are read for the ``limit`` groups shown only: the counters of every group rank them
    first (no arrays read), as `_groups` will (7 days by tag: 10 of 25 tags' histograms)."""
    whole = planning.whole_range_pieces(plan)
    raw = whole.get("raw", [])
    _check_raw(team_id, f, raw, "Minutes older than the minute rollups are counted from raw traces")
    ranking = new_acc()
    _read(ranking, team_id, group_slice, whole, plan, None, "none")
    _raw_groups(ranking, team_id, f, raw, group_by, plan)
    shown = [key for key, _stats in _ranked(ranking)[:limit]]
    assert group_slice.group is not None and group_slice.trace_group is not None
    if not shown:
        return
    only = dataclasses.replace(
        group_slice,
        where={**group_slice.where, f"{group_slice.group}__in": shown},
        trace_where={**group_slice.trace_where, f"{group_slice.trace_group}__in": shown},
    )
    _read(acc, team_id, only, whole, plan, None, hists)
    _raw_groups(acc, team_id, f, raw, group_by, plan)


def _raw_groups(acc: Acc, team_id: int, f: TraceFilter, ranges: Any, group_by: str, plan: planning.TimePlan) -> None:
    read_raw(
        series=new_acc(),
        groups=acc,
        rate_limited=None,
        team_id=team_id,
        trace_filter=f,
        ranges=ranges,
        group_by=group_by,
        index_of=plan.index_of,
    )


@contextmanager
def _snapshot() -> Iterator[None]:
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        with connection.cursor() as cursor:
            if outermost:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            # JIT compiling costs more than these short reads (tens to hundreds of ms once a plan's
            # estimated cost passes jit_above_cost, as large rollup tables make it).
            cursor.execute("SET LOCAL jit = off")
        with snapshots.one_look():
            yield


def _figures(team_id: int, query: AnalyticsQuery, plan: planning.TimePlan, rate_limits: bool = True) -> dict[str, Any]:
    f, group_by = query.trace_filter, query.group_by
    series_acc, groups_acc, rl_acc = new_acc(), new_acc(), new_acc()
    whole_total: Stats | None = None
    series_slice = slice_for(f, None)
    group_slice = slice_for(f, group_by) if group_by else None
    rollups = series_slice is not None and (group_by is None or group_slice is not None)
    everything = [(plan.since, plan.until)]

    if not rollups:
        reasons = raw_reasons(f, group_by)
        _check_raw(team_id, f, everything, f"The rollups cannot answer {' and '.join(reasons)}")
        read_raw(
            series=series_acc,
            groups=groups_acc if group_by else None,
            rate_limited=rl_acc,
            team_id=team_id,
            trace_filter=f,
            ranges=everything,
            group_by=group_by,
            index_of=plan.index_of,
        )
        source = "raw"
    else:
        assert series_slice is not None
        raw = plan.pieces.get("raw", [])
        _check_raw(team_id, f, raw, "Minutes older than the minute rollups are counted from raw traces")
        # Series points show latency percentiles only. The totals' histograms (latency and TTFT) come
        # from the points when they are few, else from the coarsest cut of the range (a 7-day hourly
        # series: ~10 rows instead of adding up 168 points).
        if len(plan.starts) - 1 <= MERGED_POINTS_MAX:
            _read(series_acc, team_id, series_slice, plan.pieces, plan, plan.starts, "both")
        else:
            # (Points need only p50 and p95 then; with raw minutes in the range, raw traces add
            # into the points' histograms, so those are built.)
            shown = None if raw else POINT_QUANTILES
            _read(series_acc, team_id, series_slice, plan.pieces, plan, plan.starts, "latency", shown)
            whole = planning.whole_range_pieces(plan)
            whole_acc = new_acc()
            _read(whole_acc, team_id, series_slice, whole, plan, None, "both")
            read_raw(
                series=whole_acc,
                groups=None,
                rate_limited=None,
                team_id=team_id,
                trace_filter=f,
                ranges=whole.get("raw", []),
                group_by=None,
                index_of=lambda _s: 0,
            )
            whole_total = whole_acc[(0, "")]
        read_raw(
            series=series_acc,
            groups=None,
            rate_limited=None,  # _rate_limited_rollups counts them
            team_id=team_id,
            trace_filter=f,
            ranges=raw,
            group_by=None,
            index_of=plan.index_of,
        )
        if group_slice is not None:
            assert group_by is not None
            _rollup_groups(groups_acc, team_id, f, group_slice, group_by, plan, query.limit)
        if rate_limits:
            _rate_limited_rollups(rl_acc, team_id, f, plan)
        source = "rollups"

    series = [series_acc.get((i, ""), Stats()) for i in range(len(plan.starts) - 1)]
    totals = Stats()
    for stats in series:
        totals.merge(stats, histograms=whole_total is None)
    if whole_total is not None:
        totals.latency, totals.ttft = whole_total.latency, whole_total.ttft
    body: dict[str, Any] = {
        "range": {
            "since": planning.iso(plan.since),
            "until": planning.iso(plan.until),
            "interval": plan.interval,
            "tz": str(query.tz),
        },
        "source": source,
        "totals": totals.totals(),
        "latency_ms": totals.percentiles("latency"),
        "ttft_ms": totals.percentiles("ttft"),
        "series": [_point(plan.starts[i], stats) for i, stats in enumerate(series)],
        "groups": _groups(groups_acc, query.limit) if group_by else None,
        "rate_limits": {"series": _rate_limit_series(rl_acc, plan)},
        "score": score_figures(team_id=team_id, trace_filter=f, plan=plan, name=query.score) if query.score else None,
    }
    return body


def _read(
    acc: Acc,
    team_id: int,
    slice_: Slice,
    pieces: dict[str, Any],
    plan: planning.TimePlan,
    starts: list[int] | None,
    hists: str = "both",
    point_quantiles: tuple[float, ...] | None = None,
) -> None:
    """Folded rows of ``pieces`` and pending traces of the range into ``acc`` per interval of ``starts``
    (None: all in one)."""
    read_rollups(
        acc,
        team_id=team_id,
        slice_=slice_,
        pieces=pieces,
        since=plan.since,
        until=plan.until,
        starts=starts,
        hists=hists,
        point_quantiles=point_quantiles,
    )


def _rate_limited_rollups(acc: Acc, team_id: int, f: TraceFilter, plan: planning.TimePlan) -> None:
    """Rate-limited calls per interval and provider: the filter's slice, narrowed to rate_limited."""
    if f.statuses and "rate_limited" not in f.statuses:
        return
    narrowed = dataclasses.replace(f, statuses=("rate_limited",))
    slice_ = slice_for(narrowed, "provider")
    raw = plan.pieces.get("raw", []) if slice_ is not None else [(plan.since, plan.until)]
    if raw:  # (a tag filter: the tag rows know no provider, so all of it)
        _check_raw(team_id, narrowed, raw, "Rate-limited calls by provider are counted from raw traces here")
        read_raw(
            series=new_acc(),
            groups=None,
            rate_limited=acc,
            team_id=team_id,
            trace_filter=narrowed,
            ranges=raw,
            group_by=None,
            index_of=plan.index_of,
        )
    if slice_ is None:
        return
    _read(acc, team_id, slice_, plan.pieces, plan, plan.starts, "none")


def _check_raw(team_id: int, f: TraceFilter, ranges: Any, why: str) -> None:
    if not ranges:
        return
    limit = settings.TRACERELAY_ANALYTICS_RAW_SCAN_MAX
    found = raw_queryset(team_id, f, ranges)[: limit + 1].count()
    if found > limit:
        raise AnalyticsError(
            "since",
            f"{why}, and this range holds more than {limit:,} matching traces (the raw-scan limit). "
            "Narrow the range or drop the filters and group_by the rollups cannot answer (docs/analytics.md).",
            raw_scan_limit=limit,
        )


def _point(start: int, stats: Stats) -> dict[str, Any]:
    point: dict[str, Any] = {"t": planning.iso(start), **stats.totals()}
    quantiles = stats.points if stats.points is not None else sketch.quantiles(stats.latency, POINT_QUANTILES)
    point["p50"], point["p95"] = quantiles
    return point


def _ranked(acc: Acc) -> list[tuple[Any, Stats]]:
    """Groups with traces, largest cost first (then count, then key)."""
    groups = [(key, stats) for (_i, key), stats in acc.items() if stats.count]
    groups.sort(key=lambda kv: (-kv[1].cost_e10, -kv[1].count, str(kv[0])))
    return groups


def _groups(acc: Acc, limit: int) -> list[dict[str, Any]]:
    groups = _ranked(acc)
    return [
        {
            "key": key,
            **stats.totals(),
            "latency_ms": stats.percentiles("latency"),
            "ttft_ms": stats.percentiles("ttft"),
        }
        for key, stats in groups[:limit]
    ]


def _rate_limit_series(acc: Acc, plan: planning.TimePlan) -> list[dict[str, Any]]:
    out = [
        {"t": planning.iso(plan.starts[i]), "provider": provider, "rate_limited": stats.rate_limited}
        for (i, provider), stats in acc.items()
        if stats.rate_limited
    ]
    out.sort(key=lambda item: (item["t"], item["provider"]))
    return out
