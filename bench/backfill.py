"""Backfill benchmark: backfill throughput to a 5 ms loopback destination while live ingest runs,
and live delivery's latency with and without a backfill running, side by side, in one run.

    .venv/bin/python bench/backfill.py [--traces 20000] [--live-rate 400] [--seconds 20]
                                       [--latency-ms 5] [--max-per-second 10000]

What it runs (all on loopback, as bench/delivery.py): its own redis-server, two webhook sinks in
processes of their own answering after ``--latency-ms`` (``live``: where the routing rule sends
every ingested trace; ``archive``: the integration backfilled), a delivery worker as bin/run starts
it (``-Q delivery -P threads -c 8``) and the backfill worker (``nice -n 10 … -Q backfill -P threads -c 3``),
against a Postgres database of its own (``tracerelay_bench_backfill``).

1. ``--traces`` traces are stored an hour back (before the ``archive`` integration exists).
2. Baseline: live ingest (`pipeline.services.traces_ingest`, batches every 20 ms) at ``--live-rate``
   for ``--seconds``; latency = arrival at the live sink − ingest committed.
3. With a backfill: the backfill of ``archive`` (every stored trace, ``--max-per-second``) starts,
   and live ingest runs at the same rate until the backfill has succeeded. Printed: the backfill's
   throughput (traces at the archive sink / time to success) and the live latency over that time.
4. The baseline again (the machine's noise shows in the two baselines' difference).

A 5 s warm-up of live ingest comes first and is not counted (the workers' first tasks).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_spec = importlib.util.spec_from_file_location("bench_delivery", ROOT / "bench" / "delivery.py")
assert _spec is not None and _spec.loader is not None
bd: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--live-rate", type=float, default=250.0, help="live traces ingested per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="the baseline's length")
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--max-per-second", type=int, default=10_000)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-backfill-"))
    redis_port, live_port, archive_port = bd.free_port(), bd.free_port(), bd.free_port()
    database_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tracerelay_bench_backfill")
    env = bd.bench_env(workdir, database_url, redis_port)
    bd._create_database(database_url)
    latency_s = str(args.latency_ms / 1000)
    procs: list[Any] = []
    try:
        procs.append(bd.Proc(bd.redis_argv(redis_port), env, workdir / "redis.log"))
        for port, name in ((live_port, "live"), (archive_port, "archive")):
            argv = [bd.PYTHON, str(ROOT / "bench" / "delivery.py"), "--sink", str(port), latency_s]
            procs.append(bd.Proc(argv, env, workdir / f"sink-{name}.log"))
        for port in (redis_port, live_port, archive_port):
            bd.wait_port(port)
        bd.subprocess.run([bd.PYTHON, "manage.py", "migrate", "-v", "0"], env=env, cwd=ROOT, check=True)

        import django

        django.setup()
        live = f"http://127.0.0.1:{live_port}"
        archive = f"http://127.0.0.1:{archive_port}"
        team_id, principal = bd._setup(f"{live}/hook")
        print(f"== storing {args.traces:,} traces an hour back (before the archive integration exists)")
        _store(team_id, args.traces)

        for queue, threads in (("delivery", 8), ("backfill", 3)):
            nice = ["nice", "-n", "10"] if queue == "backfill" else []  # as bin/run starts it
            argv = [*nice, bd.CELERY, "-A", "config", "worker", "-Q", queue, "--without-gossip", "--without-mingle",
                    "-P", "threads", "-c", str(threads), "-n", f"bench-{queue}-{uuid.uuid4().hex[:6]}@%h",
                    "--loglevel", "WARNING"]  # fmt: skip
            procs.append(bd.Proc(argv, env, workdir / f"worker-{queue}.log"))
        time.sleep(5)  # workers boot

        print("\n== warm-up: 5 s of live ingest (not counted)")
        _live(principal, live, args.live_rate, lambda elapsed: elapsed >= 5)
        print(f"\n== baseline: live ingest at {args.live_rate:g} traces/s for {args.seconds:g} s, no backfill")
        base = _live(principal, live, args.live_rate, lambda elapsed: elapsed >= args.seconds)

        from delivery.backfill.services import backfill_start
        from delivery.models import Backfill
        from integrations.models import Integration

        hook = Integration.objects.create(
            team_id=team_id, name="archive", platform="webhook", config={"url": f"{archive}/hook", "headers": {}}
        )
        from datetime import timedelta

        from django.utils import timezone

        print(
            f"\n== with a backfill of {args.traces:,} traces (max {args.max_per_second:,}/s) and the same live ingest"
        )
        now = timezone.now()
        job = backfill_start(
            integration=hook,
            since=now - timedelta(days=1),
            until=now - timedelta(minutes=10),
            filters={},
            apply_rules=False,
            max_per_second=args.max_per_second,
            actor="bench",
        )
        started = time.perf_counter()
        done_at: list[float] = []

        def finished(elapsed: float) -> bool:
            if elapsed > 600:
                raise RuntimeError("the backfill did not finish in 10 minutes")
            if Backfill.objects.filter(pk=job.pk, status="succeeded").exists():
                done_at.append(time.perf_counter() - started)
                return True
            return False

        with_backfill = _live(principal, live, args.live_rate, finished, check_every=0.5)
        job.refresh_from_db()
        arrived = bd._sink_count(archive)
        took = done_at[0] if done_at else float("nan")
        print(
            f"   backfill: {job.status}, total {job.total:,}, sent {job.sent:,}, skipped {job.skipped:,}, "
            f"failed {job.failed:,}; {arrived:,} traces at the archive sink in {took:.1f} s "
            f"= {arrived / took:,.0f} traces/s"
        )
        print(f"\n== baseline again, after the backfill: {args.seconds:g} s, no backfill")
        after = _live(principal, live, args.live_rate, lambda elapsed: elapsed >= args.seconds)
        print("\n== live delivery latency (ingest committed → live sink)")
        print(f"   {'':22}{'p50':>9}{'p90':>9}{'p99':>9}{'max':>9}{'traces':>9}")
        runs = (("without, before", base), ("with a backfill", with_backfill), ("without, after", after))
        for label, values in runs:
            if not values:
                print(f"   {label:22}  (nothing arrived)")
                continue
            p = [bd.percentile(values, q) * 1000 for q in (50, 90, 99)]
            print(
                f"   {label:22}{p[0]:>7.0f}ms{p[1]:>7.0f}ms{p[2]:>7.0f}ms{max(values) * 1000:>7.0f}ms{len(values):>9,}"
            )
    finally:
        # This process's cache-invalidation listener would log the broker going away.
        logging.getLogger("config.invalidation").setLevel(logging.CRITICAL)
        for proc in reversed(procs):
            proc.stop()
    print(f"\n(logs and data in {workdir})")


def _store(team_id: int, count: int) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from traces.ids import new_trace_id
    from traces.models import Trace

    start = timezone.now() - timedelta(hours=1)
    for first in range(0, count, 2000):
        Trace.objects.bulk_create(
            bd.bench_trace(team_id, (tid := new_trace_id()), start + timedelta(milliseconds=i), start, run_id=tid)
            for i in range(first, min(count, first + 2000))
        )


def _live(principal: Any, sink: str, rate: float, stop: Any, *, check_every: float = 0.0) -> list[float]:
    """Ingest at ``rate`` until ``stop(elapsed)``; the latencies of what reached the sink."""
    import httpx

    from pipeline.services import traces_ingest

    httpx.delete(f"{sink}/arrivals", timeout=10)
    tick = 0.02
    per_tick = max(1, round(rate * tick))
    committed: dict[str, float] = {}
    started = time.perf_counter()
    next_at, checked, late = started, 0.0, 0
    while True:
        elapsed = time.perf_counter() - started
        if elapsed - checked >= check_every:
            checked = elapsed
            if stop(elapsed):
                break
        items = [
            {"model": "gpt-4o-mini", "prompt_tokens": 80, "completion_tokens": 20, "latency_ms": 250, "tags": ["live"]}
            for _ in range(per_tick)
        ]
        results = traces_ingest(principal=principal, items=items, source="api")
        now = time.time()
        for r in results:
            if r.trace is not None:
                committed[r.trace.trace_id] = now
        next_at += tick
        pause = next_at - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        else:
            late += 1
    offered_for = time.perf_counter() - started
    latencies = bd.arrival_latencies(sink, committed)
    print(
        f"   live: ingested {len(committed):,} in {offered_for:.1f} s ({len(committed) / offered_for:,.0f}/s, "
        f"{late} ticks late), delivered {len(latencies):,}, missing {len(committed) - len(latencies)}"
    )
    return latencies


if __name__ == "__main__":
    main()
