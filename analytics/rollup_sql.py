"""Rollup rows added up in Postgres: ingest's deltas from the traces it just stored, and (for
bench/analytics.py's bulk load) folded rows from traces or from other rollup rows.

Ingest's rollup write on Postgres is one ``INSERT ... SELECT`` over the new traces' ids, in the
storing transaction: the grouping, the sums and the histograms (``unnest``-free: one key per trace)
run where the rows already are, which costs ingest a fraction of what aggregating 1,000 traces in
Python did (docs/analytics.md, "Write cost"). It computes exactly what `rollups.build_deltas` (the
SQLite path) computes: the same slices and definitions, and the same histogram key, ``ceil(ln(v) /
ln(1.02))`` in double precision as `analytics.sketch` (both call the C library's ``log``), with
``tests/analytics/test_rollups.py`` comparing the two on one batch.
"""

from __future__ import annotations

from typing import Any

from .models import COUNTERS

GROUP = ("team_id", "bucket", "kind", "model", "provider", "status", "environment", "service_name", "key")
# COUNTERS from trace columns (trace_status: the trace's own status; `status` is the group's)
FROM_TRACES = {
    "count": "count(*)",
    "success": "count(*) FILTER (WHERE trace_status = 'success')",
    "errors": "count(*) FILTER (WHERE trace_status = 'error')",
    "rate_limited": "count(*) FILTER (WHERE trace_status = 'rate_limited')",
    "prompt_tokens": "sum(prompt_tokens)",
    "completion_tokens": "sum(completion_tokens)",
    "total_tokens": "sum(total_tokens)",
    "cost_e10": "coalesce(sum((cost * 10000000000)::bigint), 0)",
    "unpriced": "count(*) FILTER (WHERE unpriced)",
    "estimated_usage": "count(*) FILTER (WHERE usage_estimated)",
    "latency_count": "count(latency_ms)",
    "latency_sum": "coalesce(sum(latency_ms), 0)",
    "ttft_count": "count(time_to_first_token_ms)",
    "ttft_sum": "coalesce(sum(time_to_first_token_ms), 0)",
}
_KEY = "CASE WHEN {v} IS NULL THEN NULL WHEN {v} <= 0 THEN -1 ELSE ceil(ln({v}::float8) / ln(1.02::float8))::int END"
TRACE_COLUMNS = (
    "t.status AS trace_status, prompt_tokens, completion_tokens, total_tokens, cost, unpriced, usage_estimated, "
    f"latency_ms, time_to_first_token_ms, {_KEY.format(v='latency_ms')} AS lk, "
    f"{_KEY.format(v='time_to_first_token_ms')} AS tk"
)
DIMS_SLICE = "0 AS kind, model, provider, t.status, environment, service_name, ''::varchar AS key"
TAG_SLICE = "2 AS kind, '' AS model, '' AS provider, '' AS status, '' AS environment, '' AS service_name, tag AS key"
# A trace counts once under each distinct string in its tags (as `set(tags)` in build_deltas).
TAG_JOIN = (
    "CROSS JOIN LATERAL (SELECT DISTINCT e #>> '{}' AS tag FROM jsonb_array_elements("
    "CASE jsonb_typeof(t.tags) WHEN 'array' THEN t.tags ELSE '[]'::jsonb END) AS e "
    "WHERE jsonb_typeof(e) = 'string') AS tags"
)


def insert_grouped(
    cursor: Any, table: str, source: str, params: list[Any], *, from_traces: bool, uuid_ids: bool
) -> None:
    """INSERT into ``table`` the rows of ``source`` (a SELECT with the GROUP columns) added up per
    GROUP: from traces (``source`` has TRACE_COLUMNS) or from rollup rows (COUNTERS and arrays)."""
    group = ", ".join(GROUP)
    if from_traces:
        counters = ", ".join(FROM_TRACES[c] for c in COUNTERS)
        hists = [f"SELECT {group}, {k} AS hk, count(*)::int AS n FROM k WHERE {k} IS NOT NULL GROUP BY {group}, {k}"
                 for k in ("lk", "tk")]  # fmt: skip
    else:
        counters = ", ".join(f'sum("{c}")' for c in COUNTERS)
        hists = [f"SELECT {group}, u.hk, sum(u.n)::int AS n FROM k, unnest(k.{h}_keys, k.{h}_counts) AS u(hk, n) "
                 f"GROUP BY {group}, u.hk" for h in ("latency", "ttft")]  # fmt: skip
    merged = [
        f"(SELECT {group}, array_agg(hk ORDER BY hk) AS ks, array_agg(n ORDER BY hk) AS ns FROM ({h}) x "
        f"GROUP BY {group})"
        for h in hists
    ]
    columns = ", ".join(f'"{c}"' for c in (*GROUP, *COUNTERS))
    cursor.execute(
        f"INSERT INTO {table} ({'id, ' if uuid_ids else ''}{columns}, latency_keys, latency_counts, ttft_keys, "
        f"ttft_counts) WITH k AS MATERIALIZED ({source}) SELECT {'gen_random_uuid(), ' if uuid_ids else ''}c.*, "
        "coalesce(l.ks, '{}'), coalesce(l.ns, '{}'), coalesce(t.ks, '{}'), coalesce(t.ns, '{}') "
        f"FROM (SELECT {group}, {counters} FROM k GROUP BY {group}) c "
        f"LEFT JOIN {merged[0]} l USING ({group}) LEFT JOIN {merged[1]} t USING ({group})",
        params,
    )


def traces_source(size: int, slice_: str, join: str, where: str) -> str:
    """The SELECT of traces (``t``) as GROUP + TRACE_COLUMNS, bucketed by ``size`` seconds."""
    return (
        f"SELECT team_id, floor(extract(epoch FROM timestamp))::bigint / {size} * {size} AS bucket, {slice_}, "
        f"{TRACE_COLUMNS} FROM traces_trace t {join} WHERE provider <> 'span' AND {where}"
    )


def record_deltas(cursor: Any, ids: list[Any]) -> None:
    """Ingest's deltas (DIMS and TAG rows per team and minute) of the stored traces ``ids``."""
    where = "t.id = ANY(%s::uuid[])"
    source = f"{traces_source(60, DIMS_SLICE, '', where)} UNION ALL {traces_source(60, TAG_SLICE, TAG_JOIN, where)}"
    insert_grouped(cursor, "analytics_rollupdelta", source, [ids, ids], from_traces=True, uuid_ids=True)
