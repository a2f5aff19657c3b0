"""What the rollup write adds to ingest, measured in-process until it is wired into the ingest
transaction (then bench/ingest.py before/after is the real figure).

    .venv/bin/python bench/analytics_write.py [--batch 1000] [--rounds 20]

Per round: `traces_ingest` of a batch (normalise, price, route, store traces + outbox rows in one
transaction), then `analytics.rollups.record` of the same rows in a transaction of its own (its
COPY plus the aggregation; the commit is counted too, which the real wiring shares with
ingest's). Prints the median of both and the ratio. Uses the database of bench/analytics.py
(`tracerelay_bench_analytics`), which must exist (run that first, or with --traces 1000).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BASE_URL = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tracerelay").rsplit("/", 1)[0]
os.environ.update(
    {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"{BASE_URL}/tracerelay_bench_analytics",
        "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9"),
        "TRACERELAY_DATA_DIR": "/tmp/tracerelay-bench-data",
    }
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    import django

    django.setup()
    from django.db import transaction

    from accounts.models import Scope, Team
    from accounts.principals import KeyPrincipal
    from analytics import rollups
    from pipeline.services import traces_ingest

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
    ingest_ms, record_ms = [], []
    for _ in range(args.rounds + 1):
        t = time.perf_counter()
        results = traces_ingest(principal=principal, items=items, source="batch")
        t1 = time.perf_counter()
        rows = [r.trace for r in results if r.trace is not None]
        with transaction.atomic():
            rollups.record(rows)  # type: ignore[arg-type]
        t2 = time.perf_counter()
        ingest_ms.append((t1 - t) * 1000)
        record_ms.append((t2 - t1) * 1000)
    ingest, record = statistics.median(ingest_ms[1:]), statistics.median(record_ms[1:])
    print(f"batch of {args.batch}: traces_ingest {ingest:.1f} ms, rollups.record {record:.2f} ms "
          f"({record / ingest:.1%} of ingest)")  # fmt: skip


if __name__ == "__main__":
    main()
