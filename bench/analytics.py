"""Analytics query latency at scale: p50/p95 of the dashboard's queries over N synthetic traces.

    .venv/bin/python bench/analytics.py                    # 10M traces
    .venv/bin/python bench/analytics.py --traces 2000000 --runs 30
    .venv/bin/python bench/analytics.py --reuse            # query the database a previous run loaded
    .venv/bin/python bench/analytics.py --reuse --pages    # and time the /analytics page (24 h, 7 and 30 days)

Makes its own Postgres database (`BENCH_DB`, default `tracerelay_bench_analytics`, on
DATABASE_URL's server), migrates it, and loads N traces of one team spread over the last 30 days
with COPY, in time order, with a daily load curve and a realistic mix (10 models of 6 providers,
94% success / 4% error / 2% rate limited, 3 environments, 6 services, 2,000 users, 0-3 of 25
tags, lognormal latencies, 60% streamed with a TTFT, 3% unpriced); the rollups are built in SQL
for all but the last hour, which goes through `rollups.build_deltas` and `rollups.fold`
(bench/analytics_load.py).

Queries run in-process through `analytics.selectors` (the view adds parsing and JSON only). Per
query it prints the wall-clock p50/p95, and two figures the machine's load moves less: the
Python CPU time per query (`time.process_time`, median) and the Postgres time, as the sum of
EXPLAIN (ANALYZE, BUFFERS) execution times of the statements one answer runs (with the buffers
they touched), and the server backend's CPU per query (/proc/<pid>/stat over all runs).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchdb import database_name, recreate_database, use_database  # noqa: E402

use_database(os.environ.get("BENCH_DB", "tracerelay_bench_analytics"))

# The dashboard's four (issue 10) first, then harder variants.
QUERIES = [
    ("24 h totals", {"time_range": "24h"}),
    ("7 days by model", {"time_range": "7d", "group_by": "model"}),
    ("30 days by day, provider=openai", {"time_range": "30d", "interval": "day", "provider": "openai"}),
    ("7 days by tag", {"time_range": "7d", "group_by": "tag"}),
    (
        "30 days by day, 2 filters",
        {"time_range": "30d", "interval": "day", "provider": "openai", "environment": "production"},
    ),
    ("30 days by tag", {"time_range": "30d", "interval": "day", "group_by": "tag"}),
    ("30 days by day, tz Europe/Paris", {"time_range": "30d", "interval": "day", "tz": "Europe/Paris"}),
]


def _backend_cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None  # (a server on another host)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _explain(statements: list[tuple[str, Any]]) -> tuple[float, int]:
    """Sum of EXPLAIN (ANALYZE, BUFFERS) execution times (ms) and shared buffers touched."""
    from django.db import connection

    total_ms, buffers = 0.0, 0
    with connection.cursor() as cursor:
        for sql, params in statements:
            if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}", params)
            plan = cursor.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
            total_ms += plan[0]["Execution Time"]
            top = plan[0]["Plan"]
            buffers += top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0)
    return total_ms, buffers


class _Capture:
    def __init__(self, statements: list[tuple[str, Any]]) -> None:
        self.statements = statements

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        self.statements.append((sql, params))
        return execute(sql, params, many, context)


def measure(team_id: int, runs: int) -> None:
    from django.db import connection

    from analytics.selectors import analytics_for_team, parse_query

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    print(f"\nload average {os.getloadavg()[0]:.1f} (2 cores, shared); runs: {runs}, the first not counted")
    print(f"{'query':<34} {'p50':>8} {'p95':>8} {'py cpu':>8} {'pg cpu':>8} {'explain':>8} {'buffers':>8}")
    for name, params in QUERIES:
        times, cpu = [], []
        pg_before = _backend_cpu_s(pid)
        for i in range(runs + 1):
            if i == 1:
                pg_before = _backend_cpu_s(pid)
            t, c = time.perf_counter(), time.process_time()
            body = analytics_for_team(team_id=team_id, query=parse_query(params, now=None, limit=None))
            if i:
                times.append((time.perf_counter() - t) * 1000)
                cpu.append((time.process_time() - c) * 1000)
        pg_after = _backend_cpu_s(pid)
        pg_ms = (pg_after - pg_before) * 1000 / runs if pg_before is not None and pg_after is not None else math.nan
        statements: list[tuple[str, Any]] = []
        with connection.execute_wrapper(_Capture(statements)):
            analytics_for_team(team_id=team_id, query=parse_query(params, now=None, limit=None))
        explain_ms, buffers = _explain(statements)
        times.sort()
        p95 = times[min(len(times) - 1, math.ceil(len(times) * 0.95) - 1)]
        print(f"{name:<34} {statistics.median(times):>5.1f} ms {p95:>5.1f} ms {statistics.median(cpu):>5.1f} ms "
              f"{pg_ms:>5.1f} ms {explain_ms:>5.1f} ms {buffers:>8,}   count={body['totals']['count']:,} "
              f"source={body['source']}", flush=True)  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    connection.close()


PAGES = [
    "/analytics",
    "/analytics?time_range=7d",
    "/analytics?time_range=30d",
    "/analytics?time_range=7d&provider=openai",
]


def measure_pages(team_id: int, runs: int) -> None:
    """The /analytics page (figures, three breakdowns, charts, template) through Django's test
    client, signed in as a member of the team: wall p50/p95 and this process's CPU."""
    import uuid

    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.models import Membership, Role

    member = Membership.objects.filter(team_id=team_id).select_related("user").first()
    if member is None:
        user = get_user_model().objects.create_user(username="bench@example.com", password=uuid.uuid4().hex)
        Membership.objects.create(team_id=team_id, user=user, role=Role.OWNER)
    else:
        user = member.user
    client = Client()
    client.force_login(user)
    print(f"\nload average {os.getloadavg()[0]:.1f}; the /analytics page, {runs} runs, the first not counted")
    print(f"{'page':<44} {'p50':>8} {'p95':>8} {'cpu':>8}")
    for path in PAGES:
        times, cpu = [], []
        for i in range(runs + 1):
            t, c = time.perf_counter(), time.process_time()
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            if i:
                times.append((time.perf_counter() - t) * 1000)
                cpu.append((time.process_time() - c) * 1000)
        times.sort()
        p95 = times[min(len(times) - 1, math.ceil(len(times) * 0.95) - 1)]
        p50, cpu50 = statistics.median(times), statistics.median(cpu)
        print(f"{path:<44} {p50:>5.1f} ms {p95:>5.1f} ms {cpu50:>5.1f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reuse", action="store_true", help="Query what a previous run loaded.")
    parser.add_argument("--pages", action="store_true", help="Also time the /analytics page (test client).")
    args = parser.parse_args()
    if not args.reuse:
        recreate_database()
    import django

    django.setup()
    from analytics_load import check, load

    from accounts.models import Team

    if args.reuse:
        team = Team.objects.get(name="bench")
    else:
        team = Team.objects.create(name="bench")
        print(f"loading {args.traces:,} traces over 30 days into {database_name()}")
        load(team.id, args.traces, datetime.now(UTC), args.seed)
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("traces_trace", "analytics_minuterollup", "analytics_hourrollup", "analytics_dayrollup"):
            cursor.execute(f"SELECT count(*) FROM {table}")
            print(f"  {table}: {cursor.fetchone()[0]:,} rows")
    check(team.id)
    measure(team.id, args.runs)
    if args.pages:
        measure_pages(team.id, args.runs)


if __name__ == "__main__":
    main()
