"""The per-run summary rows (`traces.models.Run`), kept in the ingest transaction.

`add_spans` folds newly stored spans into their runs' rows with one upsert (`INSERT ... ON CONFLICT
DO UPDATE`): Postgres takes each row's lock, so two transactions adding spans of one run add up
one after the other, and every column is a sum, a min/max or an order-free choice, so spans may
arrive in any order and in any number of requests. Rows are written in (team, run_id) order, so two
transactions touching the same runs never deadlock.

`rebuild` recomputes rows from the spans themselves (retention's partial deletes; tests and
benches that store traces without the ingest path).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection
from django.utils import timezone

from ..models import CALL_KINDS, Run, Status, Trace

_CALLS = tuple(sorted(str(k) for k in CALL_KINDS))


@dataclass(slots=True)
class _Summary:
    team_id: int
    run_id: str
    started_at: datetime
    ended_at: datetime
    spans: int = 0
    errors: int = 0
    llm_calls: int = 0
    unpriced_calls: int = 0
    cost: Decimal = Decimal(0)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    name: str = ""
    root_id: str = ""
    root_at: datetime | None = None
    user_id: str = ""
    session_id: str = ""
    root_user_id: str = ""
    root_session_id: str = ""


def summarize(rows: Iterable[Any]) -> list[_Summary]:
    """Spans (Trace rows, or anything with their attributes) → one summary per (team, run), sorted."""
    runs: dict[tuple[int, str], _Summary] = {}
    for t in rows:
        run_id = t.run_id or t.trace_id
        start = t.timestamp
        end = start + timedelta(milliseconds=t.latency_ms) if t.latency_ms else start
        s = runs.get((t.team_id, run_id))
        if s is None:
            s = runs[(t.team_id, run_id)] = _Summary(t.team_id, run_id, start, end)
        else:
            s.started_at = min(s.started_at, start)
            s.ended_at = max(s.ended_at, end)
        s.spans += 1
        if t.status != Status.SUCCESS:
            s.errors += 1
        if t.kind in CALL_KINDS:
            s.llm_calls += 1
            if t.unpriced or t.cost is None:
                s.unpriced_calls += 1
            else:
                s.cost += t.cost
            s.prompt_tokens += t.prompt_tokens
            s.completion_tokens += t.completion_tokens
        if not t.parent_id and (s.root_at is None or (start, t.trace_id) < (s.root_at, s.root_id)):
            s.name, s.root_id, s.root_at = t.name, t.trace_id, start
            s.root_user_id, s.root_session_id = t.user_id, t.session_id
        s.user_id = s.user_id or t.user_id
        s.session_id = s.session_id or t.session_id
    out = sorted(runs.values(), key=lambda s: (s.team_id, s.run_id))
    for s in out:
        s.user_id = s.root_user_id or s.user_id
        s.session_id = s.root_session_id or s.session_id
    return out


_COLUMNS = (
    ("team_id", "bigint"),
    ("run_id", "text"),
    ("name", "text"),
    ("root_id", "text"),
    ("root_at", "timestamptz"),
    ("started_at", "timestamptz"),
    ("ended_at", "timestamptz"),
    ("spans", "integer"),
    ("errors", "integer"),
    ("llm_calls", "integer"),
    ("unpriced_calls", "integer"),
    ("cost", "numeric"),
    ("prompt_tokens", "bigint"),
    ("completion_tokens", "bigint"),
    ("user_id", "text"),
    ("session_id", "text"),
    ("updated_at", "timestamptz"),
)
_TABLE = Run._meta.db_table
# EXCLUDED's root wins when it is earlier than the row's (or the row has none): the earliest root
# names the run whatever the order its spans arrived in.
_ROOT_WINS = "(EXCLUDED.root_at IS NOT NULL AND (r.root_at IS NULL OR (EXCLUDED.root_at, EXCLUDED.root_id) < (r.root_at, r.root_id)))"  # noqa: E501
_UPSERT = (
    f"INSERT INTO {_TABLE} AS r ({', '.join(c for c, _ in _COLUMNS)}) "
    f"SELECT * FROM unnest({', '.join(f'%s::{t}[]' for _, t in _COLUMNS)}) "
    "ON CONFLICT (team_id, run_id) DO UPDATE SET "
    + ", ".join(
        f"{c} = r.{c} + EXCLUDED.{c}"
        for c in ("spans", "errors", "llm_calls", "unpriced_calls", "cost", "prompt_tokens", "completion_tokens")
    )
    + ", started_at = LEAST(r.started_at, EXCLUDED.started_at)"
    ", ended_at = GREATEST(r.ended_at, EXCLUDED.ended_at)"
    + "".join(
        f", {c} = CASE WHEN {_ROOT_WINS} THEN EXCLUDED.{c} ELSE r.{c} END" for c in ("name", "root_id", "root_at")
    )
    + "".join(
        f", {c} = CASE WHEN {_ROOT_WINS} AND EXCLUDED.{c} <> '' THEN EXCLUDED.{c}"
        f" WHEN r.{c} = '' THEN EXCLUDED.{c} ELSE r.{c} END"
        for c in ("user_id", "session_id")
    )
    + ", updated_at = EXCLUDED.updated_at"
)


def add_spans(rows: Sequence[Any]) -> int:
    """Fold newly stored spans into their runs' summaries (in the caller's transaction); how many runs."""
    summaries = summarize(rows)
    if not summaries:
        return 0
    now = timezone.now()
    columns: list[list[Any]] = [[] for _ in _COLUMNS]
    for s in summaries:
        values = (
            s.team_id, s.run_id, s.name, s.root_id, s.root_at, s.started_at, s.ended_at, s.spans, s.errors,
            s.llm_calls, s.unpriced_calls, s.cost, s.prompt_tokens, s.completion_tokens, s.user_id, s.session_id, now,
        )  # fmt: skip
        for column, value in zip(columns, values, strict=True):
            column.append(value)
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT, columns)
    return len(summaries)


# The same summaries computed from the spans themselves, in one statement (traces/migrations/0011
# backfills with a copy of it): {where} picks the spans.
_CALL = f"kind IN ({', '.join(repr(k) for k in _CALLS)})"
REBUILD_SQL = (
    f"INSERT INTO {_TABLE} ({', '.join(c for c, _ in _COLUMNS)}) "
    "SELECT team_id, run_id,"
    " coalesce((array_agg(name ORDER BY timestamp, trace_id) FILTER (WHERE parent_id = ''))[1], ''),"
    " coalesce((array_agg(trace_id ORDER BY timestamp, trace_id) FILTER (WHERE parent_id = ''))[1], ''),"
    " min(timestamp) FILTER (WHERE parent_id = ''),"
    " min(timestamp), max(timestamp + coalesce(latency_ms, 0) * interval '1 millisecond'),"
    " count(*), count(*) FILTER (WHERE status <> 'success'),"
    f" count(*) FILTER (WHERE {_CALL}), count(*) FILTER (WHERE {_CALL} AND (unpriced OR cost IS NULL)),"
    f" coalesce(sum(cost) FILTER (WHERE {_CALL} AND NOT unpriced), 0),"
    f" coalesce(sum(prompt_tokens) FILTER (WHERE {_CALL}), 0),"
    f" coalesce(sum(completion_tokens) FILTER (WHERE {_CALL}), 0),"
    " coalesce((array_agg(user_id ORDER BY parent_id <> '', timestamp) FILTER (WHERE user_id <> ''))[1], ''),"
    " coalesce((array_agg(session_id ORDER BY parent_id <> '', timestamp) FILTER (WHERE session_id <> ''))[1], ''),"
    " now()"
    f" FROM {Trace._meta.db_table} WHERE {{where}} GROUP BY team_id, run_id"
)


def rebuild(team_id: int, run_ids: Sequence[str]) -> None:
    """Recompute these runs' summaries from their spans (a run with none left loses its row)."""
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        return
    Run.objects.filter(team_id=team_id, run_id__in=ids)._raw_delete(connection.alias)
    with connection.cursor() as cursor:
        cursor.execute(REBUILD_SQL.format(where="team_id = %s AND run_id = ANY(%s)"), [team_id, ids])


def after_retention(team_id: int, cutoff: datetime) -> None:
    """The team's spans before ``cutoff`` are gone: runs wholly before it go; runs across it are rebuilt."""
    # (started_at <= ended_at: the started_at bound walks `run_list` rather than every run of the team)
    Run.objects.filter(team_id=team_id, started_at__lt=cutoff, ended_at__lt=cutoff)._raw_delete(connection.alias)
    across = Run.objects.filter(team_id=team_id, started_at__lt=cutoff).values_list("run_id", flat=True)
    rebuild(team_id, list(across))


def correct_costs(team_id: int, deltas: dict[str, tuple[Decimal, int]]) -> None:
    """Add re-priced calls' changes to their runs' rows: per run_id, (Δ cost of the priced calls, Δ
    unpriced calls). An UPDATE adding to each row (under its lock, as ingest's upsert adds), in
    run_id order like `add_spans`, so the two never deadlock."""
    rows: list[list[Any]] = [
        [d_cost, d_unpriced, team_id, run_id]
        for run_id, (d_cost, d_unpriced) in sorted(deltas.items())
        if d_cost or d_unpriced
    ]
    if not rows:
        return
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {Run._meta.db_table} SET cost = cost + %s, unpriced_calls = unpriced_calls + %s,"
            " updated_at = now() WHERE team_id = %s AND run_id = %s",
            rows,
        )
