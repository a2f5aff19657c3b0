"""Reading the traces the rollups do not count yet: those of the `PendingBatch` rows in the read's
snapshot, counted straight from the traces table.

Ingest names its traces in a batch row instead of aggregating them (`analytics.rollups.record`);
the fold adds them into the rollups and deletes the row in one transaction. So in any snapshot a
trace is either in a batch row or in the folded rollups, never both, and a read that adds the
rollups and these traces (in the same REPEATABLE READ transaction, `analytics.selectors`) is exact.

A `PendingPart` counts like the delta rows it replaces did: each trace in its UTC minute (the
bucket the fold will put it in), over [since, until) less the minutes raw traces answer, under the
slice's filters (`Slice.trace_where`) and group (`Slice.trace_group`). Postgres selects the traces
with one statement: the batches overlapping the range, their ids unnested, each trace fetched by
its primary key (a fenced LATERAL subquery: Postgres would otherwise hash-join the whole team's
traces), the filters applied in SQL. Python adds the traces up with `Stats.add_trace`, as the raw
reads do (bench figures in docs/analytics.md: tens of µs per pending trace per answer, and a few
seconds of ingest are pending at a time).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from django.db import connection

from traces.models import Trace

from .models import PendingBatch
from .parts import Acc
from .plan import Ranges

# A pending row: the trace's epoch second, its group value, then `Stats.add_trace`'s arguments.
_STATS_FIELDS = (
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

    def rows(self, team_id: int) -> list[tuple[Any, ...]]:
        """The pending traces this part counts, as (minute, group value, *stats arguments)."""
        if self.since >= self.until:
            return []
        where = dict(self.where)
        only = where.pop(f"{self.group}__in", None) if self.group else None
        if connection.vendor == "postgresql":
            found = _select(team_id, where, self.group, self.since, self.until)
        else:
            found = _select_orm(team_id, where, self.group, self.since, self.until)
        shown = None if only is None else set(only)
        out: list[tuple[Any, ...]] = []
        for second, value, *args in found:
            minute = second // 60 * 60
            if not self.since <= minute < self.until or _within(minute, self.skip):
                continue
            if self.group in _LIST_COLUMNS:
                if isinstance(value, str | bytes):  # (Django has psycopg hand jsonb over as text)
                    value = orjson.loads(value)
                items = dict.fromkeys(v for v in value or () if isinstance(v, str))
                out.extend((minute, item, *args) for item in items if shown is None or item in shown)
            elif shown is None or value in shown:
                out.append((minute, value if self.group else "", *args))
        return out


def add_rows(acc: Acc, rows: Sequence[tuple[Any, ...]], starts: list[int] | None) -> None:
    """Add `PendingPart.rows` into ``acc`` per interval of ``starts`` (None: all in one) and group."""
    for minute, key, *args in rows:
        index = 0 if starts is None else bisect.bisect_right(starts, minute) - 1
        acc[(index, key)].add_trace(*args)


def _within(second: int, ranges: Ranges) -> bool:
    return any(start <= second < end for start, end in ranges)


def _select(team_id: int, where: dict[str, Any], group: str | None, since: int, until: int) -> list[tuple[Any, ...]]:
    fields: dict[str, str] = {f.name: str(f.column) for f in Trace._meta.concrete_fields} | {"team": "team_id"}
    q = connection.ops.quote_name
    if any(lookup.partition("__")[0] not in fields for lookup in where):
        raise ValueError(f"analytics.pending: not a trace column in {sorted(where)}")
    conditions: list[str] = []
    params: list[Any] = []
    for lookup, value in where.items():
        name, _, op = lookup.partition("__")
        column = f"t.{q(fields[name])}"
        if op in ("", "exact"):
            conditions.append(f"{column} = %s")
            params.append(value)
        elif op == "in":
            conditions.append(f"{column} = ANY(%s)")
            params.append(list(value))
        elif op == "startswith":  # (not LIKE: no escaping, and exact for any prefix)
            conditions.append(f"left({column}, %s) = %s")
            params.extend((len(value), value))
        elif op == "has_item":
            conditions.append(f"{column} @> jsonb_build_array(%s::text)")
            params.append(value)
        else:
            raise ValueError(f"analytics.pending: no SQL for the lookup {lookup!r}")
    needed = dict.fromkeys(["timestamp", *([group] if group else []), *_STATS_FIELDS])
    needed.update(dict.fromkeys(lookup.partition("__")[0] for lookup in where))
    fenced = ", ".join(f"x.{q(fields[name])}" for name in needed)
    outer = [f"floor(extract(epoch FROM t.{q('timestamp')}))::bigint", f"t.{q(fields[group])}" if group else "NULL"]
    outer += [f"t.{q(fields[name])}" for name in _STATS_FIELDS]
    # The batch's seconds bound its traces' (a minute's margin: a trace counts in its minute).
    sql = (
        f"SELECT {', '.join(outer)} FROM {q(PendingBatch._meta.db_table)} b"
        " CROSS JOIN LATERAL unnest(b.trace_ids) AS u(id)"
        f" JOIN LATERAL (SELECT {fenced} FROM {q(Trace._meta.db_table)} x WHERE x.id = u.id OFFSET 0) t ON true"
        " WHERE b.team_id = %s AND b.last_second >= %s AND b.first_second < %s"
        f" AND t.{q('timestamp')} >= %s AND t.{q('timestamp')} < %s" + "".join(f" AND {c}" for c in conditions)
    )
    head: list[Any] = [team_id, since - 60, until, _dt(since - 60), _dt(until)]
    with connection.cursor() as cursor:
        cursor.execute(sql, head + params)
        return cursor.fetchall()


def _select_orm(
    team_id: int, where: dict[str, Any], group: str | None, since: int, until: int
) -> list[tuple[Any, ...]]:
    """The same on other databases (SQLite, the embedded default): the ids from the batch rows,
    the traces by the ORM."""
    batches = PendingBatch.objects.filter(team_id=team_id, last_second__gte=since - 60, first_second__lt=until)
    ids = [trace_id for trace_ids in batches.values_list("trace_ids", flat=True) for trace_id in trace_ids]
    out: list[tuple[Any, ...]] = []
    for i in range(0, len(ids), 500):  # (SQLite: at most 999 parameters a statement)
        qs = Trace._base_manager.filter(
            pk__in=ids[i : i + 500], team_id=team_id, timestamp__gte=_dt(since - 60), timestamp__lt=_dt(until), **where
        )
        for row in qs.values_list("timestamp", group or "id", *_STATS_FIELDS):
            out.append((int(row[0].timestamp()), row[1] if group else None, *row[2:]))
    return out


def _dt(second: int) -> datetime:
    return datetime.fromtimestamp(second, UTC)
