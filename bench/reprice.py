"""What a re-pricing job costs: traces per second through `repricing.services.job_run` (price, update,
correct the rollups and runs, move the cursor, chunk by chunk), beside the baseline of the same
traces only priced (`traces.pricing.price`, what ingest calls), and the job's peak Python memory over
two sizes of range (the walk is keyset chunks: memory should not grow with the range).

    .venv/bin/python bench/reprice.py [--traces 40000] [--chunk 500]

Loads ``--traces`` gpt-4o / gpt-4o-mini / cached calls stored at a wrong price ($0.05 each) over 7
days into its own database (`tracerelay_bench_reprice`, made afresh), folds them, re-prices the whole
range (timed), then a quarter and the whole range again under tracemalloc (memory), and checks that
the hour rollups equal the traces afterwards.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchdb import copy_rows, drop_indexes, rebuild_indexes, recreate_database, use_database  # noqa: E402

use_database("tracerelay_bench_reprice")

START = datetime(2026, 11, 1, tzinfo=UTC)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=40_000)
    parser.add_argument("--chunk", type=int, default=500)
    args = parser.parse_args()
    recreate_database()
    import django

    django.setup()
    from django.conf import settings
    from django.db.models import Sum
    from psycopg.types.json import Jsonb

    from accounts.models import Team
    from analytics import rollups
    from analytics.models import HourRollup, Kind
    from analytics.stats import cost_units
    from repricing import services
    from repricing.definition import JobSpec
    from traces.models import Trace
    from traces.pricing import price
    from traces.runs.summary import rebuild
    from traces.usage import TokenDetails

    settings.TRACERELAY_REPRICE_CHUNK = args.chunk
    team = Team.objects.create(name="bench")
    step = timedelta(days=7) / args.traces
    models = [("gpt-4o", 0), ("gpt-4o-mini", 0), ("gpt-4o", 800)]
    columns = (
        "id", "team_id", "trace_id", "run_id", "parent_id", "kind", "name", "model", "provider", "prompt_tokens",
        "completion_tokens", "total_tokens", "cached_tokens", "cache_write_tokens", "input_audio_tokens",
        "input_image_tokens", "reasoning_tokens", "output_audio_tokens", "output_image_tokens", "timestamp",
        "received_at", "status", "error_type", "error_message", "tags", "metadata", "environment", "service_name",
        "session_id", "user_id", "cost", "unpriced", "usage_estimated", "price_source", "price_version",
        "destinations", "routing", "source",
    )  # fmt: skip
    rows = []
    for i in range(args.traces):
        model, cached = models[i % 3]
        at = START + step * i
        trace_id = f"b-{i}"
        rows.append(
            (
                uuid.uuid4(), team.id, trace_id, f"run-{i // 4}", "", "llm", "", model, "openai", 1000, 200, 1200,
                cached, 0, 0, 0, 0, 0, 0, at, at, "success", "", "", Jsonb(["bench"]), Jsonb({}), "production",
                "", "", "", Decimal("0.05"), False, False, "genai-prices", "old", Jsonb([]), Jsonb([]), "api",
            )
        )  # fmt: skip
    indexes = drop_indexes("traces_trace")
    copy_rows("traces_trace", columns, rows)
    rebuild_indexes(indexes)
    runs = sorted({row[3] for row in rows})
    for i in range(0, len(runs), 2000):
        rebuild(team.id, runs[i : i + 2000])
    t0 = time.perf_counter()
    rollups.fold()
    fold_s = time.perf_counter() - t0

    # Baseline: the same calls only priced, as ingest prices them.
    stored = list(Trace.objects.filter(team=team).values("model", "provider", "prompt_tokens", "completion_tokens",
                                                          "timestamp", "cached_tokens"))  # fmt: skip
    t0 = time.perf_counter()
    for row in stored:
        price(
            model=row["model"], provider=row["provider"], prompt_tokens=row["prompt_tokens"],
            completion_tokens=row["completion_tokens"], timestamp=row["timestamp"], details=TokenDetails.of(row),
            team_id=team.id,
        )  # fmt: skip
    price_s = time.perf_counter() - t0
    del stored

    count = len(rows)
    del rows
    end = START + timedelta(days=7)

    def run(until: datetime) -> tuple[int, int, float]:
        job = services.job_create(team_id=team.id, spec=JobSpec(since=START, until=until), actor="bench")
        t0 = time.perf_counter()
        job = services.job_run(job_id=job.pk)
        seconds = time.perf_counter() - t0
        assert job is not None and job.status == "succeeded", job and job.error
        return job.traces_done, job.traces_changed, seconds

    done, changed, seconds = run(end)  # every trace changes
    # Memory (tracemalloc's peak of Python allocations during the job) over a quarter and the whole
    # range, priced right by now: the same walk and pricing, nothing to write.
    memory = []
    for label, until in (("a quarter", START + (end - START) / 4), ("the whole range", end)):
        tracemalloc.start()
        walked, _changed, _s = run(until)
        memory.append((label, walked, tracemalloc.get_traced_memory()[1] / 2**20))
        tracemalloc.stop()
    folded = HourRollup.objects.filter(team=team, kind=Kind.ALL).aggregate(v=Sum("cost_e10"))["v"]
    traced = sum(cost_units(c) for c in Trace.objects.filter(team=team).values_list("cost", flat=True).iterator())
    print(f"traces: {args.traces}, chunk {args.chunk}; fold of them all {fold_s:.1f} s")
    print(f"baseline, pricing only: {count / price_s:,.0f} traces/s")
    print(f"re-pricing job: {done:,} traces ({changed:,} changed) in {seconds:.1f} s = {done / seconds:,.0f} traces/s")
    for label, walked, mb in memory:
        print(f"peak Python memory of a job over {label} ({walked:,} traces): {mb:.1f} MB")
    print(f"hour rollups equal the traces afterwards: {folded == traced} ({folded / 1e10:.4f} USD)")


if __name__ == "__main__":
    main()
