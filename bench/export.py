"""Export rate and memory at 1M traces (issue 26, item 6; docs/export.md).

    nice .venv/bin/python bench/export.py                 # load 1M traces into a bench database, then measure
    nice .venv/bin/python bench/export.py --reuse         # measure what a previous run loaded
    .venv/bin/python bench/export.py --rows 20000         # a quick look

Loads ``--rows`` traces of one team (COPY, secondary indexes dropped and rebuilt: bench/_benchdb.py)
with realistic prompts, replies, tags and metadata (~1 KB a trace as JSON), then, for jsonl and csv,
plain and gzipped, streams the whole export the way the server produces it (`traces.export.export_bytes`,
and `gzipped`: the same code the view hands to Django) and prints rows/s, MB/s and the peak RSS of
the producing process. Each measurement runs in a fresh process, so its peak RSS is its own; beside
it, the RSS of the same process before the export (Django loaded, nothing read) and the peak of an
export of a quarter of the rows (`model=gpt-4o-mini`): equal peaks at 1/4 and all of the rows is
what constant memory looks like.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchdb import copy_rows, drop_indexes, rebuild_indexes, recreate_database, use_database  # noqa: E402

use_database("tracerelay_bench_export")

COLUMNS = (
    "id", "team_id", "trace_id", "source", "run_id", "parent_id", "kind", "name", "model", "provider",
    "prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "latency_ms", "time_to_first_token_ms",
    "timestamp", "received_at", "status", "error_type", "error_message", "input", "output", "tags", "metadata",
    "environment", "service_name", "session_id", "user_id", "cost", "unpriced", "usage_estimated", "price_source",
    "price_version", "destinations", "routing",
)  # fmt: skip
MODELS = ("gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "gpt-4.1")
TAGS = ("checkout", "beta", "search", "support", "batch")


def _rows(team_id: int, count: int, seed: int = 26):
    from psycopg.types.json import Jsonb

    rng = random.Random(seed)
    start = datetime(2026, 10, 1, tzinfo=UTC)
    for i in range(count):
        at = start + timedelta(seconds=i * 2.5)
        model = MODELS[i % 4]
        error = rng.random() < 0.06
        prompt, completion = rng.randint(50, 3000), rng.randint(10, 800)
        trace_id = f"trc_{uuid.uuid4().hex}"
        yield (
            uuid.uuid4(), team_id, trace_id, "api", trace_id, "", "llm", "", model,
            "anthropic" if model.startswith("claude") else "openai",
            prompt, completion, prompt + completion, rng.choice((0, 0, prompt // 2)), rng.randint(200, 9000), None,
            at, at, "error" if error else "success", "500" if error else "", "upstream failed" if error else "",
            Jsonb([{"role": "user", "content": "Summarise this text, please. " * rng.randint(1, 20)}]),
            Jsonb({"role": "assistant", "content": "A summary of it. " * rng.randint(1, 15)}),
            Jsonb(list(dict.fromkeys(rng.choices(TAGS, k=rng.choice((0, 1, 2)))))),
            Jsonb({"plan": rng.choice(("free", "pro", "team")), "region": rng.choice(("eu", "us"))}),
            "production", "checkout", f"s-{i // 20}", f"u-{i % 5000}", round(prompt * 2.5e-6 + completion * 1e-5, 10),
            False, False, "genai-prices", "0.0.30", Jsonb([]), Jsonb([]),
        )  # fmt: skip


def load(rows: int) -> None:
    import django

    recreate_database()
    django.setup()
    from accounts.models import Team

    team = Team.objects.create(name="bench")
    indexes = drop_indexes("traces_trace")
    t0 = time.perf_counter()
    generator = _rows(team.pk, rows)
    while True:
        batch = [row for _, row in zip(range(50_000), generator, strict=False)]
        if not batch:
            break
        copy_rows("traces_trace", COLUMNS, batch)
    loaded = time.perf_counter() - t0
    built = rebuild_indexes(indexes)
    print(f"loaded {rows:,} traces in {loaded:.1f} s (COPY), indexes and VACUUM ANALYZE in {built:.1f} s")


def _rss_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def measure_one(fmt: str, gzip: bool, query: str) -> dict[str, float]:
    """In this (fresh) process: stream the export once; rows, seconds, bytes, RSS before and peak."""
    import django

    django.setup()
    from django.http import QueryDict

    from accounts.models import Team
    from traces.export import export_bytes, gzipped
    from traces.filters import parse_trace_filter

    team = Team.objects.get(name="bench")
    trace_filter = parse_trace_filter(QueryDict(query))
    before = _rss_kb("VmRSS")
    t0 = time.perf_counter()
    pieces = export_bytes(team_id=team.pk, trace_filter=trace_filter, fmt=fmt)
    size = lines = 0
    if gzip:
        import zlib

        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # only to count the rows: not timed apart
        for piece in gzipped(pieces):
            size += len(piece)
            lines += inflate.decompress(piece).count(b"\n")
    else:
        for piece in pieces:
            size += len(piece)
            lines += piece.count(b"\n")
    seconds = time.perf_counter() - t0
    rows = lines - (1 if fmt == "csv" else 0)
    peak = _rss_kb("VmHWM")
    return {"rows": rows, "seconds": seconds, "bytes": size, "rss_before_mb": before / 1024, "peak_mb": peak / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--reuse", action="store_true", help="Measure what a previous run loaded.")
    parser.add_argument("--runs", type=int, default=8, help="Only the first N measurements (of 8).")
    parser.add_argument("--one", nargs=3, metavar=("FORMAT", "GZIP", "QUERY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        fmt, gzip, query = args.one
        query = "" if query == "-" else query
        print(json.dumps(measure_one(fmt, gzip == "1", query)))
        return
    if not args.reuse:
        load(args.rows)
    print(f"{'export':<22}{'rows':>10}{'s':>8}{'rows/s':>9}{'MB':>8}{'MB/s':>7}{'RSS before':>12}{'peak RSS':>10}")
    # Most telling first (a loaded machine may not have time for all): the whole JSON Lines export, its
    # quarter (`model=gpt-4o-mini`, the memory check), CSV, then gzip, then the other quarters.
    quarter = "model=gpt-4o-mini"
    runs = [("jsonl", False, ""), ("jsonl", False, quarter), ("csv", False, ""), ("jsonl", True, ""), ("csv", True, "")]
    runs += [("csv", False, quarter), ("jsonl", True, quarter), ("csv", True, quarter)]
    for fmt, gzip, query in runs[: args.runs]:
        out = subprocess.run(
            [sys.executable, __file__, "--one", fmt, "1" if gzip else "0", query or "-"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ},
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        name = f"{fmt}{' gzip' if gzip else ''}{' (1/4)' if query else ''}"
        print(
            f"{name:<22}{r['rows']:>10,.0f}{r['seconds']:>8.1f}{r['rows'] / r['seconds']:>9,.0f}"
            f"{r['bytes'] / 1e6:>8.0f}{r['bytes'] / 1e6 / r['seconds']:>7.1f}"
            f"{r['rss_before_mb']:>10.0f}MB{r['peak_mb']:>8.0f}MB",
            flush=True,
        )


if __name__ == "__main__":
    main()
