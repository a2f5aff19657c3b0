"""Runs (issue 22, docs/runs.md): the REST ingest of one run of 10,000 spans against the same number
of plain per-call traces, and `GET /api/v1/runs/{run_id}` at 10,000 and 50,000 spans.

    .venv/bin/python bench/runs.py                   # ~3 min on a quiet 2-core machine
    .venv/bin/python bench/runs.py --rounds 5 --gets 40

It makes a fresh database `tracerelay_bench_runs` (DATABASE_URL's server), with the routing rules of
bench/ingest.py (every trace gets an outbox row), and serves `config.asgi` with uvicorn as bin/run
does (one worker per core). Celery tasks go to Redis database 9 and are purged at the end.

**Ingest.** Each round sends, in batches of 1,000 (`POST /api/v1/traces/batch`, 2 at a time), 10,000
spans of one run (an agent root sent last, 1,000 tool/retrieval/chain steps under it, each with 9
calls, `llm` and `embedding`, under it) and 10,000 plain calls with no run fields (each a run of
its own); the two alternate which goes first. It prints per side: seconds, and the CPU seconds of
the server (its uvicorn processes) and of the Postgres backends it opened (`application_name`), and
the medians over the rounds with the run's cost per span against the plain call's.

**Reading.** A run of 10,000 and one of 50,000 spans are stored, then each is read `--gets` times
(one client; the first read of each is a warm-up, not counted): p50/p95 of the whole request, and
the size of the answer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import Server  # noqa: E402
from ingest_compare import CpuMeter  # noqa: E402

BATCH = 1000
APP_NAME = "bench-runs"


def run_spans(run_id: str, n: int) -> list[dict[str, Any]]:
    """``n`` spans of one run: steps of 10 (a structural step and 9 calls under it) under one agent root,
    which comes last, as OpenTelemetry exports it."""
    root = f"{run_id}-root"
    spans: list[dict[str, Any]] = []
    kinds = ("tool", "retrieval", "chain")
    for i in range(n - 1):
        step = i // 10
        if i % 10 == 0:
            spans.append({"id": f"{run_id}-s{step}", "run_id": run_id, "parent_id": root, "kind": kinds[step % 3],
                          "name": f"step {step}", "latency_ms": 900, "input": {"q": f"question {step}"},
                          "output": {"docs": step % 7}, "metadata": {"step": step}})  # fmt: skip
        else:
            spans.append(_call(i, run_id=run_id, parent_id=f"{run_id}-s{step}"))
    spans.append({"id": root, "run_id": run_id, "kind": "agent", "name": "invoke_agent bench", "latency_ms": 60_000,
                  "user_id": "bench-user", "session_id": "bench-session"})  # fmt: skip
    return spans


def plain_calls(n: int, tag: str) -> list[dict[str, Any]]:
    return [_call(i, id=f"{tag}-{i}") for i in range(n)]


def _call(i: int, **fields: Any) -> dict[str, Any]:
    embedding = i % 10 == 9
    return {
        "kind": "embedding" if embedding else "llm",
        "name": "embeddings" if embedding else "chat gpt-4o-mini",
        "model": "text-embedding-3-small" if embedding else "gpt-4o-mini",
        "prompt_tokens": 120 + i % 50,
        "completion_tokens": 0 if embedding else 40 + i % 20,
        "latency_ms": 350 + i % 500,
        "status": "error" if i % 17 == 0 else "success",
        "tags": ["bench"],
        "metadata": {"customer": f"c{i % 100}"},
        "input": [{"role": "user", "content": f"question {i}"}],
        "output": {"role": "assistant", "content": "answer " * 10},
        **fields,
    }


async def send(session: aiohttp.ClientSession, url: str, key: str, items: list[dict[str, Any]]) -> float:
    """Everything in batches of BATCH, two requests at a time; the seconds it took."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    bodies = [orjson.dumps({"traces": items[i : i + BATCH]}) for i in range(0, len(items), BATCH)]
    queue = list(reversed(bodies))

    async def worker() -> None:
        while queue:
            body = queue.pop()
            async with session.post(f"{url}/api/v1/traces/batch", data=body, headers=headers) as r:
                answer = await r.json()
                if r.status != 200 or answer["failed"]:
                    raise SystemExit(f"batch refused: {r.status} {str(answer)[:300]}")

    start = time.perf_counter()
    await asyncio.gather(worker(), worker())
    return time.perf_counter() - start


def measured(meter: CpuMeter, seconds: float, before: Any, after: Any) -> tuple[float, float, float]:
    return seconds, CpuMeter.spent(before[0], after[0]), CpuMeter.spent(before[1], after[1])


async def ingest_rounds(url: str, key: str, meter: CpuMeter, rounds: int, spans: int) -> None:
    print(f"\nREST ingest, batches of {BATCH} (2 concurrent): one run of {spans:,} spans vs {spans:,} plain calls")
    print(f"{'round':<6}{'side':<8}{'seconds':>9}{'spans/s':>9}{'server CPU s':>14}{'db CPU s':>10}{'load':>7}")
    figures: dict[str, list[tuple[float, float, float]]] = {"run": [], "plain": []}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:
        await send(session, url, key, plain_calls(2000, "warmup"))
        for r in range(rounds):
            sides = ["run", "plain"] if r % 2 == 0 else ["plain", "run"]
            for side in sides:
                items = run_spans(f"ingest-{r}", spans) if side == "run" else plain_calls(spans, f"plain-{r}")
                before = meter.snapshot()
                seconds = await send(session, url, key, items)
                after = meter.snapshot()
                got = measured(meter, seconds, before, after)
                figures[side].append(got)
                print(f"{r + 1:<6}{side:<8}{got[0]:>9.2f}{spans / got[0]:>9,.0f}{got[1]:>14.2f}{got[2]:>10.2f}"
                      f"{os.getloadavg()[0]:>7.1f}")  # fmt: skip
    print("medians:")
    med = {side: [statistics.median(x[k] for x in rows) for k in range(3)] for side, rows in figures.items()}
    for side, (s, server, db) in med.items():
        print(f"  {side:<6} {s:6.2f} s   server {server:6.2f} CPU s   db {db:5.2f} CPU s   "
              f"{(server + db) / spans * 1e6:6.0f} µs CPU per span")  # fmt: skip
    run_cpu, plain_cpu = med["run"][1] + med["run"][2], med["plain"][1] + med["plain"][2]
    ratios = [(a[1] + a[2]) / (b[1] + b[2]) - 1 for a, b in zip(figures["run"], figures["plain"], strict=True)]
    print(
        f"  added CPU per span of a run against a plain call: {(run_cpu - plain_cpu) / spans * 1e6:+.0f} µs "
        f"({run_cpu / plain_cpu - 1:+.0%}); per round: " + ", ".join(f"{x:+.0%}" for x in ratios)
    )


async def read_runs(url: str, key: str, sizes: list[int], gets: int) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:
        for size in sizes:
            run_id = f"read-{size}"
            stored = await send(session, url, key, run_spans(run_id, size))
            times: list[float] = []
            length = 0
            for i in range(gets + 1):
                start = time.perf_counter()
                async with session.get(f"{url}/api/v1/runs/{run_id}", headers=headers) as r:
                    body = await r.read()
                    assert r.status == 200, body[:300]
                elapsed = (time.perf_counter() - start) * 1000
                if i:
                    times.append(elapsed)
                length = len(body)
            answer = orjson.loads(body)
            assert len(answer["spans"]) == size == answer["totals"]["spans"], "the run did not come back whole"
            times.sort()
            p95 = times[min(len(times) - 1, round(len(times) * 0.95) - 1)]
            print(
                f"GET /api/v1/runs/{{id}} at {size:>6,} spans: p50 {statistics.median(times):7.1f} ms  p95 "
                f"{p95:7.1f} ms  ({len(times)} reads, {length / 1e6:.1f} MB; stored in {stored:.1f} s)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=18090)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rounds", type=int, default=4, help="ingest rounds (each side once a round)")
    parser.add_argument("--spans", type=int, default=10_000)
    parser.add_argument("--gets", type=int, default=30, help="reads of each run")
    parser.add_argument("--sizes", default="10000,50000", help="run sizes to read")
    args = parser.parse_args()

    import psycopg

    server = Server(args.port, args.workers, db_name="tracerelay_bench_runs", env={"PGAPPNAME": APP_NAME})
    key = server.prepare()["bench"]
    url = server.start()
    try:
        assert server.process is not None
        db = psycopg.connect(server.database_url.replace("postgres://", "postgresql://"), autocommit=True)
        meter = CpuMeter(server.process.pid, APP_NAME, db)
        print(f"{args.workers} uvicorn workers; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}")
        asyncio.run(ingest_rounds(url, key, meter, args.rounds, args.spans))
        print()
        asyncio.run(read_runs(url, key, [int(s) for s in args.sizes.split(",")], args.gets))
        traces, deliveries = server.stored()
        print(f"\nstored: {traces:,} traces, {deliveries:,} outbox rows")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
