"""What the run pages read: the list and one run's summary come from the run API's selectors
(`traces.runs.selectors`, over the per-run summary rows), as dicts the templates show; the spans
come for the page as one array each (`run_spans`, below), with the totals of
`GET /api/v1/runs/{run_id}` (issue 22, docs/runs.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.db import connection
from django.utils import timezone

from config.jsoncodec import dumps
from traces.filters import CUSTOM_RANGE, TIME_RANGES, FilterError
from traces.models import CALL_KINDS, Run, Status
from traces.runs.selectors import CursorError, RunFilter, duration_ms, run_get, run_page
from traces.runs.selectors import parse_run_filter as api_parse_run_filter

_CALLS = tuple(str(k) for k in CALL_KINDS)


def parse_run_filter(params: Mapping[str, Any]) -> RunFilter:
    """The run list's filters from a query, blanks ignored: the run API's (`traces.runs.selectors`),
    and the feed's `time_range` (1h, 24h, 7d, 30d: a `since`); `FilterError` names a bad one."""
    values = {k: str(v).strip() for k, v in params.items() if str(v).strip()}
    if values.get("status") == "failed":
        values["status"] = "error"
    time_range = values.pop("time_range", "")
    run_filter = api_parse_run_filter(values, blank_is_absent=True)
    if time_range and time_range != CUSTOM_RANGE:
        delta = TIME_RANGES.get(time_range)
        if delta is None:
            raise FilterError("time_range", f"Use one of {', '.join(TIME_RANGES)} or {CUSTOM_RANGE}.")
        since = timezone.now() - delta
        run_filter = replace(run_filter, since=max(since, run_filter.since) if run_filter.since else since)
        if run_filter.until is not None and run_filter.since is not None and run_filter.since >= run_filter.until:
            raise FilterError("since", "Must be earlier than until.")
    return run_filter


def _row(run: Run) -> dict[str, Any]:
    """A run's summary row as the list and the page's header show it."""
    return {
        "run_id": run.run_id,
        "name": run.name,
        "started_at": run.started_at,
        "duration_ms": duration_ms(run.started_at, run.ended_at),
        "status": "error" if run.errors else "success",
        "spans": run.spans,
        "errors": run.errors,
        "llm_calls": run.llm_calls,
        "cost": run.cost,
        "unpriced_calls": run.unpriced_calls,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
    }


def run_list(
    *, team_id: int, run_filter: RunFilter, limit: int, cursor: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """Runs newest first (by their first span), and the cursor of the next page (None at the end)."""
    try:
        runs, next_cursor = run_page(team_id=team_id, run_filter=run_filter, limit=limit, cursor=cursor)
    except CursorError:
        raise FilterError("cursor", "Not a cursor this page gave out: start from the newest runs.")
    return [_row(run) for run in runs], next_cursor


def run_summary(*, team_id: int, run_id: str) -> dict[str, Any] | None:
    """One run's summary row, None when this team has no span of it."""
    run = run_get(team_id=team_id, run_id=run_id)
    return _row(run) if run is not None else None


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
