"""What an integration's settings cost a delivery, in-process (docs/destinations/index.md,
"Settings of every integration"): the shaping step on a realistic chat trace (environment map,
withheld ids, a five-operation transform) against no settings, and one quota grant (the Lua script
in Redis, one round trip per chunk) at chunk sizes 1 and 100.

    .venv/bin/python bench/integration_settings.py [--n 20000]

Prints figures only (median of 5 runs); no database is touched (Redis is BENCH_REDIS_URL, db 9).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["REDIS_URL"] = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")

import django  # noqa: E402

django.setup()

from integrations.options.quota import Quota, take  # noqa: E402
from integrations.options.shaping import Shaping  # noqa: E402
from traces.records import TraceRecord  # noqa: E402

RECORD = TraceRecord(
    trace_id="trc_bench",
    team_id=1,
    model="gpt-4o-mini",
    provider="openai",
    timestamp=datetime.now(UTC),
    input={
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is OTLP? " * 40}]
    },
    output={"choices": [{"message": {"role": "assistant", "content": "OpenTelemetry's protocol. " * 60}}]},
    metadata={"customer": "acme", "plan": "pro", "region": "eu"},
    environment="prod",
    user_id="u-42",
    session_id="s-7",
)
SETTINGS = {
    "environment_map": {"prod": "production"},
    "send_session_id": False,
    "transform": [
        {"op": "drop", "path": "input"},
        {"op": "truncate", "path": "output", "max_chars": 2000},
        {"op": "rename", "path": "metadata.customer", "to": "metadata.account"},
        {"op": "set", "path": "metadata.source", "value": "tracerelay"},
        {"op": "hash", "path": "user_id"},
    ],
}


def per_call_us(fn, n: int) -> float:
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - started) / n * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20000)
    n = parser.parse_args().n
    plain, shaped = Shaping.of({}), Shaping.of(SETTINGS)
    print(f"shaping, no settings:           {per_call_us(lambda: plain.shape(RECORD), n):8.2f} µs per trace")
    print(f"shaping, map + ids + 5 ops:     {per_call_us(lambda: shaped.shape(RECORD), n):8.2f} µs per trace")
    print(f"Shaping.of (parse the config):  {per_call_us(lambda: Shaping.of(SETTINGS), n):8.2f} µs per chunk")
    quota = Quota({"m": 100_000, "d": 1_000_000_000}, "drop")
    for size in (1, 100):
        integration = int(uuid.uuid4().int % 1_000_000_000)
        us = per_call_us(lambda i=integration, k=size: take(i, quota, k), max(200, n // 100))
        print(f"quota grant, chunk of {size:3}:       {us:8.1f} µs per chunk ({us / size:.2f} µs per trace)")


if __name__ == "__main__":
    main()
