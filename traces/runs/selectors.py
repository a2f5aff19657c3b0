"""Reads of runs, shared by the run API and the run pages: the list (summary rows, filtered,
cursor-paginated newest first) and one run's spans with their totals (from the spans themselves).

A run's detail is built as JSON by Postgres (`json_agg` over the `trace_run` index range), handed to
Python as one string: no model instance, no per-row Python work, so 50,000 spans cost what
Postgres takes to read them (bench/runs.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet

from config import cursors

from ..filters import FilterError, _datetime, _lists, _one
from ..models import CALL_KINDS, Run, Trace

RUN_FILTER_PARAMS = ("since", "until", "status", "name", "user_id", "session_id")
RUN_STATUSES = ("success", "error")
# One answer holds every span of a run up to this many (the issue asks for at least 50,000); a larger
# run's answer holds its first RUN_SPANS_MAX spans by time, says `truncated`, and its totals count all.
RUN_SPANS_MAX = 100_000


class CursorError(ValueError):
    pass


@dataclass(frozen=True)
class RunFilter:
    since: datetime | None = None
    until: datetime | None = None
    status: str = ""  # "", "success" (no span failed) or "error" (one did)
    name: str = ""
    user_id: str = ""
    session_id: str = ""

    def apply(self, qs: QuerySet[Run]) -> QuerySet[Run]:
        if self.since is not None:
            qs = qs.filter(started_at__gte=self.since)
        if self.until is not None:
            qs = qs.filter(started_at__lt=self.until)
        if self.status == "error":
            qs = qs.filter(errors__gt=0)
        elif self.status == "success":
            qs = qs.filter(errors=0)
        if self.name:
            qs = qs.filter(name=self.name)
        if self.user_id:
            qs = qs.filter(user_id=self.user_id)
        if self.session_id:
            qs = qs.filter(session_id=self.session_id)
        return qs


def parse_run_filter(params: Mapping[str, Any], *, blank_is_absent: bool = False) -> RunFilter:
    """From query parameters; a bad value raises `FilterError` naming it (the feed's rules)."""
    lists = _lists(params)
    if blank_is_absent:
        lists = {k: [v for v in vs if v != ""] for k, vs in lists.items()}
        lists = {k: vs for k, vs in lists.items() if vs}
    since, until = _datetime(lists, "since"), _datetime(lists, "until")
    if since and until and since >= until:
        raise FilterError("since", "Must be earlier than until.")
    status = _one(lists, "status")
    if status is not None and status not in RUN_STATUSES:
        raise FilterError("status", f"Unknown status '{status[:50]}': use success or error (a span failed).")
    texts = {name: (_one(lists, name) or "").strip() for name in ("name", "user_id", "session_id")}
    return RunFilter(since=since, until=until, status=status or "", **texts)


def encode_cursor(run: Run) -> str:
    return cursors.encode_cursor(f"{run.started_at.isoformat()}|{run.pk}")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        stamp, _, ident = cursors.decode_cursor(cursor).partition("|")
        when = datetime.fromisoformat(stamp)
        if when.tzinfo is None or not ident.isdigit():
            raise ValueError("not ours")
        return when, int(ident)
    except ValueError:
        raise CursorError("Not a cursor this API gave out: pass next_cursor as it came.")


def run_page(
    *, team_id: int, run_filter: RunFilter, limit: int, cursor: str | None = None
) -> tuple[Sequence[Run], str | None]:
    """One page of runs, newest first (by their earliest span), and the next page's cursor (None at the
    end). Keyset on (started_at, id) down the `run_list` index (or a partial one when filtered)."""
    qs = run_filter.apply(Run.objects.filter(team_id=team_id))
    if cursor:
        when, ident = decode_cursor(cursor)
        qs = qs.filter(started_at__lte=when).filter(Q(started_at__lt=when) | Q(pk__lt=ident))
    rows = list(qs.order_by("-started_at", "-id")[: limit + 1])
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1])
    return rows, None


def run_get(*, team_id: int, run_id: str) -> Run | None:
    return Run.objects.filter(team_id=team_id, run_id=run_id).first()


def money(cost: Decimal | float | None, calls: int, unpriced: int) -> float | None:
    """A run's cost: the priced calls' sum; null when it has calls and none is priced (never a silent 0)."""
    if cost is None or (calls and unpriced >= calls):
        return None
    return float(cost)


def duration_ms(started_at: datetime | None, ended_at: datetime | None) -> int | None:
    if started_at is None or ended_at is None:
        return None
    return round((ended_at - started_at).total_seconds() * 1000)


# --- One run's spans ---------------------------------------------------------------------------

_CALLS_SQL = f"kind IN ({', '.join(repr(str(k)) for k in sorted(CALL_KINDS))})"
# ISO 8601 in UTC as the API writes every time (config.jsoncodec.iso): microseconds only when any.
_ISO = (
    "CASE WHEN extract(microseconds FROM {c})::bigint %% 1000000 = 0"
    " THEN to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
    " ELSE to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') END"
)
# Each span as `RunSpanSerializer` (traces.runs.serializers) describes it: the columns of a row that
# json_agg turns into an object (a row's columns cost Postgres less than json_build_object's arguments).
_SPAN_JSON = (
    "trace_id AS id, nullif(parent_id, '') AS parent_id, kind, name, model, provider, status,"
    " CASE WHEN error_type <> '' OR error_message <> ''"
    " THEN json_build_object('type', error_type, 'message', error_message) END AS error,"
    f" {_ISO.format(c='timestamp')} AS timestamp, latency_ms, time_to_first_token_ms, cost::float8 AS cost, unpriced,"
    " prompt_tokens, completion_tokens, total_tokens, usage_estimated, service_name, user_id, session_id"
)
_TOTALS = (
    f"count(*), count(*) FILTER (WHERE {_CALLS_SQL}),"
    f" sum(cost) FILTER (WHERE {_CALLS_SQL} AND NOT unpriced),"
    f" count(*) FILTER (WHERE {_CALLS_SQL} AND (unpriced OR cost IS NULL)),"
    f" coalesce(sum(prompt_tokens) FILTER (WHERE {_CALLS_SQL}), 0),"
    f" coalesce(sum(completion_tokens) FILTER (WHERE {_CALLS_SQL}), 0),"
    " min(timestamp), max(timestamp + coalesce(latency_ms, 0) * interval '1 millisecond'),"
    " count(*) FILTER (WHERE status <> 'success')"
)
_TABLE = Trace._meta.db_table
# What the answer reads of a span: never the bodies (input, output, routing).
_SPAN_COLUMNS = (
    "trace_id", "parent_id", "kind", "name", "model", "provider", "status", "error_type", "error_message",
    "timestamp", "latency_ms", "time_to_first_token_ms", "cost", "unpriced", "prompt_tokens", "completion_tokens",
    "total_tokens", "usage_estimated", "service_name", "user_id", "session_id",
)  # fmt: skip
# The run's spans, oldest first, read once down `trace_run` (a CTE read twice is materialised, in its
# order): the totals over them, and the JSON array built from them in that order.
_RUN_SQL = (
    f"WITH s AS (SELECT {', '.join(_SPAN_COLUMNS)} FROM {_TABLE} WHERE team_id = %s AND run_id = %s"
    " ORDER BY timestamp, trace_id LIMIT %s)"
    f" SELECT {_TOTALS}, (SELECT coalesce(json_agg(j), '[]')::text FROM (SELECT {_SPAN_JSON} FROM s) j) FROM s"
)
_TOTALS_SQL = f"SELECT {_TOTALS} FROM {_TABLE} WHERE team_id = %s AND run_id = %s"


@dataclass(frozen=True)
class RunSpans:
    run_id: str
    spans_json: str  # the JSON array of every span, oldest first, as Postgres built it
    totals: dict[str, Any]
    truncated: bool


def run_spans(*, team_id: int, run_id: str, limit: int = RUN_SPANS_MAX) -> RunSpans | None:
    """Every span of the run (up to ``limit``, oldest first) and its totals; None when the team has no
    span of that run (unknown, or another team's)."""
    with connection.cursor() as cursor:
        cursor.execute(_RUN_SQL, [team_id, run_id, limit + 1])
        *figures, spans_json = cursor.fetchone()
        if not figures[0]:
            return None
        truncated = figures[0] > limit
        if truncated:  # (rare: a second read for the first `limit` spans, and the totals of all)
            cursor.execute(_RUN_SQL, [team_id, run_id, limit])
            spans_json = cursor.fetchone()[-1]
            cursor.execute(_TOTALS_SQL, [team_id, run_id])
            figures = list(cursor.fetchone())
    return RunSpans(run_id, str(spans_json), _totals(*figures), truncated)


def _totals(
    spans: int, calls: int, cost: Decimal | None, unpriced: int, prompt: int, completion: int,
    started: datetime | None, ended: datetime | None, errors: int,
) -> dict[str, Any]:  # fmt: skip
    return {
        "spans": spans,
        "llm_calls": calls,
        "cost": money(cost if cost is not None else Decimal(0), calls, unpriced),
        "unpriced_calls": unpriced,
        "prompt_tokens": int(prompt),
        "completion_tokens": int(completion),
        "duration_ms": duration_ms(started, ended),
        "errors": errors,
    }
