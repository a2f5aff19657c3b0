"""The time side of an analytics query: the range, widened to whole intervals; the intervals
(UTC minutes and hours, days at midnight of ``tz``); and which rollup grain answers each piece.

A range is cut into UTC days, hours and minutes, each piece read from that grain's table. A day
that the range covers for 13 hours or more is read as its day row *less* the hours outside the
range (``-hour`` pieces: counts and histograms subtract exactly), so a day in Europe/Paris is 3
rows, not 24, and a 7-day range's partial first and last days are a few rows each. Minute rows
are kept only TRACERELAY_RETENTION_MINUTE_HOURS, so minutes older than that are counted from the
raw traces instead (only a day boundary of a time zone with a half-hour offset, or an explicit
minute interval, asks for them).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

INTERVALS = {"minute": 60, "hour": 3600, "day": 86400}
MAX_POINTS = 1_500
MINUTE = 60
HOUR = 3600
DAY = 86400
Ranges = list[tuple[int, int]]  # [start, end) in epoch seconds, sorted, not touching


class PlanError(ValueError):
    def __init__(self, param: str, message: str) -> None:
        self.param = param
        self.message = message
        super().__init__(f"{param}: {message}")


def default_interval(since: datetime, until: datetime) -> str:
    span = until - since
    if span <= timedelta(hours=3):
        return "minute"
    if span <= timedelta(days=8):
        return "hour"
    return "day"


@dataclass
class TimePlan:
    interval: str
    tz: ZoneInfo
    starts: list[int]  # interval starts (epoch seconds), the last one is the range's end
    raw_before: int  # minute pieces before this are counted from raw traces
    # grain → ranges to read from that grain's table; "raw" → ranges to count from traces;
    # "-hour" → hours to take away (from the day row of their UTC day, counted in its interval)
    pieces: dict[str, Ranges] = field(default_factory=dict)

    @property
    def since(self) -> int:
        return self.starts[0]

    @property
    def until(self) -> int:
        return self.starts[-1]

    def index_of(self, second: int) -> int:
        """Which interval holds ``second`` (within the range)."""
        return bisect.bisect_right(self.starts, second) - 1


def make_plan(
    *, since: datetime, until: datetime, interval: str | None, tz: ZoneInfo, now: datetime, minute_hours: int
) -> TimePlan:
    if interval is None:
        interval = default_interval(since, until)
    if interval not in INTERVALS:
        raise PlanError("interval", "Use minute, hour or day.")
    try:
        starts = _interval_starts(since, until, interval, tz)
        for second in (starts[0], starts[-1]):
            datetime.fromtimestamp(second, UTC).astimezone(tz)  # every interval is dated in years 1-9999
    except (OverflowError, ValueError):
        raise PlanError(
            "since" if since.year == 1 else "until",
            "The range, widened to whole intervals, must lie within the years 1 to 9999.",
        )
    if len(starts) - 1 > MAX_POINTS:
        raise PlanError(
            "interval",
            f"{len(starts) - 1} {interval}s in this range; at most {MAX_POINTS} points: use a longer interval.",
        )
    raw_before = int(now.timestamp()) // MINUTE * MINUTE - minute_hours * HOUR + HOUR  # an hour's margin
    plan = TimePlan(interval, tz, starts, raw_before)
    for a, b in zip(starts, starts[1:], strict=False):
        for grain, start, end in decompose(a, b, raw_before):
            _append(plan.pieces.setdefault(grain, []), start, end)
    return plan


def whole_range_pieces(plan: TimePlan) -> dict[str, Ranges]:
    """The coarsest cut of the whole range (for totals per group, which need no series)."""
    pieces: dict[str, Ranges] = {}
    for grain, start, end in decompose(plan.since, plan.until, plan.raw_before):
        _append(pieces.setdefault(grain, []), start, end)
    return pieces


def decompose(a: int, b: int, raw_before: int) -> list[tuple[str, int, int]]:
    """[a, b) as (grain, start, end) pieces: "day", "hour", "minute", "raw", and "-hour" (taken away)."""
    head_end = min(b, -(-a // HOUR) * HOUR)
    tail_start = max(head_end, b // HOUR * HOUR)
    out = _small(a, head_end, raw_before)
    t = head_end
    while t < tail_start:  # whole hours, a UTC day at a time
        day = t // DAY * DAY
        end = min(tail_start, day + DAY)
        hours = (end - t) // HOUR
        if hours > 12:  # the day row less its other hours: 1 + (24 - hours) rows instead of `hours`
            out.append(("day", day, day + DAY))
            out += [("-hour", day, t)] if day < t else []
            out += [("-hour", end, day + DAY)] if end < day + DAY else []
        else:
            out.append(("hour", t, end))
        t = end
    return out + _small(tail_start, b, raw_before)


def _small(a: int, b: int, raw_before: int) -> list[tuple[str, int, int]]:
    """Less than an hour: whole minutes, from raw traces where minute rows are gone."""
    out: list[tuple[str, int, int]] = []
    t = a
    while t < b:
        if t % MINUTE == 0:
            grain, step = ("minute" if t >= raw_before else "raw"), MINUTE
        else:  # a zone offset in seconds (historical LMT): count up to the next minute from raw
            grain, step = "raw", MINUTE - t % MINUTE
        out.append((grain, t, t + step))
        t += step
    return out


def _append(ranges: Ranges, start: int, end: int) -> None:
    if ranges and ranges[-1][1] == start:
        ranges[-1] = (ranges[-1][0], end)
    else:
        ranges.append((start, end))


def _interval_starts(since: datetime, until: datetime, interval: str, tz: ZoneInfo) -> list[int]:
    """Interval starts from the one holding ``since`` to the first at or after ``until`` (the end)."""
    lo, hi = int(since.timestamp()), int(until.timestamp())
    if until.timestamp() > hi:
        hi += 1  # a fractional second still needs its interval
    if interval != "day":
        size = INTERVALS[interval]
        first = lo // size * size
        last = -(-hi // size) * size
        if (last - first) // size > MAX_POINTS:
            return list(range(first, first + (MAX_POINTS + 2) * size, size))  # too many: refused by the caller
        return list(range(first, max(last, first + size) + 1, size))
    # Days at local midnight: 23 or 25 hours long across a DST change.
    day = since.astimezone(tz).date()
    starts: list[int] = []
    while True:
        start = int(datetime.combine(day, time(0), tzinfo=tz).timestamp())
        starts.append(start)
        if start >= hi or len(starts) > MAX_POINTS + 1:
            break
        day += timedelta(days=1)
    return starts


def iso(second: int) -> str:
    return datetime.fromtimestamp(second, UTC).isoformat().replace("+00:00", "Z")
