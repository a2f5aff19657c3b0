"""What the rollups cost off the ingest path: the fold's CPU per 1,000 traces, in this process
and in the Postgres backend (the machine's load moves wall-clock figures; it moves CPU time much
less).

    .venv/bin/python bench/analytics_write.py [--batch 1000] [--rounds 30]

    .venv/bin/python bench/analytics_write.py --mix simple      # few combinations (11 delta rows)

Each round is `traces_ingest` of a batch (normalise, price, route, store traces + outbox rows in
one transaction). On Postgres ingest does nothing for the rollups beyond the traces' ``rollup_xid``
column default and its index entry (`analytics.snapshots`); what that costs ingest is measured side
by side by `bench/ingest.py --compare-rollups`. Prints ingest's CPU per trace in this process
(`time.process_time`) and in the Postgres backend (/proc/<pid>/stat, 10 ms ticks, summed over the
rounds) for scale; then `rollups.fold` of all the rounds' traces: its CPU here and in the backend
per 1,000 traces. The default mix is bench/analytics.py's (a few hundred delta rows per batch of
1,000). Uses its own database (`BENCH_DB`, default `tracerelay_bench_analytics_write`), made and
migrated if missing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB = os.environ.get("BENCH_DB", "tracerelay_bench_analytics_write")
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


def _prepare() -> None:
    import psycopg

    with psycopg.connect(f"{BASE_URL}/postgres".replace("postgres://", "postgresql://"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB]).fetchone():
            conn.execute(f"CREATE DATABASE {DB}")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True)


def _bench_team() -> tuple[Any, Any]:
    """The benches' team and an ingest principal of it (after `django.setup`)."""
    from accounts.models import Scope, Team
    from accounts.principals import KeyPrincipal

    team, _ = Team.objects.get_or_create(name="bench-write")
    principal = KeyPrincipal(
        key_id=None, team_id=team.id, environment="production", prefix="bench", scopes=frozenset(Scope.values)
    )  # type: ignore[arg-type]
    return team, principal


def _backend_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--mix", choices=["simple", "realistic"], default="realistic")
    args = parser.parse_args()
    _prepare()
    import django

    django.setup()
    from django.db import connection

    from analytics import rollups
    from pipeline.services import traces_ingest

    team, principal = _bench_team()
    items = _realistic(args.batch) if args.mix == "realistic" else _simple(args.batch)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    rounds: list[tuple[float, float, float]] = []
    for i in range(args.rounds + 1):
        p0, c0, t0 = _backend_cpu_s(pid), time.process_time(), time.perf_counter()
        traces_ingest(principal=principal, items=items, source="batch")
        if i:
            rounds.append((time.process_time() - c0, _backend_cpu_s(pid) - p0, time.perf_counter() - t0))
    n = args.rounds * args.batch
    py = sum(r[0] for r in rounds) * 1e6 / n
    pg = sum(r[1] for r in rounds) * 1e6 / n
    wall = statistics.median(r[2] for r in rounds) * 1000
    p0, c0, t0 = _backend_cpu_s(pid), time.process_time(), time.perf_counter()
    folded = rollups.fold()
    fold_py, fold_pg, fold_wall = time.process_time() - c0, _backend_cpu_s(pid) - p0, time.perf_counter() - t0
    deltas = len(rollups.build_deltas(_last_batch(team, args.batch)))
    print(f"batch of {args.batch} ({args.mix} mix: {deltas} delta rows when folded), {args.rounds} rounds, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"  traces_ingest: {py:.1f} µs CPU per trace in Python, {pg:.1f} µs in the "
          f"Postgres backend (10 ms clock ticks), {wall:.0f} ms wall per batch")  # fmt: skip
    per_1k = 1000 / max(folded, 1)
    print(f"  rollups.fold of {folded:,} traces: {fold_py * per_1k:.3f} CPU-s per 1,000 traces in Python, "
          f"{fold_pg * per_1k:.3f} in the backend, {fold_wall:.1f} s wall")  # fmt: skip


def _last_batch(team: Any, batch: int) -> list[Any]:
    """The newest ``batch`` traces of ``team`` as `rollups.build_deltas` rows."""
    from analytics import rollups
    from traces.models import Trace

    return list(Trace.objects.filter(team=team).order_by("-received_at").values_list(*rollups.TRACE_COLUMNS)[:batch])


def _simple(batch: int) -> list[dict[str, Any]]:
    """Few combinations: 4 models, 2 services, 2 tags a trace of 3 (11 delta rows a batch)."""
    models = ["gpt-4o-mini", "gpt-4o", "claude-3-5-haiku-latest", "gemini-2.5-flash"]
    return [
        {
            "model": models[i % 4],
            "prompt_tokens": 100 + i % 50,
            "completion_tokens": 40 + i % 20,
            "latency_ms": 300 + i % 700,
            "time_to_first_token_ms": 80 + i % 50,
            "status": "error" if i % 17 == 0 else "success",
            "tags": ["bench", "checkout" if i % 2 else "search"],
            "service_name": ["api", "worker"][i % 2],
            "metadata": {"customer": f"c{i % 100}"},
            "input": [{"role": "user", "content": "Summarise the order history of this customer in two lines."}],
            "output": "Two orders in March, one refund in April.",
        }
        for i in range(batch)
    ]


def _realistic(batch: int) -> list[dict[str, Any]]:
    """bench/analytics.py's mix (10 models, 3 statuses, 3 environments, 6 services, 0-3 of 25 tags)
    over one minute: a few hundred delta rows a batch."""
    import random
    from datetime import UTC, datetime

    sys.path.insert(0, str(ROOT / "bench"))
    from analytics_load import generate

    rows = generate(0, datetime.now(UTC).replace(second=0, microsecond=0), batch * 60, random.Random(1))[:batch]
    items = []
    for r in rows:
        item = {
            "model": r.model,
            "provider": r.provider,
            "status": r.status,
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
            "latency_ms": r.latency_ms,
            "tags": r.tags,
            "service_name": r.service_name,
            "environment": r.environment,
            "metadata": {"customer": r.user_id},
            "input": [{"role": "user", "content": "Summarise the order history of this customer in two lines."}],
            "output": "Two orders in March, one refund in April.",
        }
        if r.time_to_first_token_ms is not None:
            item["time_to_first_token_ms"] = r.time_to_first_token_ms
        items.append(item)
    return items


if __name__ == "__main__":
    main()
