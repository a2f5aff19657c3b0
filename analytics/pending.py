"""Reading the traces the rollups do not count yet, straight from the traces table: those whose
transactions the fold's stored snapshot does not see (`analytics.snapshots`), plus any named by
`PendingBatch` rows (the previous release's, in a rolling deploy), in the read's snapshot.

The fold adds traces into the rollups and stores its snapshot (or deletes their batch row) in one
transaction. So in any snapshot a trace is either pending or in the folded rollups, never both,
and a read that adds the rollups and these traces (in the same REPEATABLE READ transaction,
`analytics.selectors`) is exact.

A `PendingPart` counts like the delta rows it replaces did: each trace in its UTC minute (the
bucket the fold will put it in), over [since, until) less the minutes raw traces answer, under the
slice's filters (`Slice.trace_where`) and group (`Slice.trace_group`). The part is one member of
the read's `UNION ALL` (`analytics.merged`, `PendingPart.aggregated`): the team's pending
traces by the index ``trace_rollup_xid`` and those of the batches overlapping the range (their ids
unnested, each trace fetched by its primary key: a fenced LATERAL subquery, or Postgres would
hash-join the whole team's traces), the filters applied, and the traces added up per interval and
group in SQL into rows shaped like rollup rows (counters and histogram arrays, keys by
`width_bucket` over `sketch.key_bounds`, so SQL and Python key alike).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from traces.models import CALL_KINDS, Trace

from . import sketch, snapshots
from .models import COUNTERS, PendingBatch
from .parts import lookup_sql
from .plan import Ranges
from .stats import ADD_TRACE_FIELDS

_LIST_COLUMNS = {"tags"}  # JSON lists: a trace counts once under each of its (string) items


@dataclass(frozen=True)
class PendingPart:
    """The pending traces of one read: ``where`` (Django lookups on Trace: exact, ``in``,
    ``startswith``, ``has_item``), grouped by the Trace column ``group``, in [since, until) less
    ``skip``. A ``<group>__in`` lookup keeps those groups only (for ``tags``: those tags)."""

    where: dict[str, Any]
    group: str | None
    since: int
    until: int
    skip: Ranges = field(default_factory=list)


def _conditions(where: dict[str, Any], fields: dict[str, str], params: list[Any]) -> list[str]:
    """``where``'s lookups as SQL on the trace alias ``t``."""
    q = connection.ops.quote_name
    conditions = []
    for lookup, value in where.items():
        name, _, op = lookup.partition("__")
        if name not in fields:
            raise ValueError(f"analytics.pending: not a trace column in {lookup!r}")
        conditions.append(lookup_sql(f"t.{q(fields[name])}", op, value, params))
    return conditions


def aggregated(
    part: PendingPart, team_id: int, hists: tuple[str, ...], interval_of: Callable[[str], str]
) -> tuple[str, list[Any]] | None:
    """``part``'s traces added up per interval and group, as rows of `analytics.merged`'s union:
    (interval index, group, sign 1, *COUNTERS, keys and counts of each histogram of ``hists``);
    ``interval_of(sql)`` is the interval index of a second. None when the range is empty."""
    if part.since >= part.until:
        return None
    q = connection.ops.quote_name
    fields: dict[str, str] = {f.name: str(f.column) for f in Trace._meta.concrete_fields}
    where = dict(part.where)
    only = where.pop(f"{part.group}__in", None) if part.group else None
    params: list[Any] = []
    conditions = _conditions(where, fields, params)
    needed = dict.fromkeys(["timestamp", *([part.group] if part.group else []), *ADD_TRACE_FIELDS])
    needed.update(dict.fromkeys(lookup.partition("__")[0] for lookup in where))
    fenced = ", ".join(f"x.{q(fields[name])}" for name in needed)
    minute = f"(floor(extract(epoch FROM t.{q('timestamp')}))::bigint / 60 * 60)"
    tags = ""
    if part.group is None:
        group = "''::text"
    elif part.group in _LIST_COLUMNS:  # once under each distinct string item
        column = f"t.{q(fields[part.group])}"
        tags = (
            " CROSS JOIN LATERAL (SELECT DISTINCT e #>> '{}' AS v FROM jsonb_array_elements("
            f"CASE WHEN jsonb_typeof({column}) = 'array' THEN {column} ELSE '[]'::jsonb END) AS e"
            " WHERE jsonb_typeof(e) = 'string') AS item"
        )
        group = "item.v"
    else:
        group = f"t.{q(fields[part.group])}::text"
    if only is not None:
        conditions.append(f"{group} = ANY(%s)")
        params.append([str(value) for value in only])
    conditions += [f"{minute} >= %s", f"{minute} < %s"]
    params += [part.since, part.until]
    for start, end in part.skip:
        conditions.append(f"NOT ({minute} >= %s AND {minute} < %s)")
        params += [start, end]
    picked = ", ".join(f"t.{q(fields[name])} AS {q(name)}" for name in ADD_TRACE_FIELDS)
    table, stamp = q(Trace._meta.db_table), q("timestamp")
    # The traces whose transactions the fold's snapshot does not see (index `trace_rollup_xid`),
    # and those named by batch rows (written by the previous release in a rolling deploy: their
    # rollup_xid is cleared). A batch's seconds bound its traces' (a minute's margin: a trace
    # counts in its minute); the fenced LATERAL fetches each by its primary key.
    pending, pending_params = snapshots.pending_where_read(snapshots.for_read(), alias="x")
    source = (
        f"SELECT {fenced} FROM {table} x WHERE x.team_id = %s AND {pending}"
        f" AND x.{q('kind')} = ANY(%s) AND x.{stamp} >= %s AND x.{stamp} < %s"
        f" UNION ALL SELECT x.* FROM {q(PendingBatch._meta.db_table)} b CROSS JOIN LATERAL unnest(b.trace_ids) AS u(id)"
        f" JOIN LATERAL (SELECT {fenced} FROM {table} x WHERE x.id = u.id AND x.{q('kind')} = ANY(%s) OFFSET 0) x"
        " ON true"
        f" WHERE b.team_id = %s AND b.last_second >= %s AND b.first_second < %s"
        f" AND x.{stamp} >= %s AND x.{stamp} < %s"
    )
    span = (_dt(part.since - 60), _dt(part.until))
    traces = f"SELECT {interval_of(minute)} AS i, {group} AS g, {picked} FROM ({source}) t{tags}" + (
        " WHERE " + " AND ".join(conditions) if conditions else ""
    )
    calls = sorted(CALL_KINDS)  # calls only, as the rollups: no structural spans
    params = [team_id, *pending_params, calls, *span, calls, team_id, part.since - 60, part.until, *span, *params]
    joins, arrays = "", ""
    keys, bounds = _key_sql()
    for name, column in (("latency", "latency_ms"), ("ttft", "time_to_first_token_ms")):
        if name not in hists:
            continue
        joins += (
            f" LEFT JOIN (SELECT i, g, array_agg(k ORDER BY k) AS k, array_agg(n ORDER BY k) AS n FROM"
            f" (SELECT i, g, {keys}[width_bucket({q(column)}, {bounds})] AS k, count(*)::int AS n FROM p"
            f" WHERE {q(column)} IS NOT NULL GROUP BY 1, 2, 3) AS z GROUP BY i, g) AS {name}"
            f" ON {name}.i = c.i AND {name}.g = c.g"
        )
        arrays += f", {name}.k, {name}.n"
    sql = (
        f"SELECT * FROM (WITH p AS MATERIALIZED ({traces})"
        f" SELECT c.*{arrays} FROM (SELECT i, g, 1 AS s, {_COUNTERS} FROM p GROUP BY i, g) AS c{joins}) AS pending"
    )
    return sql, params


# `Stats.add_trace` in SQL, in COUNTERS' order (integers of 1e-10 USD: Trace.cost has 10 places).
_COUNTERS_SQL = [
    "count(*)::bigint",
    "count(*) FILTER (WHERE status = 'success')::bigint",
    "count(*) FILTER (WHERE status = 'error')::bigint",
    "count(*) FILTER (WHERE status = 'rate_limited')::bigint",
    "coalesce(sum(prompt_tokens), 0)::bigint",
    "coalesce(sum(completion_tokens), 0)::bigint",
    "coalesce(sum(total_tokens), 0)::bigint",
    "coalesce(sum((cost * 10000000000)::bigint), 0)::bigint",
    "count(*) FILTER (WHERE unpriced)::bigint",
    "count(*) FILTER (WHERE usage_estimated)::bigint",
    "count(latency_ms)::bigint",
    "coalesce(sum(latency_ms), 0)::bigint",
    "count(time_to_first_token_ms)::bigint",
    "coalesce(sum(time_to_first_token_ms), 0)::bigint",
    "coalesce(sum(cached_tokens), 0)::bigint",
    "coalesce(sum(cache_write_tokens), 0)::bigint",
    "coalesce(sum(reasoning_tokens), 0)::bigint",
    "coalesce(sum(input_audio_tokens), 0)::bigint",
    "coalesce(sum(input_image_tokens), 0)::bigint",
    "coalesce(sum(output_audio_tokens), 0)::bigint",
    "coalesce(sum(output_image_tokens), 0)::bigint",
]
assert len(_COUNTERS_SQL) == len(COUNTERS)
# Named as COUNTERS: a reader that starts its UNION ALL with the pending rows names its columns by them.
_COUNTERS = ", ".join(f'{sql} AS "{name}"' for sql, name in zip(_COUNTERS_SQL, COUNTERS, strict=True))


@functools.cache
def _key_sql() -> tuple[str, str]:
    """`sketch.key_bounds` as SQL array literals: (keys, bounds). Made on first use, not at import
    (every web process imports this module)."""
    bounds, keys = sketch.key_bounds()
    return "('{" + ",".join(map(str, keys)) + "}'::int[])", "'{" + ",".join(map(str, bounds)) + "}'::bigint[]"


def _dt(second: int) -> datetime:
    return datetime.fromtimestamp(second, UTC)
