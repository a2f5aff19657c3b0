"""Where the run pages read runs: the list (newest first, cursor pages), one run's summary, and one
run's spans and totals: the list rows and the totals in the shapes of `GET /api/v1/runs` and
`GET /api/v1/runs/{run_id}` (issue 22, docs/runs.md), the spans in columns (below).

The pages need nothing but these three reads, so the run API's own selectors can take their place
here without touching a view or a template: a list row is a dict with ``run_id``, ``name``,
``started_at`` (a datetime), ``duration_ms``, ``status`` ("success" or "error": any failed span),
``spans``, ``llm_calls``, ``cost``, ``unpriced_calls``, ``prompt_tokens``, ``completion_tokens``;
a run is ``{"run_id", "columns", "spans": [[...], ...], "totals": {...}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection

from config import cursors
from config.jsoncodec import dumps
from traces.filters import FilterError, parse_trace_filter
from traces.models import CALL_KINDS, Status

RUN_STATUSES = ("success", "error")
_CALLS = tuple(str(k) for k in CALL_KINDS)


@dataclass(frozen=True)
class RunFilter:
    since: datetime | None = None
    until: datetime | None = None
    status: str = ""
    name: str = ""
    user_id: str = ""
    session_id: str = ""


def parse_run_filter(params: Mapping[str, Any]) -> RunFilter:
    """The run list's filters from a query (blanks ignored); `FilterError` names a bad one."""
    status = str(params.get("status") or "").strip()
    if status == "failed":
        status = "error"
    if status and status not in RUN_STATUSES:
        raise FilterError("status", "Use success or error (a run failed when any of its spans did).")
    times = {k: params[k] for k in ("since", "until", "time_range", "user_id", "session_id") if params.get(k)}
    trace_filter = parse_trace_filter(times, blank_is_absent=True)
    name = str(params.get("name") or "").strip()
    if len(name) > 200 or "\x00" in name:
        raise FilterError("name", "Must be at most 200 characters, no NUL.")
    return RunFilter(
        since=trace_filter.since,
        until=trace_filter.until,
        status=status,
        name=name,
        user_id=trace_filter.user_id,
        session_id=trace_filter.session_id,
    )


def _run_cursor(started_at: datetime, run_id: str) -> str:
    return cursors.encode_cursor(f"{started_at.isoformat()}|{run_id}")


def _decode_run_cursor(value: str) -> tuple[datetime, str]:
    try:
        stamp, sep, run_id = cursors.decode_cursor(value).partition("|")
        when = datetime.fromisoformat(stamp)
        if not sep or when.tzinfo is None:
            raise ValueError("not a run cursor")
    except ValueError:
        raise FilterError("cursor", "Not a cursor this page gave out: start from the newest runs.")
    return when, run_id


_SUMMARY = f"""
    SELECT run_id,
           (array_agg(name ORDER BY (parent_id = '') DESC, timestamp, id))[1] AS name,
           MIN(timestamp) AS started_at,
           MAX(timestamp + COALESCE(latency_ms, 0) * interval '1 millisecond') AS ended_at,
           COUNT(*) AS spans,
           COUNT(*) FILTER (WHERE kind IN {_CALLS}) AS llm_calls,
           SUM(cost) FILTER (WHERE kind IN {_CALLS} AND NOT unpriced) AS cost,
           COUNT(*) FILTER (WHERE kind IN {_CALLS} AND unpriced) AS unpriced_calls,
           COALESCE(SUM(prompt_tokens) FILTER (WHERE kind IN {_CALLS}), 0) AS prompt_tokens,
           COALESCE(SUM(completion_tokens) FILTER (WHERE kind IN {_CALLS}), 0) AS completion_tokens,
           COUNT(*) FILTER (WHERE status <> '{Status.SUCCESS.value}') AS errors
    FROM traces_trace
    WHERE team_id = %s AND run_id <> '' {{where}}
    GROUP BY run_id {{having}}
"""
_COLUMNS = (
    "run_id",
    "name",
    "started_at",
    "ended_at",
    "spans",
    "llm_calls",
    "cost",
    "unpriced_calls",
    "prompt_tokens",
    "completion_tokens",
    "errors",
)


def _row(values: tuple[Any, ...]) -> dict[str, Any]:
    row = dict(zip(_COLUMNS, values, strict=True))
    ended = row.pop("ended_at")
    row["duration_ms"] = max(0, round((ended - row["started_at"]).total_seconds() * 1000))
    row["status"] = "error" if row["errors"] else "success"
    row["cost"] = row["cost"] if row["cost"] is not None else Decimal(0)
    return row


def run_list(
    *, team_id: int, run_filter: RunFilter, limit: int, cursor: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """Runs newest first (by their first span), and the cursor of the next page (None at the end)."""
    where, having, outer = "", [], []
    params: list[Any] = [team_id]
    if run_filter.session_id:
        having.append("bool_or(session_id = %s)")
    if run_filter.user_id:
        having.append("bool_or(user_id = %s)")
    args_having = [v for v in (run_filter.session_id, run_filter.user_id) if v]
    if run_filter.since is not None:
        outer.append("started_at >= %s")
    if run_filter.until is not None:
        outer.append("started_at < %s")
    args_outer: list[Any] = [v for v in (run_filter.since, run_filter.until) if v is not None]
    if run_filter.status == "error":
        outer.append("errors > 0")
    elif run_filter.status == "success":
        outer.append("errors = 0")
    if run_filter.name:
        if run_filter.name.endswith("*"):
            outer.append("starts_with(name, %s)")
            args_outer.append(run_filter.name[:-1])
        else:
            outer.append("name = %s")
            args_outer.append(run_filter.name)
    if cursor:
        when, run_id = _decode_run_cursor(cursor)
        outer.append("(started_at, run_id) < (%s, %s)")
        args_outer += [when, run_id]
    if run_filter.since is not None:
        # Only runs with a span since then can have started since then; the index bounds the scan.
        where = "AND run_id IN (SELECT run_id FROM traces_trace WHERE team_id = %s AND timestamp >= %s)"
        params += [team_id, run_filter.since]
    inner = _SUMMARY.format(where=where, having=("HAVING " + " AND ".join(having)) if having else "")
    sql = f"SELECT * FROM ({inner}) runs"
    if outer:
        sql += " WHERE " + " AND ".join(outer)
    sql += " ORDER BY started_at DESC, run_id DESC LIMIT %s"
    with connection.cursor() as db:
        db.execute(sql, [*params, *args_having, *args_outer, limit + 1])
        rows = [_row(values) for values in db.fetchall()]
    if len(rows) > limit:
        last = rows[limit - 1]
        return rows[:limit], _run_cursor(last["started_at"], last["run_id"])
    return rows, None


def run_summary(*, team_id: int, run_id: str) -> dict[str, Any] | None:
    """One run's list row, None when this team has no span of it."""
    sql = _SUMMARY.format(where="AND run_id = %s", having="")
    with connection.cursor() as db:
        db.execute(sql, [team_id, run_id])
        found = db.fetchone()
    return _row(found) if found else None


# The spans as the run page reads them: one array per span in SPAN_COLUMNS order (a third of the
# bytes of an object per span), the start as epoch milliseconds, the whole array built by Postgres
# and handed over as one string with the run's totals: no Python object per span.
SPAN_COLUMNS = (
    "id",
    "parent_id",
    "kind",
    "name",
    "model",
    "status",
    "start_ms",
    "latency_ms",
    "cost",
    "unpriced",
    "prompt_tokens",
    "completion_tokens",
)
_CALL = f"kind IN {_CALLS}"
_SPANS = f"""
    SELECT count(*), count(*) FILTER (WHERE {_CALL}),
           coalesce(sum(cost) FILTER (WHERE {_CALL} AND NOT unpriced), 0)::float8,
           count(*) FILTER (WHERE {_CALL} AND (unpriced OR cost IS NULL)),
           coalesce(sum(prompt_tokens) FILTER (WHERE {_CALL}), 0),
           coalesce(sum(completion_tokens) FILTER (WHERE {_CALL}), 0),
           (extract(epoch FROM max(timestamp + coalesce(latency_ms, 0) * interval '1 millisecond')
                               - min(timestamp)) * 1000)::float8,
           count(*) FILTER (WHERE status <> '{Status.SUCCESS.value}'),
           coalesce(json_agg(json_build_array(
               trace_id, nullif(parent_id, ''), kind, name, model, status,
               (extract(epoch FROM timestamp) * 1000)::float8, latency_ms, cost::float8, unpriced,
               prompt_tokens, completion_tokens) ORDER BY timestamp, trace_id), '[]')::text
    FROM traces_trace
    WHERE team_id = %s AND run_id = %s
"""
_TOTALS = (
    "spans",
    "llm_calls",
    "cost",
    "unpriced_calls",
    "prompt_tokens",
    "completion_tokens",
    "duration_ms",
    "errors",
)


def run_spans(*, team_id: int, run_id: str) -> bytes | None:
    """The JSON document of every span of the run in time order and the run's totals (as the run API
    gives them): ``{"run_id", "columns", "totals", "spans": [[...], ...]}``; None when this team has
    no span of it."""
    if not run_id:
        return None
    with connection.cursor() as db:
        db.execute(_SPANS, [team_id, run_id])
        *figures, spans = db.fetchone()
    if not figures[0]:
        return None
    totals = dict(zip(_TOTALS, figures, strict=True))
    totals["cost"] = round(totals["cost"], 10)
    totals["duration_ms"] = round(totals["duration_ms"])
    head = dumps({"run_id": run_id, "columns": SPAN_COLUMNS, "totals": totals})
    return head[:-1] + b',"spans":' + spans.encode() + b"}"
