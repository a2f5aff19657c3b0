"""Adding rollup rows up in Postgres: one statement per read, so Python gets one row per interval
and group with its counters summed and its histograms merged, instead of every stored row.

The histograms are parallel arrays (`analytics.fields.IntArrayField`); ``unnest(keys, counts)``
turns a row's histogram into (key, count) pairs, and ``sum ... GROUP BY interval, group, key``
adds them (the keys come back unordered, aligned with their counts: `sketch.quantiles` sorts),
with the row's sign (a day row less some of its hours, `analytics.plan`). Which
interval a row counts in is ``width_bucket`` of its anchor second over the intervals' starts, the
same rule as `TimePlan.index_of` (Python's ``bisect_right``). The rows read are exactly those the
Python reader (`analytics.reading`, SQLite) reads: each `analytics.parts.Part` is one ORM queryset.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from .models import COUNTERS
from .parts import Acc, Part

_ANCHOR_SQL = {
    "bucket": "p.bucket",
    "day_noon": "p.bucket + 43200",
    "noon_of_day": "p.bucket / 86400 * 86400 + 43200",
}
_HISTS = {"both": ("latency", "ttft"), "latency": ("latency",), "ttft": ("ttft",), "none": ()}


def read(acc: Acc, *, team_id: int, parts: list[Part], starts: list[int] | None, hists: str) -> None:
    names = _HISTS[hists]
    hist_columns = [f"{name}_{what}" for name in names for what in ("keys", "counts")]
    columns = [*COUNTERS, *hist_columns]
    selects: list[str] = []
    params: list[Any] = []
    bounds = "ARRAY[" + ",".join(str(int(s)) for s in starts) + "]::bigint[]" if starts else ""
    for part in parts:
        sql, part_params = part.queryset(team_id, columns).query.sql_with_params()
        index = f"width_bucket({_ANCHOR_SQL[part.anchor]}, {bounds}) - 1" if starts else "0"
        group = f'p."{part.group}"::text' if part.group else "''::text"
        picked = ", ".join(f'p."{c}"' for c in columns)
        selects.append(f"SELECT {index} AS i, {group} AS g, {int(part.sign)} AS s, {picked} FROM ({sql}) p")
        params.extend(part_params)
    sums = ", ".join(f'sum(s * "{c}")::bigint AS c{j}' for j, c in enumerate(COUNTERS))
    # An interval and group of one row (an hourly series point, say) takes its arrays as they are
    # (``one``); only the others are unnested and added up per key.
    one = "FILTER (WHERE rows = 1 AND sign = 1)"
    singles = "".join(f", max({n}_keys) {one} AS {n}_ks, max({n}_counts) {one} AS {n}_ns" for n in names)
    picked = ", ".join(f"c.c{j}" for j in range(len(COUNTERS)))
    picked += "".join(f", coalesce(c.{n}_ks, {n}.ks), coalesce(c.{n}_ns, {n}.ns)" for n in names)
    query = [
        f"WITH r AS MATERIALIZED (SELECT u.*, count(*) OVER w AS rows, min(u.s) OVER w AS sign "
        f"FROM ({' UNION ALL '.join(selects)}) u WINDOW w AS (PARTITION BY u.i, u.g)), "
        f"c AS (SELECT i, g, {sums}{singles} FROM r GROUP BY i, g) "
        f"SELECT c.i, c.g, {picked} FROM c"
    ]
    for name in names:
        query.append(
            f"LEFT JOIN (SELECT i, g, array_agg(k) AS ks, array_agg(n) AS ns FROM ("
            f"SELECT r.i, r.g, u.k, sum(r.s * u.n) AS n FROM r, unnest(r.{name}_keys, r.{name}_counts) AS u(k, n)"
            f" WHERE r.rows > 1 OR r.sign < 1 GROUP BY r.i, r.g, u.k) x WHERE n <> 0 GROUP BY i, g) {name} USING (i, g)"
        )
    nc = len(COUNTERS)
    with connection.cursor() as cursor:
        cursor.execute(" ".join(query), params)
        for row in cursor.fetchall():
            stats = acc[(row[0], row[1])]
            stats.add_counters(row[2 : 2 + nc])
            for j, name in enumerate(names):
                keys, ns = row[2 + nc + 2 * j], row[3 + nc + 2 * j]
                if keys:
                    counts = stats.latency if name == "latency" else stats.ttft
                    get = counts.get
                    for key, n in zip(keys, ns, strict=True):
                        counts[key] = get(key, 0) + n
