"""Reading rollup rows: every `analytics.parts.Part` of a read in one statement.

Postgres picks the rows (each part is one SELECT: a table, a slice, time ranges, a sign) and
works out which interval each counts in: ``width_bucket`` of its anchor second over the intervals'
starts, the same rule as `TimePlan.index_of` (Python's ``bisect_right``). Python adds them up: the
counters, and the histograms bucket by bucket.

Why the histograms are not added in SQL (as they were): ``unnest(keys, counts) ... GROUP BY key``
cost Postgres 0.7–1.5 µs per (key, count) pair (the arrays are TOASTed, each row is a function
scan, then a hash aggregate), while a dict update in Python costs ~0.07 µs; 7 days by tag adds
~40,000 pairs (docs/analytics.md, "Performance"). The arrays arrive as lists (psycopg's C
loader) with their keys ascending, as `sketch.arrays` stores them. A cell of many rows (a 30-day
series point filtered by two dimensions: ~90 DIMS rows) is added into lists indexed by key
(`sketch.add_dense`), a third of a dict's cost per pair; parsing the arrays (psycopg, ~40 ns an
element) is then the larger part.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import connection

from . import sketch
from .models import COUNTERS
from .parts import Acc, Part, lookup_sql
from .pending import PendingPart
from .pending import aggregated as pending_sql

# Which second of a row's bucket says its interval (`TimePlan.index_of`): a day row counts in the
# interval holding its noon (it is read only for an interval holding 13 of its hours, so noon
# among them); a taken-away hour in the interval of its day's row.
_ANCHOR_SQL = {
    "bucket": "p.bucket",
    "day_noon": "p.bucket + 43200",
    "noon_of_day": "p.bucket / 86400 * 86400 + 43200",
}
_HISTS = {"both": ("latency", "ttft"), "latency": ("latency",), "ttft": ("ttft",), "none": ()}
_NC = len(COUNTERS)
# Cells of at least this many rows are added up densely (`sketch.add_dense`): converting a dense
# list back costs about as much as adding ~5 rows into a dict.
DENSE_ROWS = 6


def read(
    acc: Acc,
    *,
    team_id: int,
    parts: list[Part],
    starts: list[int] | None,
    hists: str,
    point_quantiles: tuple[float, ...] | None = None,
    pending: PendingPart | None = None,
) -> None:
    """``pending``: the traces not folded yet, added up in SQL as one more member of the union
    (`analytics.pending.aggregated`). ``point_quantiles`` (a latency series whose points need only
    those quantiles): a point made of one stored row gets them straight from its arrays
    (`Stats.points`), with no histogram built; a 7-day hourly series is 168 such rows."""
    names = _HISTS[hists]
    columns = [*COUNTERS, *(f"{name}_{what}" for name in names for what in ("keys", "counts"))]
    picked = ", ".join(f'p."{c}"' for c in columns)
    bounds = "ARRAY[" + ",".join(str(int(s)) for s in starts) + "]::bigint[]" if starts else ""
    selects: list[str] = []
    params: list[Any] = []

    def interval_of(second: str) -> str:
        return f"width_bucket({second}, {bounds}) - 1" if starts else "0"

    for part in parts:
        sql, part_params = _select(part, team_id, columns)
        index = interval_of(_ANCHOR_SQL[part.anchor])
        group = f'p."{part.group}"::text' if part.group else "''::text"
        selects.append(f"SELECT {index} AS i, {group} AS g, {int(part.sign)} AS s, {picked} FROM ({sql}) p")
        params.extend(part_params)
    aggregated = None if pending is None else pending_sql(pending, team_id, names, interval_of)
    if aggregated is not None:
        selects.append(aggregated[0])
        params.extend(aggregated[1])
    union = " UNION ALL ".join(selects)
    if not names:  # counters only: Postgres adds them up, one row per interval and group
        sums = ", ".join(f'sum(u.s * u."{c}")::bigint' for c in COUNTERS)
        union = f"SELECT u.i, u.g, 1, {sums} FROM ({union}) u GROUP BY u.i, u.g"
    with connection.cursor() as cursor:
        cursor.execute(union, params)
        rows = cursor.fetchall()
    rows_of = Counter((row[0], row[1]) for row in rows) if names else Counter()
    alone = set()
    if point_quantiles is not None and names == ("latency",):
        alone = {key for key, n in rows_of.items() if n == 1}
    # A cell (interval, group) of many rows adds their histograms into dense lists first.
    dense: dict[tuple[int, str], list[list[int]]] = {}
    for row in rows:
        cell = (row[0], row[1])
        stats = acc[cell]
        sign = row[2]
        stats.add_counters(row[3 : 3 + _NC], sign)
        at = 3 + _NC
        if sign == 1 and cell in alone:
            assert point_quantiles is not None
            stats.points = sketch.quantiles_of_arrays(row[at] or [], row[at + 1] or [], point_quantiles)
            continue
        lists = dense.get(cell)
        if lists is None and rows_of[cell] >= DENSE_ROWS:
            lists = dense[cell] = [sketch.dense() for _name in names]
        for i, name in enumerate(names):
            keys, ns = row[at + 2 * i], row[at + 2 * i + 1]
            if lists is None or not sketch.add_dense(lists[i], keys, ns, sign):
                sketch.merge_arrays(getattr(stats, name), keys, ns, sign)
    for cell, lists in dense.items():
        stats = acc[cell]
        for name, counts in zip(names, lists, strict=True):
            sketch.merge_dense(getattr(stats, name), counts)


def _select(part: Part, team_id: int, columns: list[str]) -> tuple[str, list[Any]]:
    """``part``'s rows (``bucket``, its group column, ``columns``) as SQL, written out: Django
    compiled the ~16 querysets of an answer in ~11 ms of its ~50 ms of Python. The lookups rollup
    slices use are few (`parts.lookup_sql`); `tests/analytics` compares the figures with a recount."""
    fields = {f.name: f.column for f in part.model._meta.concrete_fields} | {"team": "team_id"}
    where = ['"team_id" = %s', '"kind" = %s']
    params: list[Any] = [team_id, part.kind]
    for lookup, value in part.where.items():
        name, _, op = lookup.partition("__")
        where.append(lookup_sql(f'"{fields[name]}"', op, value, params))
    where.append(_ranges(part.ranges, params))
    if part.skip:
        where.append(f"NOT {_ranges(part.skip, params)}")
    picked = ", ".join(f'"{fields[name]}"' for name in ["bucket", *([part.group] if part.group else []), *columns])
    return (
        f"SELECT {picked} FROM {connection.ops.quote_name(part.model._meta.db_table)} WHERE {' AND '.join(where)}",
        params,
    )


def _ranges(ranges: list[tuple[int, int]], params: list[Any]) -> str:
    for start, end in ranges:
        params.extend((int(start), int(end)))
    return "(" + " OR ".join('("bucket" >= %s AND "bucket" < %s)' for _ in ranges) + ")" if ranges else "false"
