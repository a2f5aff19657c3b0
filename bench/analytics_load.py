"""Loading bench/analytics.py's synthetic traces and building their rollups (kept apart from the
measuring so both files stay readable).

Traces are generated in Python and written with COPY, an hour at a time, with the trace table's
indexes dropped meanwhile. The rollups of all but the last hour are then built **in SQL**, a bulk
equivalent of the fold: the same slices (`analytics.rollups.slices_of`) and the same definitions
as `analytics.stats.Stats` (histogram key ``ceil(ln(v) / ln(1.02))``, the same double-precision
arithmetic as `analytics.sketch`; 0 in key -1), DIMS and TAG rows per hour (and per minute for the
last TRACERELAY_RETENTION_MINUTE_HOURS) from the traces, the other kinds and the days from those by
adding their rows up (``unnest ... GROUP BY key``). The last hour goes through the fold's own code:
`rollups.build_deltas` per batch of 1,000, then `rollups.add_deltas`. `check` compares the 30-day totals
with a count of the traces.
"""

from __future__ import annotations

import math
import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from _benchdb import drop_indexes, rebuild_indexes

# model, provider, share, $/Mtok in, $/Mtok out (None: unpriced), latency lognormal mu
MODELS = [
    ("gpt-4o-mini", "openai", 35, 0.15, 0.6, 6.6),
    ("gpt-4o", "openai", 15, 2.5, 10.0, 7.1),
    ("claude-sonnet-4", "anthropic", 15, 3.0, 15.0, 7.3),
    ("claude-3-5-haiku", "anthropic", 10, 0.8, 4.0, 6.7),
    ("gemini-2.5-flash", "google", 10, 0.3, 2.5, 6.5),
    ("gpt-4.1", "openai", 5, 2.0, 8.0, 7.2),
    ("o3-mini", "openai", 4, 1.1, 4.4, 8.0),
    ("llama-3.1-70b", "groq", 3, None, None, 5.8),
    ("mistral-large", "mistral", 2, 2.0, 6.0, 7.0),
    ("text-embedding-3-small", "openai", 1, 0.02, 0.0, 4.5),
]
TAGS = [f"tag-{i:02d}" for i in range(25)]
TAG_WEIGHTS = [1 / (i + 1) for i in range(25)]
SERVICES = ["api", "chat", "search", "worker", "eval", "billing"]
ENVIRONMENTS = [("production", 85), ("development", 12), ("ci", 3)]

# The usage parts (traces.usage.DETAIL_FIELDS, spelled out: the project is on sys.path only once
# the database is set up), summed like the token counts.
USAGE_PARTS = ("cached_tokens", "cache_write_tokens", "reasoning_tokens", "input_audio_tokens", "input_image_tokens")
USAGE_PARTS += ("output_audio_tokens", "output_image_tokens")


class Row:
    """What the rollups read of a trace (the attributes Stats.add_trace needs)."""

    __slots__ = (
        "team_id",
        "timestamp",
        "model",
        "provider",
        "status",
        "environment",
        "service_name",
        "tags",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "cost",
        "unpriced",
        "usage_estimated",
        "latency_ms",
        "time_to_first_token_ms",
        "user_id",
        *USAGE_PARTS,  # none reported here: 0, as the COPY leaves them (the columns' default)
    )


def generate(team_id: int, hour_start: datetime, n: int, rng: random.Random) -> list[Row]:
    weights = [m[2] for m in MODELS]
    env_names, env_weights = zip(*ENVIRONMENTS, strict=True)
    models = rng.choices(MODELS, weights=weights, k=n)
    statuses = rng.choices(["success", "error", "rate_limited"], weights=[94, 4, 2], k=n)
    envs = rng.choices(env_names, weights=env_weights, k=n)
    out = []
    base = hour_start.timestamp()
    for i in range(n):
        model, provider, _share, price_in, price_out, mu = models[i]
        r = Row()
        r.team_id = team_id
        r.timestamp = datetime.fromtimestamp(base + rng.random() * 3600, UTC)
        r.model, r.provider, r.status = model, provider, statuses[i]
        r.environment = envs[i]
        r.service_name = SERVICES[int(rng.random() ** 2 * len(SERVICES))]
        k = rng.choice((0, 1, 1, 2, 3))
        r.tags = list(dict.fromkeys(rng.choices(TAGS, weights=TAG_WEIGHTS, k=k)))
        failed = r.status != "success"
        r.prompt_tokens = 0 if failed else int(rng.lognormvariate(6.5, 1.0))
        r.completion_tokens = 0 if failed or model.startswith("text-") else int(rng.lognormvariate(5.0, 1.0))
        r.total_tokens = r.prompt_tokens + r.completion_tokens
        r.unpriced = price_in is None
        r.cost = (
            None
            if price_in is None
            else (Decimal(r.prompt_tokens * price_in + r.completion_tokens * price_out) / 1_000_000).quantize(
                Decimal("1e-10")
            )
        )
        r.usage_estimated = rng.random() < 0.02
        r.latency_ms = int(rng.lognormvariate(mu - (2 if failed else 0), 0.6))
        r.time_to_first_token_ms = int(r.latency_ms * rng.uniform(0.05, 0.4)) if rng.random() < 0.6 else None
        r.user_id = f"user-{int(rng.paretovariate(1.2)) % 2000}"
        for part in USAGE_PARTS:
            setattr(r, part, 0)
        out.append(r)
    out.sort(key=lambda r: r.timestamp)
    return out


TRACE_COLUMNS = (
    "id, team_id, trace_id, source, model, provider, prompt_tokens, completion_tokens, total_tokens, latency_ms, "
    "time_to_first_token_ms, timestamp, received_at, status, error_type, error_message, tags, metadata, "
    "environment, service_name, session_id, user_id, cost, unpriced, usage_estimated, price_source, "
    "price_version, destinations, routing, run_id, parent_id, kind, name"
)


def copy_traces(cursor: Any, rows: list[Row]) -> None:
    from psycopg.types.json import Jsonb

    empty_list, empty = Jsonb([]), Jsonb({})
    with cursor.copy(f"COPY traces_trace ({TRACE_COLUMNS}) FROM STDIN") as copy:
        for r in rows:
            trace_id = uuid.uuid4().hex
            copy.write_row(
                (
                    uuid.uuid4(),
                    r.team_id,
                    trace_id,
                    "api",
                    r.model,
                    r.provider,
                    r.prompt_tokens,
                    r.completion_tokens,
                    r.total_tokens,
                    r.latency_ms,
                    r.time_to_first_token_ms,
                    r.timestamp,
                    r.timestamp,
                    r.status,
                    "",
                    "",
                    Jsonb(r.tags) if r.tags else empty_list,
                    empty,
                    r.environment,
                    r.service_name,
                    "",
                    r.user_id,
                    r.cost,
                    r.unpriced,
                    r.usage_estimated,
                    "",
                    "",
                    empty_list,
                    empty_list,
                    trace_id,  # a call of its own is a run of one
                    "",
                    "llm",
                    "",
                )
            )


# ---- rollups, built in SQL -------------------------------------------------------------------
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
    **{part: f"sum({part})" for part in USAGE_PARTS},
}
_KEY = "CASE WHEN {v} IS NULL THEN NULL WHEN {v} <= 0 THEN -1 ELSE ceil(ln({v}::float8) / ln(1.02::float8))::int END"
TRACE_FIGURES = (
    "t.status AS trace_status, prompt_tokens, completion_tokens, total_tokens, cost, unpriced, usage_estimated, "
    f"{', '.join(USAGE_PARTS)}, "
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
    GROUP: from traces (``source`` has TRACE_FIGURES) or from rollup rows (COUNTERS and arrays)."""
    from analytics.models import COUNTERS

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
    """The SELECT of traces (``t``) as GROUP + TRACE_FIGURES, bucketed by ``size`` seconds."""
    return (
        f"SELECT team_id, floor(extract(epoch FROM timestamp))::bigint / {size} * {size} AS bucket, {slice_}, "
        f"{TRACE_FIGURES} FROM traces_trace t {join} WHERE provider <> 'span' AND {where}"
    )


# kind → (model, provider, status, environment, service_name, key) of a derived row, from a DIMS row
_DERIVED = {
    1: ("''", "''", "''", "''", "''", "''"),  # ALL
    3: ("''", "''", "''", "''", "''", "model"),  # MODEL
    4: ("''", "''", "status", "''", "''", "provider"),  # PROVIDER keeps the status
    5: ("''", "''", "''", "''", "''", "status"),
    6: ("''", "''", "''", "''", "''", "environment"),
    7: ("''", "''", "''", "''", "''", "service_name"),
}


def build_rollups(team_id: int, start: datetime, end: datetime, minute_floor: datetime) -> None:
    """The minute (from ``minute_floor``), hour and day rows of the team's traces in [start, end)."""
    from django.db import connection, transaction

    from analytics.models import COUNTERS, HISTOGRAMS

    stored = ", ".join(f'"{c}"' for c in (*COUNTERS, *HISTOGRAMS))
    where = "team_id = %s AND timestamp >= %s AND timestamp < %s"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_nestloop = off")  # (estimates of grouped CTEs are guesses)
        cursor.execute("SET LOCAL jit = off")  # (which the disabled nested loops would set off: seconds a statement)
        cursor.execute("SET LOCAL work_mem = '256MB'")
        for table, size, since in (("analytics_hourrollup", 3600, start), ("analytics_minuterollup", 60, minute_floor)):
            for slice_, join in ((DIMS_SLICE, ""), (TAG_SLICE, TAG_JOIN)):
                source = traces_source(size, slice_, join, where)
                insert_grouped(cursor, table, source, [team_id, since, end], from_traces=True, uuid_ids=False)
            for kind, exprs in _DERIVED.items():
                columns = ", ".join(f"{e} AS {c}" for e, c in zip(exprs, GROUP[3:], strict=True))
                source = f"SELECT team_id, bucket, {kind} AS kind, {columns}, {stored} FROM {table} "
                source += "WHERE team_id = %s AND kind = 0 AND bucket < %s"
                insert_grouped(cursor, table, source, [team_id, end.timestamp()], from_traces=False, uuid_ids=False)
        source = (
            "SELECT team_id, bucket / 86400 * 86400 AS bucket, kind, model, provider, status, environment, "
            f"service_name, key, {stored} FROM analytics_hourrollup WHERE team_id = %s AND bucket < %s"
        )
        params = [team_id, end.timestamp()]
        insert_grouped(cursor, "analytics_dayrollup", source, params, from_traces=False, uuid_ids=False)


def load(team_id: int, total: int, now: datetime, seed: int) -> None:
    from django.conf import settings
    from django.db import connection, transaction

    from analytics import rollups, snapshots

    rng = random.Random(seed)
    hours = 30 * 24
    end = now.replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(hours=hours)
    curve = [1 + 0.8 * math.sin((h % 24 - 8) / 24 * 2 * math.pi) for h in range(hours)]
    scale = total / sum(curve)
    counts = [int(c * scale) for c in curve]
    counts[-1] += total - sum(counts)
    indexes = drop_indexes("traces_trace")
    loaded, t0 = 0, time.perf_counter()
    last_hour = end - timedelta(hours=1)
    for h in range(hours):
        rows = generate(team_id, start + timedelta(hours=h), counts[h], rng)
        with connection.cursor() as cursor:
            copy_traces(cursor.cursor, rows)
        loaded += len(rows)
        if h % 24 == 23:
            print(f"  loaded {loaded:,} traces ({loaded / (time.perf_counter() - t0):,.0f}/s)", flush=True)
    print(f"  loaded {loaded:,} traces in {time.perf_counter() - t0:,.0f} s; building the rollups in SQL", flush=True)
    t1 = time.perf_counter()
    minute_floor = now - timedelta(hours=settings.TRACERELAY_RETENTION_MINUTE_HOURS)
    minute_floor = minute_floor.replace(second=0, microsecond=0) + timedelta(minutes=1)
    build_rollups(team_id, start, last_hour, minute_floor)
    # The last hour: the fold's own code (its deltas per batch of 1,000, added into what SQL built).
    for i in range(0, len(rows), 1000):
        with transaction.atomic():
            rollups.add_deltas(rollups.build_deltas(map(rollups.as_columns, rows[i : i + 1000])))
    snapshots.all_folded()  # (the traces' rows name their transactions: these are counted already)
    print(f"  rollups built in {time.perf_counter() - t1:,.0f} s", flush=True)
    print(f"  trace indexes rebuilt and vacuum-analyzed in {rebuild_indexes(indexes):,.0f} s")


def check(team_id: int) -> None:
    """The 30-day totals through the selector equal a count of the traces (the SQL-built rollups
    agree with the definitions)."""
    from django.db import connection

    from analytics.selectors import analytics_for_team, parse_query

    body = analytics_for_team(team_id=team_id, query=parse_query({"time_range": "30d"}, now=None, limit=None))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(sum(total_tokens), 0), count(*) FILTER (WHERE status = 'error') "
            "FROM traces_trace WHERE team_id = %s AND provider <> 'span' AND timestamp >= %s AND timestamp < %s",
            [team_id, body["range"]["since"], body["range"]["until"]],
        )
        count, tokens, errors = cursor.fetchone()
    totals = body["totals"]
    same = (totals["count"], totals["total_tokens"], totals["errors"]) == (count, tokens, errors)
    print(f"  check: rollups say {totals['count']:,} traces, {totals['total_tokens']:,} tokens, "
          f"{totals['errors']:,} errors; the traces {count:,}, {tokens:,}, {errors:,}: "
          f"{'same' if same else 'DIFFERENT'}")  # fmt: skip
