"""Analytics query latency at scale: p50/p95 of the dashboard's queries over N synthetic traces.

    .venv/bin/python bench/analytics.py                    # 10M traces (long: see --traces)
    .venv/bin/python bench/analytics.py --traces 2000000 --runs 30
    .venv/bin/python bench/analytics.py --reuse            # query the database a previous run loaded

Makes its own Postgres database `tracerelay_bench_analytics` (DATABASE_URL's server), migrates
it, and loads N traces of one team spread over the last 30 days with COPY, in time order, with a
daily load curve and a realistic mix (10 models of 6 providers, 94% success / 4% error / 2% rate
limited, 3 environments, 6 services, 2,000 users, 0-3 of 25 tags, lognormal latencies, 60%
streamed with a TTFT, 3% unpriced). The trace table's indexes are dropped for the load and built
again after it, as a bulk load would.

Rollups are built by a bulk equivalent of the fold: the same `Stats` and `slices_of` the fold
uses, aggregated in memory per minute and merged into hours and days, written with COPY; minute
rows only for the last TRACERELAY_RETENTION_MINUTE_HOURS (retention deletes older ones). The
last hour goes through the production path instead: `rollups.record` per batch of 1,000
(deltas) and then `rollups.fold`.

Queries run in-process through `analytics.selectors` (the view adds parsing and JSON only).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB = "tracerelay_bench_analytics"
BASE_URL = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tracerelay").rsplit("/", 1)[0]
os.environ.update(
    {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"{BASE_URL}/{DB}",
        "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9"),
        "TRACERELAY_DATA_DIR": "/tmp/tracerelay-bench-data",
        "LOG_LEVEL": "WARNING",
    }
)

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


def prepare() -> None:
    import psycopg

    with psycopg.connect(f"{BASE_URL}/postgres".replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB}")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True)


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
        out.append(r)
    out.sort(key=lambda r: r.timestamp)
    return out


TRACE_COLUMNS = (
    "id, team_id, trace_id, source, model, provider, prompt_tokens, completion_tokens, total_tokens, latency_ms, "
    "time_to_first_token_ms, timestamp, received_at, status, error_type, error_message, tags, metadata, "
    "environment, service_name, session_id, user_id, cost, unpriced, usage_estimated, price_source, "
    "price_version, destinations, routing"
)


def copy_traces(cursor: Any, rows: list[Row]) -> None:
    from psycopg.types.json import Jsonb

    empty_list, empty = Jsonb([]), Jsonb({})
    with cursor.copy(f"COPY traces_trace ({TRACE_COLUMNS}) FROM STDIN") as copy:
        for r in rows:
            copy.write_row(
                (
                    uuid.uuid4(),
                    r.team_id,
                    uuid.uuid4().hex,
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
                )
            )


def load(team_id: int, total: int, now: datetime, seed: int) -> None:
    from django.conf import settings
    from django.db import connection, transaction

    from analytics import rollups
    from analytics.models import DIMENSIONS, GRAINS, Kind
    from analytics.stats import Stats
    from config.bulk import build_row, insert_rows

    rng = random.Random(seed)
    hours = 30 * 24
    end = now.replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(hours=hours)
    curve = [1 + 0.8 * math.sin((h % 24 - 8) / 24 * 2 * math.pi) for h in range(hours)]
    scale = total / sum(curve)
    counts = [int(c * scale) for c in curve]
    counts[-1] += total - sum(counts)
    minute_floor = int(now.timestamp()) - settings.TRACERELAY_RETENTION_MINUTE_HOURS * 3600
    indexes = _drop_trace_indexes()
    day_acc: dict[Any, Stats] = defaultdict(Stats)
    loaded, t0 = 0, time.perf_counter()

    def write(grain: str, acc: dict[Any, Stats]) -> None:
        model = GRAINS[grain][1]
        objs = []
        for (bucket, kind, dims, key), stats in acc.items():
            values = {
                "team_id": team_id,
                "bucket": bucket,
                "kind": kind,
                "key": key,
                **dict(zip(DIMENSIONS, dims, strict=True)),
            }
            objs.append(build_row(model, values | stats.stored_values()))
        for i in range(0, len(objs), 5000):
            with transaction.atomic():
                insert_rows(objs[i : i + 5000])

    for h in range(hours):
        hour_start = start + timedelta(hours=h)
        rows = generate(team_id, hour_start, counts[h], rng)
        with connection.cursor() as cursor:
            copy_traces(cursor.cursor, rows)
        if h == hours - 1:  # the last hour: the production path (deltas per batch of 1,000, then the fold)
            for i in range(0, len(rows), 1000):
                with transaction.atomic():
                    insert_rows(rollups.build_deltas(rows[i : i + 1000]))  # type: ignore[arg-type]
            loaded += len(rows)
            break
        minute_acc: dict[Any, Stats] = defaultdict(Stats)
        for r in rows:
            minute = int(r.timestamp.timestamp()) // 60 * 60
            args = (r.status, r.prompt_tokens, r.completion_tokens, r.total_tokens, r.cost, r.unpriced,
                    r.usage_estimated, r.latency_ms, r.time_to_first_token_ms)  # fmt: skip
            minute_acc[
                (minute, Kind.DIMS.value, (r.model, r.provider, r.status, r.environment, r.service_name), "")
            ].add_trace(*args)
            for tag in r.tags:
                minute_acc[(minute, Kind.TAG.value, ("",) * 5, tag)].add_trace(*args)
        hour_acc: dict[Any, Stats] = defaultdict(Stats)
        folded_minutes: dict[Any, Stats] = defaultdict(Stats)
        hour_bucket = int(hour_start.timestamp())
        for (minute, kind, dims, key), stats in minute_acc.items():
            for s_kind, s_dims, s_key in rollups.slices_of(kind, dims, key):
                hour_acc[(hour_bucket, s_kind, s_dims, s_key)].merge(stats)
                if minute >= minute_floor:
                    folded_minutes[(minute, s_kind, s_dims, s_key)].merge(stats)
        day_bucket = hour_bucket // 86400 * 86400
        for (_b, kind, dims, key), stats in hour_acc.items():
            day_acc[(day_bucket, kind, dims, key)].merge(stats)
        write("hour", hour_acc)
        if folded_minutes:
            write("minute", folded_minutes)
        loaded += len(rows)
        if h % 24 == 23:
            elapsed = time.perf_counter() - t0
            print(f"  loaded {loaded:,} traces ({loaded / elapsed:,.0f}/s)", flush=True)
    write("day", day_acc)  # (the last, partial day gets the last hour from the fold: rows add up)
    t1 = time.perf_counter()
    folded = rollups.fold()
    print(f"  fold of the last hour's deltas: {folded:,} delta rows in {time.perf_counter() - t1:.1f} s")
    print(f"  loaded {loaded:,} traces in {time.perf_counter() - t0:,.0f} s; rebuilding the trace indexes")
    t2 = time.perf_counter()
    with connection.cursor() as cursor:
        for sql in indexes:
            cursor.execute(sql)
        cursor.execute("ANALYZE")
    print(f"  indexes rebuilt and analyzed in {time.perf_counter() - t2:,.0f} s")


def _drop_trace_indexes() -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'traces_trace' "
            "AND indexname NOT LIKE '%%pkey' AND indexdef NOT LIKE 'CREATE UNIQUE%%'"
        )
        found = cursor.fetchall()
        for name, _ in found:
            cursor.execute(f"DROP INDEX {name}")
    return [definition for _, definition in found]


QUERIES = [
    ("24 h totals", {"time_range": "24h"}),
    ("7 days by model", {"time_range": "7d", "group_by": "model"}),
    ("30 days by day, provider=openai", {"time_range": "30d", "interval": "day", "provider": "openai"}),
    (
        "30 days by day, 2 filters",
        {"time_range": "30d", "interval": "day", "provider": "openai", "environment": "production"},
    ),
    ("7 days by tag", {"time_range": "7d", "group_by": "tag"}),
    ("30 days by tag", {"time_range": "30d", "interval": "day", "group_by": "tag"}),
    ("30 days by day, tz Europe/Paris", {"time_range": "30d", "interval": "day", "tz": "Europe/Paris"}),
]


def measure(team_id: int, runs: int) -> None:
    from django.db import connection

    from analytics.selectors import analytics_for_team, parse_query

    print(f"\n{'query':<36} {'p50':>9} {'p95':>9}  (runs: {runs}; first run not counted)")
    for name, params in QUERIES:
        times = []
        for i in range(runs + 1):
            t = time.perf_counter()
            body = analytics_for_team(team_id=team_id, query=parse_query(params, now=None, limit=None))
            if i:
                times.append((time.perf_counter() - t) * 1000)
        times.sort()
        p95 = times[min(len(times) - 1, math.ceil(len(times) * 0.95) - 1)]
        print(f"{name:<36} {statistics.median(times):>6.1f} ms {p95:>6.1f} ms   count={body['totals']['count']:,} "
              f"source={body['source']}")  # fmt: skip
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reuse", action="store_true", help="Query what a previous run loaded.")
    args = parser.parse_args()
    if not args.reuse:
        prepare()
    import django

    django.setup()
    from accounts.models import Team

    if args.reuse:
        team = Team.objects.get(name="bench")
    else:
        team = Team.objects.create(name="bench")
        print(f"loading {args.traces:,} traces over 30 days into {DB}")
        load(team.id, args.traces, datetime.now(UTC), args.seed)
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("traces_trace", "analytics_minuterollup", "analytics_hourrollup", "analytics_dayrollup"):
            cursor.execute(f"SELECT count(*) FROM {table}")
            print(f"  {table}: {cursor.fetchone()[0]:,} rows")
    measure(team.id, args.runs)


if __name__ == "__main__":
    main()
