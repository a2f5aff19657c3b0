"""Ingest throughput: traces/s and accept latency for single POSTs, batches of 100 and 1,000, and
OTLP/HTTP protobuf exports of 1,000 GenAI spans (`otlp 1000`; its traces/s are spans stored/s).

    .venv/bin/python bench/ingest.py                 # starts its own server on Postgres + Redis
    .venv/bin/python bench/ingest.py --url http://127.0.0.1:8000 --key tr_prod_...
    .venv/bin/python bench/ingest.py --compare-pii off,redact     # ~4 min on a quiet 2-core machine

``--compare-pii`` / ``--compare-rollups`` run the settings side by side (a server each) and report CPU seconds
of the server processes per 1,000 traces beside throughput (`bench/ingest_compare.py`).

Without --url it makes a fresh database `tracerelay_bench` on the local Postgres (DATABASE_URL's
server, default postgres@127.0.0.1:5432), migrates it, creates a team with a routing rule (so
every trace gets a Delivery row in the same transaction: "stored durably with routing decided"),
and serves `config.asgi:application` with uvicorn exactly as bin/run does (uvloop, httptools,
one worker per core). Celery tasks go to Redis database 9 and are purged at the end: no worker
consumes them, the bench measures the accept path only. The load generator (aiohttp) runs on the
same machine and competes for its cores; the figures are therefore a floor.

At the end it counts the stored rows: every accepted trace must be in the database.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


@dataclass
class Result:
    name: str
    concurrency: int
    traces: int
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]
    accepted: int = 0  # traces accepted from the first request to the last answer (windows' edges included)
    elapsed: float = 0.0  # seconds from the first request to the last answer

    @property
    def rate(self) -> float:
        return self.traces / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        lat = sorted(self.latencies_ms) or [0.0]
        p50 = statistics.median(lat)
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        return (
            f"{self.name:<14} c={self.concurrency:<3} {self.rate:>9,.0f} traces/s  "
            f"{self.requests / self.seconds:>7,.0f} req/s  p50 {p50:>7.1f} ms  p99 {p99:>7.1f} ms"
            + (f"  ERRORS {self.errors}" if self.errors else "")
        )


def trace(i: int) -> dict[str, Any]:
    return {
        "model": "gpt-4o-mini" if i % 3 else "claude-3-5-sonnet-20241022",
        "prompt_tokens": 120 + i % 50,
        "completion_tokens": 40 + i % 20,
        "latency_ms": 350 + i % 500,
        "status": "error" if i % 17 == 0 else "success",
        "tags": ["bench", "checkout" if i % 2 else "search"],
        "metadata": {"customer": f"c{i % 100}", "region": "eu"},
        "input": [
            {
                "role": "user",
                "content": "Summarise the order history of this customer in two lines."
                + (f" Their e-mail is c{i % 100}@example.org, phone +49 30 1234{i % 10000:04d}." if i % 4 == 0 else ""),
            }
        ],
        "output": "Two orders in March, one refund in April.",
    }


class OtlpBodies:
    """OTLP protobuf requests of ``size`` GenAI spans, the same content as `trace(i)`, new random ids
    each time: a span sent again is deduplicated (not stored again), which would flatter the figure."""

    def __init__(self, size: int) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
        from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

        def kv(key: str, value: Any) -> Any:
            if isinstance(value, int):
                return KeyValue(key=key, value=AnyValue(int_value=value))
            return KeyValue(key=key, value=AnyValue(string_value=value))

        start = time.time_ns()
        spans = []
        for i in range(size):
            item = trace(i)
            attrs = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai" if i % 3 else "anthropic",
                "gen_ai.request.model": item["model"],
                "gen_ai.usage.input_tokens": item["prompt_tokens"],
                "gen_ai.usage.output_tokens": item["completion_tokens"],
                "gen_ai.input.messages": orjson.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": item["input"][0]["content"]}]}]
                ).decode(),
                "gen_ai.output.messages": orjson.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": item["output"]}]}]
                ).decode(),
                "customer": item["metadata"]["customer"],
                "region": "eu",
            }
            spans.append(
                Span(
                    name=f"chat {item['model']}",
                    kind=Span.SPAN_KIND_CLIENT,
                    start_time_unix_nano=start,
                    end_time_unix_nano=start + item["latency_ms"] * 1_000_000,
                    attributes=[kv(k, v) for k, v in attrs.items()],
                    status=Status(code=Status.STATUS_CODE_ERROR if item["status"] == "error" else 0),
                )
            )
        resource = [kv("service.name", "bench"), kv("deployment.environment.name", "production")]
        self.request = ExportTraceServiceRequest(
            resource_spans=[ResourceSpans(resource={"attributes": resource}, scope_spans=[ScopeSpans(spans=spans)])]
        )
        self.spans = self.request.resource_spans[0].scope_spans[0].spans

    def next(self) -> bytes:
        # Random ids, as OpenTelemetry SDKs make them: hex with letters, so a PII policy's scan of
        # the ``otel.*`` metadata costs what it costs in production (sequential ids are all digits).
        for span in self.spans:
            span.trace_id = random.randbytes(16)
            span.span_id = random.randbytes(8)
        return self.request.SerializeToString()


async def run(
    url: str, key: str, batch: int, concurrency: int, seconds: float, warmup: float, otlp: bool = False
) -> Result:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    otlp_bodies = OtlpBodies(batch) if otlp else None
    if otlp:
        path, bodies = "/api/v1/otlp/v1/traces", []
        headers["Content-Type"] = "application/x-protobuf"
    elif batch == 1:
        path, bodies = "/api/v1/traces", [orjson.dumps(trace(i)) for i in range(200)]
    else:
        path = "/api/v1/traces/batch"
        bodies = [orjson.dumps({"traces": [trace(i * batch + j) for j in range(batch)]}) for i in range(8)]
    latencies: list[float] = []
    counts = {"traces": 0, "requests": 0, "errors": 0, "accepted": 0}
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(url, connector=connector, timeout=timeout, headers=headers) as session:
        start = time.perf_counter()
        measure_from = start + warmup
        stop_at = measure_from + seconds

        async def client(n: int) -> None:
            i = n
            while True:
                now = time.perf_counter()
                if now >= stop_at:
                    return
                body = otlp_bodies.next() if otlp_bodies is not None else bodies[i % len(bodies)]
                i += concurrency
                t0 = time.perf_counter()
                async with session.post(path, data=body) as resp:
                    await resp.read()
                    ok = resp.status in (200, 201)
                    if otlp_bodies is not None and ok and resp.content_length:
                        ok = False  # a partial_success: some spans were refused
                t1 = time.perf_counter()
                if ok:
                    counts["accepted"] += batch
                if t0 >= measure_from and t1 <= stop_at:
                    counts["requests"] += 1
                    latencies.append((t1 - t0) * 1000)
                    if ok:
                        counts["traces"] += batch
                    else:
                        counts["errors"] += 1

        await asyncio.gather(*(client(n) for n in range(concurrency)))
        elapsed = time.perf_counter() - start
    return Result(
        f"otlp {batch}" if otlp else "single POST" if batch == 1 else f"batch of {batch}",
        concurrency,
        counts["traces"],
        counts["requests"],
        counts["errors"],
        seconds,
        latencies,
        counts["accepted"],
        elapsed,
    )


class Server:
    """A throwaway database and a uvicorn like bin/run's, on Postgres and Redis."""

    def __init__(
        self,
        port: int,
        workers: int,
        app: str = "config.asgi:application",
        db_name: str = "tracerelay_bench",
        env: dict[str, str] | None = None,
    ) -> None:
        self.app = app
        self.port = port
        self.workers = workers
        self.db_name = db_name
        base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tracerelay")
        self.database_url = base.rsplit("/", 1)[0] + "/" + db_name
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": self.database_url,
            "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9"),
            "TRACERELAY_DATA_DIR": "/tmp/tracerelay-bench-data",
            "DATABASE_POOL_MAX": "16",
            "LOG_LEVEL": "WARNING",
            **(env or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [PY, "manage.py", *args], cwd=ROOT, env=self.env, check=True, capture_output=True, text=True
        )
        return done.stdout

    def prepare(self, teams: dict[str, str | None] | None = None) -> dict[str, str]:
        """A fresh database with one team per name (each with the routing rules and, unless None,
        a PII policy of that stored mode); returns each team's production API key."""
        import psycopg

        teams = teams or {"bench": None}
        admin_url = self.database_url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin_url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{self.db_name}"')
        self.manage("migrate", "--noinput", "-v", "0")
        keys = {}
        for name in teams:
            out = self.manage("apikey", "create", "--team", name, "--environment", "production", "--create-team")
            keys[name] = out.strip().splitlines()[-1]
        self.manage(
            "shell",
            "-c",
            "from accounts.models import Team; from routing.models import RoutingRule;"
            "from privacy.models import PiiPolicy\n"
            f"for name, pii in {teams!r}.items():\n"
            " t = Team.objects.get(name=name)\n"
            " RoutingRule.objects.create(team=t, name='errors', conditions={'status': 'error'}, priority=10,"
            " destinations=[{'name': 'langfuse', 'sample_rate': 1.0, 'tags': [], 'fallback': []}])\n"
            " RoutingRule.objects.create(team=t, name='all', priority=20,"
            " destinations=[{'name': 'webhook', 'sample_rate': 1.0, 'tags': [], 'fallback': []}])\n"
            " if pii is not None:\n"
            "  PiiPolicy.objects.create(team=t, stored_mode=pii, version=1)",
        )
        return keys

    def start(self) -> str:
        self.process = subprocess.Popen(
            [
                str(ROOT / ".venv/bin/uvicorn"),
                self.app,
                "--loop",
                "uvloop",
                "--http",
                "httptools",
                "--workers",
                str(self.workers),
                "--port",
                str(self.port),
                "--no-access-log",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=self.env,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{self.port}"
        import urllib.request

        for _ in range(150):
            try:
                urllib.request.urlopen(url + "/healthz", timeout=1)
                return url
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise SystemExit("the server did not come up")

    def stored(self) -> tuple[int, int]:
        out = self.manage(
            "shell",
            "-c",
            "from traces.models import Trace; from delivery.models import Delivery;"
            "print(Trace.objects.count(), Delivery.objects.count())",
        )
        traces, deliveries = out.strip().splitlines()[-1].split()
        return int(traces), int(deliveries)

    def stop(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:  # a master stuck restarting workers that fail to start
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        try:
            import redis

            redis.Redis.from_url(self.env["REDIS_URL"]).flushdb()
        except Exception as exc:  # the bench result stands; the queue is only leftovers
            print(f"(could not purge the bench Redis database: {exc})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="Target a running server instead of starting one.")
    parser.add_argument("--key", help="A production API key of the target (with --url).")
    parser.add_argument("--port", type=int, default=18080)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="uvicorn workers (default: cores)")
    parser.add_argument("--seconds", type=float, default=5.0, help="Measured time per scenario.")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="One concurrency per scenario, 2 s each.")
    parser.add_argument(
        "--pii",
        choices=["off", "detect", "redact", "hash", "drop"],
        default="off",
        help="The bench team's stored PII mode (a quarter of the traces carry an e-mail and a phone).",
    )
    parser.add_argument("--only-otlp", action="store_true", help="Only batches of 1,000 and OTLP (to compare them).")
    parser.add_argument("--db-name", default="tracerelay_bench", help="The bench database (dropped and made anew).")
    compare = parser.add_argument_group("comparing settings (bench/ingest_compare.py: CPU seconds per 1,000 traces)")
    compare.add_argument(
        "--compare-pii",
        metavar="MODES",
        help="Alternate teams of these stored PII modes, e.g. off,redact (the first is the baseline).",
    )
    compare.add_argument(
        "--compare-rollups", action="store_true", help="Alternate a team with the analytics rollups and one without."
    )
    compare.add_argument("--rounds", type=int, default=6, help="Rounds of every scenario (the variants side by side).")
    args = parser.parse_args()

    if args.compare_pii or args.compare_rollups:
        if args.url:
            parser.error("a comparison starts its own server (it reads the server processes' CPU)")
        from ingest_compare import compare as run_comparison

        if args.quick:
            args.seconds = 2.0
        run_comparison(args)
        return

    server = None
    if args.url:
        if not args.key:
            parser.error("--url needs --key")
        url, key = args.url.rstrip("/"), args.key
    else:
        server = Server(args.port, args.workers, "config.asgi:application", db_name=args.db_name)
        key = server.prepare({"bench": None if args.pii == "off" else args.pii})["bench"]
        url = server.start()
    scenarios = [(1, [1, 16, 64], False), (100, [1, 4, 8], False), (1000, [1, 2, 4], False), (1000, [1, 2, 4], True)]
    if args.quick:
        scenarios = [(1, [32], False), (100, [4], False), (1000, [2], False), (1000, [2], True)]
        args.seconds = 2.0
    if args.only_otlp:
        scenarios = [s for s in scenarios if s[0] == 1000]
    app = "" if server is None else f" serving {server.app} ({server.workers} workers)"
    print(
        f"tracerelay ingest bench: {url}{app}, {os.cpu_count()} cores, {args.seconds:g} s per scenario,"
        f" stored PII mode {args.pii}"
    )
    sent = 0
    try:
        for batch, concurrencies, otlp in scenarios:
            for concurrency in concurrencies:
                result = asyncio.run(run(url, key, batch, concurrency, args.seconds, args.warmup, otlp))
                sent += result.traces
                print(result.line(), flush=True)
        if server is not None:
            traces, deliveries = server.stored()
            print(f"stored: {traces:,} traces, {deliveries:,} outbox rows (accepted in measured windows: {sent:,})")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
