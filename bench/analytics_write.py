"""What the rollup write costs ingest, in-process and in CPU time (the machine's load moves
wall-clock figures; it moves CPU time much less).

    .venv/bin/python bench/analytics_write.py [--batch 1000] [--rounds 30]

Each round is `traces_ingest` of a batch (normalise, price, route, store traces + outbox rows and
the rollup deltas in one transaction), with the `traces_stored` receiver of analytics replaced by
the same two steps as `rollups.record`, timed: `build_deltas` (CPU) and the COPY of the deltas
(CPU and wall). Prints ingest's CPU per trace in this process (`time.process_time`) and in the
Postgres backend (/proc/<pid>/stat, 10 ms ticks, summed over the rounds), and the rollup write's
share of it. (Comparing rounds with and without the receiver was tried: at a load average of
6-10 the two medians differ by more than the write costs, either way.) Uses its own database
(`BENCH_DB`, default `tracerelay_bench_analytics_write`), made and migrated if missing.
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


def _backend_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    _prepare()
    import django

    django.setup()
    from django.db import connection

    from accounts.models import Scope, Team
    from accounts.principals import KeyPrincipal
    from analytics import rollups
    from config.bulk import insert_rows
    from pipeline.services import traces_ingest
    from traces.signals import traces_stored

    team, _ = Team.objects.get_or_create(name="bench-write")
    principal = KeyPrincipal(
        key_id=None, team_id=team.id, environment="production", prefix="bench", scopes=frozenset(Scope.values)
    )  # type: ignore[arg-type]
    models = ["gpt-4o-mini", "gpt-4o", "claude-3-5-haiku-latest", "gemini-2.5-flash"]
    items = [
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
        for i in range(args.batch)
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    spent: dict[str, float] = {"build": 0.0, "insert_cpu": 0.0, "insert_wall": 0.0}

    def timed_record(sender: Any, *, rows: Any, **_: Any) -> None:
        """`record_stored`, timed: the aggregation, then the COPY of the deltas."""
        c = time.process_time()
        deltas = rollups.build_deltas(rows)
        c1, t1 = time.process_time(), time.perf_counter()
        if deltas:
            insert_rows(deltas)
        spent["build"] += c1 - c
        spent["insert_cpu"] += time.process_time() - c1
        spent["insert_wall"] += time.perf_counter() - t1

    traces_stored.disconnect(dispatch_uid="analytics.rollups")
    traces_stored.connect(timed_record, dispatch_uid="analytics.rollups")
    rounds: list[tuple[float, float, float]] = []
    for i in range(args.rounds + 1):
        if i == 1:
            spent.update(build=0.0, insert_cpu=0.0, insert_wall=0.0)
        p0, c0, t0 = _backend_cpu_s(pid), time.process_time(), time.perf_counter()
        traces_ingest(principal=principal, items=items, source="batch")
        if i:
            rounds.append((time.process_time() - c0, _backend_cpu_s(pid) - p0, time.perf_counter() - t0))
    n = args.rounds * args.batch
    py = sum(r[0] for r in rounds) * 1e6 / n
    pg = sum(r[1] for r in rounds) * 1e6 / n
    wall = statistics.median(r[2] for r in rounds) * 1000
    build, copy_cpu, copy_wall = (spent[k] * 1e6 / n for k in ("build", "insert_cpu", "insert_wall"))
    print(f"batch of {args.batch}, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    print(f"  traces_ingest (rollup write included): {py:.1f} µs CPU per trace in Python, {pg:.1f} µs in the "
          f"Postgres backend (10 ms clock ticks), {wall:.0f} ms wall per batch")  # fmt: skip
    print(f"  the rollup write: build_deltas {build:.2f} µs CPU per trace, COPY of the deltas {copy_cpu:.2f} µs "
          f"CPU ({copy_wall:.2f} µs wall, an upper bound for the server's share)")  # fmt: skip
    write = build + copy_wall
    print(f"  share of ingest: {write:.2f} / {py + pg:.1f} µs = {write / (py + pg):.1%} "
          f"(of the Python side alone: {(build + copy_cpu) / py:.1%})")  # fmt: skip


if __name__ == "__main__":
    main()
