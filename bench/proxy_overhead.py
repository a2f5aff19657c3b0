"""What the proxy adds to a call: latency, time to first/last byte of a stream, throughput per core.

    .venv/bin/python bench/proxy_overhead.py [--quick] [--workers N] [--requests N] [--seconds S]

Runs in the real configuration: `uvicorn config.asgi:application --loop uvloop --http httptools
--workers <nproc>` (as ./bin/run does) against Postgres (database ``tracerelay_proxy_bench``, created
and migrated if missing) and Redis, with trace capture on, in front of a fast fake upstream that
runs in its own process (raw asyncio + httptools: ~20 µs per request, so the proxy's share shows).

1. Concurrency 1, direct and proxied calls interleaved (same client, same connection reuse):
   added p50/p99 for JSON, added time to first byte and to last byte for an SSE stream.
2. Closed loop at concurrency 16 and 64 through the proxy: requests/s, latency, and requests per
   busy proxy core = requests / CPU seconds the proxy processes used (utime + stime from
   /proc/<pid>/stat, all worker processes and their threads, the trace writer included). The
   load generator, the fake upstream and Postgres share the same cores, so wall-clock requests/s
   understates what a proxy core does; CPU time does not.
3. Open loop at a fixed offered rate (default 500 requests/s) to the proxy, with the same rate
   sent straight to the upstream at the same time (schedules interleaved, so noise from other
   processes on the machine hits both alike): latency measured from each request's scheduled
   start (no coordinated omission); the added p99. Two unmeasured seconds first.

At the end it checks that every proxied call became a stored trace.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHAT_BODY = (
    b'{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},'
    b'{"role":"user","content":"Write one sentence about the sea."}],"temperature":0.2}'
)
STREAM_BODY = CHAT_BODY[:-1] + b',"stream":true}'
JSON_ANSWER = (
    b'{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini-2024-07-18",'
    b'"choices":[{"index":0,"message":{"role":"assistant","content":"The sea keeps its own time, patient '
    b'and vast, folding the light of the sky into every wave.","refusal":null},"logprobs":null,'
    b'"finish_reason":"stop"}],"usage":{"prompt_tokens":27,"completion_tokens":21,"total_tokens":48},'
    b'"system_fingerprint":"fp_bench"}'
)
PROXIED_CALLS = 0  # every call sent through the proxy: each must become a stored trace
WORDS = "The sea keeps its own time , patient and vast , folding the light of the sky into every wave .".split()


# --- the fake upstream (its own process) -----------------------------------------------------------


def _sse_answer(include_usage: bool) -> bytes:
    head = b'{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini"'
    null = b',"usage":null' if include_usage else b""
    events = [b"data: " + head + b',"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]' + null + b"}"]
    for word in WORDS:
        delta = b'{"content":" ' + word.encode() + b'"}'
        events.append(b"data: " + head + b',"choices":[{"index":0,"delta":' + delta + b"}]" + null + b"}")
    events.append(b"data: " + head + b',"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]' + null + b"}")
    if include_usage:
        usage = b'"usage":{"prompt_tokens":27,"completion_tokens":21,"total_tokens":48}'
        events.append(b"data: " + head + b',"choices":[],' + usage + b"}")
    events.append(b"data: [DONE]")
    return b"".join(b"%x\r\n%s\n\n\r\n" % (len(e) + 2, e) for e in events) + b"0\r\n\r\n"


def serve_upstream(port: int) -> None:
    import httptools
    import uvloop

    json_response = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
        b"x-request-id: req_bench\r\n\r\n%s" % (len(JSON_ANSWER), JSON_ANSWER)
    )
    sse_head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    sse = {True: sse_head + _sse_answer(True), False: sse_head + _sse_answer(False)}

    class Upstream(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport
            self.body = b""
            self.parser = httptools.HttpRequestParser(self)

        def data_received(self, data: bytes) -> None:
            self.parser.feed_data(data)

        def on_body(self, body: bytes) -> None:
            self.body += body

        def on_message_complete(self) -> None:
            body, self.body = self.body, b""
            if b'"stream":true' in body:
                self.transport.write(sse[b'"include_usage":true' in body])
            else:
                self.transport.write(json_response)

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Upstream, "127.0.0.1", port, backlog=1024)
        await server.serve_forever()

    uvloop.run(main())


# --- setup: database, key, processes --------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _environment(database_url: str, upstream_port: int, data_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        "TRACERELAY_OPENAI_BASE_URL": f"http://127.0.0.1:{upstream_port}/v1",
        "TRACERELAY_DATA_DIR": str(data_dir),
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }


def _prepare_database(database_url: str, env: dict[str, str]) -> str:
    """Create and migrate the bench database if needed; a team and a production key in it."""
    import psycopg

    base, _, name = database_url.rpartition("/")
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL")})
    import django

    django.setup()
    from accounts.models import Team
    from accounts.services import api_key_create

    team, _ = Team.objects.get_or_create(name="proxy-bench")
    _, raw = api_key_create(team=team, environment="production", name="bench", actor="bench")
    return raw


def _trace_count() -> int:
    from traces.models import Trace

    return Trace.objects.filter(team__name="proxy-bench").count()


def _wait_http(url: str, timeout: float = 60) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _process_tree(pid: int) -> list[int]:
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        for child in children:
            pids.extend(_process_tree(int(child)))
    return pids


def _cpu_seconds(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / ticks


# --- measurement ----------------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:7.3f} ms"


def _count(headers: dict[str, str]) -> None:
    global PROXIED_CALLS
    if "x-service-key" in headers:
        PROXIED_CALLS += 1


async def _json_call(session: Any, url: str, headers: dict[str, str]) -> float:
    _count(headers)
    started = time.perf_counter()
    async with session.post(url, data=CHAT_BODY, headers=headers) as response:
        await response.read()
        assert response.status == 200, response.status
    return time.perf_counter() - started


async def _stream_call(session: Any, url: str, headers: dict[str, str]) -> tuple[float, float]:
    _count(headers)
    started = time.perf_counter()
    async with session.post(url, data=STREAM_BODY, headers=headers) as response:
        assert response.status == 200, response.status
        await response.content.readany()
        first = time.perf_counter() - started
        while await response.content.readany():
            pass
    return first, time.perf_counter() - started


async def concurrency_one(direct: str, proxied: str, key: str, n: int) -> dict[str, float]:
    import aiohttp

    json_headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    proxy_headers = {**json_headers, "x-service-key": key}
    connector = aiohttp.TCPConnector(limit=4)
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(300):  # warm up both paths (caches, connection pools, JIT-free but branchy)
            await _json_call(session, direct, json_headers)
            await _json_call(session, proxied, proxy_headers)
            await _stream_call(session, direct, json_headers)
            await _stream_call(session, proxied, proxy_headers)
        d_json, p_json, d_first, p_first, d_last, p_last = [], [], [], [], [], []
        for _ in range(n):
            d_json.append(await _json_call(session, direct, json_headers))
            p_json.append(await _json_call(session, proxied, proxy_headers))
        for _ in range(n):
            first, last = await _stream_call(session, direct, json_headers)
            d_first.append(first)
            d_last.append(last)
            first, last = await _stream_call(session, proxied, proxy_headers)
            p_first.append(first)
            p_last.append(last)
    results = {}
    print(f"\n[1] concurrency 1, {n} direct and {n} proxied calls of each kind, interleaved")
    print(f"    {'':26}{'direct p50':>12}{'proxied p50':>13}{'added p50':>12}{'direct p99':>12}{'proxied p99':>13}")
    for label, direct_values, proxied_values in (
        ("JSON", d_json, p_json),
        ("stream first byte", d_first, p_first),
        ("stream last byte", d_last, p_last),
    ):
        added50 = statistics.median(proxied_values) - statistics.median(direct_values)
        added99 = _pct(proxied_values, 0.99) - _pct(direct_values, 0.99)
        results[label] = added50
        results[label + " p99"] = added99
        print(
            f"    {label:26}{statistics.median(direct_values) * 1000:10.3f}ms"
            f"{statistics.median(proxied_values) * 1000:11.3f}ms{added50 * 1000:10.3f}ms"
            f"{_pct(direct_values, 0.99) * 1000:10.3f}ms{_pct(proxied_values, 0.99) * 1000:11.3f}ms"
            f"   added p99 {added99 * 1000:.3f} ms"
        )
    return results


async def closed_loop(url: str, key: str, concurrency: int, seconds: float, proxy_pids: list[int]) -> dict[str, float]:
    import aiohttp

    headers = {"content-type": "application/json", "authorization": "Bearer sk-bench", "x-service-key": key}
    latencies: list[float] = []
    stop_at = 0.0

    async def worker(session: aiohttp.ClientSession) -> None:
        while time.perf_counter() < stop_at:
            latencies.append(await _json_call(session, url, headers))

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        stop_at = time.perf_counter() + 1.0  # warm-up second, not counted
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        latencies.clear()
        cpu_before = _cpu_seconds(proxy_pids)
        started = time.perf_counter()
        stop_at = started + seconds
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
        cpu = _cpu_seconds(proxy_pids) - cpu_before
    rate = len(latencies) / elapsed
    per_core = len(latencies) / cpu if cpu else float("nan")
    print(
        f"    concurrency {concurrency:3}: {rate:7.0f} requests/s wall clock, p50 {_ms(statistics.median(latencies))},"
        f" p99 {_ms(_pct(latencies, 0.99))}; proxy CPU {cpu:5.2f} s for {len(latencies)} requests"
        f" = {per_core:6.0f} requests/s per busy proxy core"
    )
    return {"rate": rate, "per_core": per_core, "cpu_share": cpu / elapsed}


async def open_loop(targets: list[tuple[str, dict[str, str]]], rate: float, seconds: float) -> list[list[float]]:
    """Offer each target ``rate`` requests/s at once, on interleaved schedules, so that both see the
    same moments of the machine (on a shared box, noise from other processes hits both alike)."""
    import aiohttp

    latencies: list[list[float]] = [[] for _ in targets]
    errors = 0

    async def one(session: aiohttp.ClientSession, target: int, scheduled: float) -> None:
        nonlocal errors
        url, headers = targets[target]
        _count(headers)
        try:
            async with session.post(url, data=CHAT_BODY, headers=headers) as response:
                await response.read()
                if response.status != 200:
                    errors += 1
        except aiohttp.ClientError:
            errors += 1
        latencies[target].append(time.perf_counter() - scheduled)  # from when it should have started

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        tasks = []
        start = time.perf_counter() + 0.2
        step = 1 / (rate * len(targets))
        for i in range(int(rate * seconds) * len(targets)):
            scheduled = start + i * step
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(session, i % len(targets), scheduled)))
        await asyncio.gather(*tasks)
    assert errors == 0, f"{errors} failed requests"
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/tracerelay_proxy_bench")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="uvicorn workers (default: cores)")
    parser.add_argument("--requests", type=int, default=3000, help="calls of each kind at concurrency 1")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each load run")
    parser.add_argument("--rate", type=float, default=500.0, help="offered requests/s for the open-loop run")
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test of the script)")
    parser.add_argument("--phases", default="1,2,3", help="which of the three measurements to run (default all)")
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return
    if args.quick:
        args.requests, args.seconds = 300, 2.0

    import tempfile

    import uvloop

    upstream_port, proxy_port = _free_port(), _free_port()
    data_dir = Path(tempfile.mkdtemp(prefix="proxy-bench-"))
    env = _environment(args.database_url, upstream_port, data_dir)
    key = _prepare_database(args.database_url, env)
    traces_before = _trace_count()

    upstream = subprocess.Popen([sys.executable, __file__, "--serve-upstream", str(upstream_port)], cwd=ROOT)
    proxy = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--loop", "uvloop", "--http", "httptools"]
        + ["--workers", str(args.workers), "--host", "127.0.0.1", "--port", str(proxy_port), "--no-access-log"],
        cwd=ROOT,
        env=env,
    )
    try:
        _wait_http(f"http://127.0.0.1:{upstream_port}/v1/models")
        _wait_http(f"http://127.0.0.1:{proxy_port}/healthz")
        time.sleep(1.0)  # all workers up
        direct = f"http://127.0.0.1:{upstream_port}/v1/chat/completions"
        proxied = f"http://127.0.0.1:{proxy_port}/api/v1/proxy/chat/completions"
        proxy_pids = _process_tree(proxy.pid)
        print(
            f"machine: {os.cpu_count()} cores; proxy: uvicorn, {args.workers} worker(s), uvloop + httptools; "
            f"trace capture on, Postgres {args.database_url.rsplit('/', 1)[1]}, Redis"
        )

        phases = {int(p) for p in args.phases.split(",")}
        one: dict[str, float] = {}
        loads: dict[int, dict[str, float]] = {}
        added_p99 = float("nan")
        if 1 in phases:
            one = uvloop.run(concurrency_one(direct, proxied, key, args.requests))
        if 2 in phases:
            print(f"\n[2] closed loop through the proxy, {args.seconds:.0f} s each")
            loads = {c: uvloop.run(closed_loop(proxied, key, c, args.seconds, proxy_pids)) for c in (16, 64)}
        if 3 in phases:
            print(
                f"\n[3] open loop: {args.rate:.0f} requests/s offered to the proxy and, at the same time and "
                f"interleaved, {args.rate:.0f}/s straight to the upstream, {args.seconds:.0f} s (after 2 s unmeasured)"
            )
            headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
            targets = [(direct, headers), (proxied, {**headers, "x-service-key": key})]
            uvloop.run(open_loop(targets, args.rate, 2.0))  # connections and caches as in steady state
            d, p = uvloop.run(open_loop(targets, args.rate, args.seconds))
            added_p99 = _pct(p, 0.99) - _pct(d, 0.99)
            print(f"    direct  p50 {_ms(statistics.median(d))}  p99 {_ms(_pct(d, 0.99))}")
            print(f"    proxied p50 {_ms(statistics.median(p))}  p99 {_ms(_pct(p, 0.99))}  added p99 {_ms(added_p99)}")

        time.sleep(2.0)  # the writers' last batches
        stored = _trace_count() - traces_before
    finally:
        proxy.send_signal(signal.SIGTERM)  # the writers drain on shutdown
        proxy.wait(60)
        upstream.terminate()
        upstream.wait(10)
    stored_after_drain = _trace_count() - traces_before
    print(
        f"\n{PROXIED_CALLS} proxied calls; traces stored: {stored} two seconds after the last call, "
        f"{stored_after_drain} after shutdown (the writers drain)"
    )

    nan = float("nan")
    best = max((v["per_core"] for v in loads.values()), default=nan)
    print("\nsummary (target)")
    print(f"    JSON added p50 {_ms(one.get('JSON', nan))}   (≤ 1 ms)")
    print(f"    JSON added p99 {_ms(one.get('JSON p99', nan))}   (≤ 3 ms)")
    print(f"    stream added TTFB p50 {_ms(one.get('stream first byte', nan))} (≤ 1.5 ms)")
    print(f"    stream added last byte p50 {_ms(one.get('stream last byte', nan))}")
    print(f"    requests/s per busy proxy core {best:7.0f}     (≥ 1,000)")
    print(f"    added p99 at {args.rate:.0f} requests/s {_ms(added_p99)}   (< 10 ms)")


if __name__ == "__main__":
    main()
