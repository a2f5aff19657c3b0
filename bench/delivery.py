"""Delivery benchmark: throughput per worker process, and trace-to-destination latency at half of it.

    .venv/bin/python bench/delivery.py [--traces 30000] [--seconds 20] [--latency-ms 5] [--profile]

What it runs (all on loopback): its own redis-server (broker and cache), a webhook sink in a
separate process that answers every request after ``--latency-ms`` and notes when each trace id
arrived, and ONE real Celery worker process (``-c 1``, prefork) against a Postgres database of its
own (``tracerelay_bench_delivery``, created and migrated here; ``BENCH_DATABASE_URL`` to change).

1. Throughput: ``--traces`` outbox rows for one webhook destination are written, their tasks
   published in the chunks the outbox uses, and the clock runs until the sink has every trace.
2. Latency: traces are ingested through ``pipeline.services.traces_ingest`` (the API's service:
   normalise, price, route, one transaction, on_commit publish) at half the measured throughput,
   in batches every 20 ms, for ``--seconds``; latency = arrival at the sink − ingest committed.
3. ``--profile``: one in-process `deliver_batch` run under cProfile, to show where the time goes.

Targets (DESIGN.md §5): ≥ 5,000 traces/s per worker process; p99 < 1 s at half that load.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PYTHON = sys.executable
CELERY = str(Path(sys.executable).parent / "celery")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the sink (runs in its own process: `bench/delivery.py --sink PORT LATENCY_S`) -------------


def run_sink(port: int, latency_s: float) -> None:
    arrivals: dict[str, float] = {}
    requests = [0]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes

        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(latency_s)
            now = time.time()
            ids = [t["id"] for t in json.loads(raw)["traces"]]
            with lock:
                requests[0] += 1
                for i in ids:
                    arrivals.setdefault(i, now)
            self._reply(200, b'{"ok":true}')

        def do_GET(self) -> None:
            with lock:
                if self.path == "/count":
                    body = json.dumps({"traces": len(arrivals), "requests": requests[0]}).encode()
                else:  # /arrivals
                    body = json.dumps(arrivals).encode()
            self._reply(200, body)

        def do_DELETE(self) -> None:
            with lock:
                arrivals.clear()
                requests[0] = 0
            self._reply(200, b"{}")

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


# --- helpers ------------------------------------------------------------------------------------


class Proc:
    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)


def bench_env(workdir: Path, database_url: str, redis_port: int) -> dict[str, str]:
    """The environment of the bench's processes (its own database, redis and data directory), also
    set on this process (all but PYTHONUNBUFFERED) so that Django set up here uses the same."""
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "TRACERELAY_DATA_DIR": str(workdir / "data"),
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    os.environ.update({k: v for k, v in env.items() if k != "PYTHONUNBUFFERED"})
    return env


def redis_argv(port: int) -> list[str]:
    """A throwaway redis-server on loopback: nothing saved to disk."""
    return ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]


def wait_port(port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=30_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--pool", default="threads", choices=("threads", "prefork", "solo"))
    parser.add_argument("--concurrency", type=int, default=8, help="threads in the one worker process")
    parser.add_argument("--sink", nargs=2, metavar=("PORT", "LATENCY_S"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sink:
        run_sink(int(args.sink[0]), float(args.sink[1]))
        return

    workdir = Path(tempfile.mkdtemp(prefix="bench-delivery-"))
    redis_port, sink_port = free_port(), free_port()
    database_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tracerelay_bench_delivery")
    env = bench_env(workdir, database_url, redis_port)
    _create_database(database_url)

    procs: list[Proc] = []
    try:
        procs.append(Proc(redis_argv(redis_port), env, workdir / "redis.log"))
        procs.append(
            Proc([PYTHON, __file__, "--sink", str(sink_port), str(args.latency_ms / 1000)], env, workdir / "sink.log")
        )
        wait_port(redis_port)
        wait_port(sink_port)
        subprocess.run([PYTHON, "manage.py", "migrate", "-v", "0"], env=env, cwd=ROOT, check=True)

        import django

        django.setup()
        team_id, principal = _setup(f"http://127.0.0.1:{sink_port}/hook")
        sink = f"http://127.0.0.1:{sink_port}"

        if args.profile:
            _profile(team_id, sink)

        threads = args.concurrency if args.pool == "threads" else 1
        worker = Proc(
            [CELERY, "-A", "config", "worker", "-Q", "delivery", "--without-gossip", "--without-mingle",
             "-P", args.pool, "-c", str(threads),
             "-n", f"bench-{uuid.uuid4().hex[:6]}@%h", "--loglevel", "WARNING"],
            env,
            workdir / "worker.log",
        )  # fmt: skip
        procs.append(worker)
        time.sleep(4)  # worker boot

        print(f"worker: one process, pool {args.pool}, concurrency {threads}")
        rate = _throughput(team_id, sink, args.traces, args.latency_ms)
        _latency(principal, sink, rate / 2, args.seconds)
    finally:
        for proc in reversed(procs):
            proc.stop()
    print(f"\n(logs and data in {workdir})")


def _create_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def _setup(hook_url: str) -> tuple[int, Any]:
    from accounts.models import Team
    from accounts.selectors import principal_for_key
    from accounts.services import api_key_create
    from integrations.models import Integration
    from routing.models import RoutingRule, RuleSet
    from routing.services import routing_rules_touched

    team = Team.objects.create(name=f"bench-{uuid.uuid4().hex[:6]}")
    Integration.objects.create(team=team, name="sink", platform="webhook", config={"url": hook_url, "headers": {}})
    RoutingRule.objects.create(
        team=team, name="all", destinations=[{"name": "sink", "sample_rate": 1.0, "tags": [], "fallback": []}]
    )
    RuleSet.objects.get_or_create(team=team)
    routing_rules_touched(team_id=team.pk, actor="bench")
    _, raw = api_key_create(team=team, environment="production", name="bench")
    principal = principal_for_key(raw)
    return team.pk, principal


def _make_rows(team_id: int, count: int) -> list[int]:
    from django.utils import timezone

    from delivery.models import Delivery
    from traces.ids import new_trace_id
    from traces.models import Trace

    now = timezone.now()
    ids: list[int] = []
    for start in range(0, count, 2000):
        traces = [
            bench_trace(team_id, new_trace_id(), now, now, metadata={"customer": "acme"})
            for _ in range(min(2000, count - start))
        ]
        Trace.objects.bulk_create(traces)
        rows = Delivery.objects.bulk_create(
            Delivery(team_id=team_id, trace=t, destination="sink", spec={"name": "sink", "tags": [], "fallback": []})
            for t in traces
        )
        ids.extend(r.pk for r in rows)
    return ids


def bench_trace(team_id: int, trace_id: str, timestamp: Any, received_at: Any, **fields: Any) -> Any:
    """An unsaved call trace of the benches' usual size: a short chat with gpt-4o."""
    from traces.models import Trace

    return Trace(
        team_id=team_id,
        trace_id=trace_id,
        model="gpt-4o",
        provider="openai",
        prompt_tokens=120,
        completion_tokens=40,
        total_tokens=160,
        latency_ms=400,
        input={"messages": [{"role": "user", "content": "Summarise this paragraph for me, please."}]},
        output={"choices": [{"message": {"role": "assistant", "content": "A short summary."}}]},
        tags=["bench"],
        timestamp=timestamp,
        received_at=received_at,
        **fields,
    )


def arrival_latencies(sink: str, committed: dict[str, float]) -> list[float]:
    """Seconds from commit to the sink of each trace in ``committed`` (trace id: commit time) that
    arrived, once all have or after 30 s."""
    import httpx

    deadline = time.monotonic() + 30
    while _sink_count(sink) < len(committed) and time.monotonic() < deadline:
        time.sleep(0.1)
    arrivals = httpx.get(f"{sink}/arrivals", timeout=30).json()
    return [arrivals[i] - t for i, t in committed.items() if i in arrivals]


def _sink_count(sink: str) -> int:
    import httpx

    return int(httpx.get(f"{sink}/count", timeout=10).json()["traces"])


def _throughput(team_id: int, sink: str, count: int, latency_ms: float) -> float:
    import httpx

    from delivery import outbox

    httpx.delete(f"{sink}/arrivals", timeout=10)
    print(f"== throughput: {count:,} traces, one webhook destination ({latency_ms:g} ms per request), 1 worker process")
    ids = _make_rows(team_id, count)
    started = time.perf_counter()
    outbox.publish(ids)
    published = time.perf_counter() - started
    while _sink_count(sink) < count:
        time.sleep(0.05)
        if time.perf_counter() - started > 600:
            raise RuntimeError("throughput run did not finish in 10 minutes")
    elapsed = time.perf_counter() - started
    requests = httpx.get(f"{sink}/count", timeout=10).json()["requests"]
    rate = count / elapsed
    print(f"   delivered {count:,} in {elapsed:.2f} s ({requests} requests; publishing took {published:.2f} s)")
    print(f"   throughput: {rate:,.0f} traces/s per worker process (target ≥ 5,000)")
    return rate


def _latency(principal: Any, sink: str, rate: float, seconds: float) -> None:
    import httpx

    from pipeline.services import traces_ingest

    httpx.delete(f"{sink}/arrivals", timeout=10)
    tick = 0.02
    per_tick = max(1, round(rate * tick))
    print(f"\n== latency at {per_tick / tick:,.0f} traces/s offered ({per_tick} per batch every {tick * 1000:g} ms)")
    committed: dict[str, float] = {}
    started = time.perf_counter()
    next_at = started
    late = 0
    while time.perf_counter() - started < seconds:
        items = [
            {"model": "gpt-4o-mini", "prompt_tokens": 80, "completion_tokens": 20, "latency_ms": 250, "tags": ["bench"]}
            for _ in range(per_tick)
        ]
        results = traces_ingest(principal=principal, items=items, source="api")
        now = time.time()
        for r in results:
            committed[r.trace.trace_id] = now
        next_at += tick
        pause = next_at - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        else:
            late += 1
    offered_for = time.perf_counter() - started
    latencies = arrival_latencies(sink, committed)
    missing = len(committed) - len(latencies)
    achieved = len(committed) / offered_for
    print(f"   ingested {len(committed):,} traces in {offered_for:.1f} s ({achieved:,.0f}/s; {late} ticks ran late)")
    print(f"   delivered {len(latencies):,}, missing {missing}")
    if latencies:
        print(
            f"   ingest→destination latency: p50 {percentile(latencies, 50) * 1000:.0f} ms, "
            f"p90 {percentile(latencies, 90) * 1000:.0f} ms, p99 {percentile(latencies, 99) * 1000:.0f} ms, "
            f"max {max(latencies) * 1000:.0f} ms, mean {statistics.mean(latencies) * 1000:.0f} ms (target p99 < 1 s)"
        )


def _profile(team_id: int, sink: str) -> None:
    import cProfile
    import pstats

    from delivery.engine import deliver_batch

    ids = _make_rows(team_id, 4000)
    print("== profile: deliver_batch in this process, 10 tasks of 400 rows")
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for start in range(0, len(ids), 400):
        deliver_batch(ids[start : start + 400])
    profiler.disable()
    elapsed = time.perf_counter() - started
    print(f"   {len(ids) / elapsed:,.0f} traces/s in-process (no Celery)")
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
