"""Fault drill: a delivery worker killed with SIGKILL while ~800 rows are being sent.

    .venv/bin/python bench/delivery_drill.py [--traces 1000] [--threads 8] [--code DIR] [--lease-s S]

What it runs (all on loopback): its own redis-server, a Postgres database of its own
(``tracerelay_bench_drill``, made afresh and migrated), a webhook receiver in this process that
records every request's ``X-Tracerelay-Delivery`` and trace ids, Celery beat (the outbox sweeper,
production settings) and ONE delivery worker process (``-P threads -c 8``, as docs/delivery.md
recommends). Then:

1. ``--traces`` traces are ingested through the API's service in batches of 100 (one task each);
   the receiver holds every request, so 8 threads × 100 rows sit in ``sending``;
2. the worker is killed with SIGKILL; the receiver then finishes the requests it held and stores
   them (their sender is gone: a real receiver would have stored them too);
3. a new worker is started at once, and the clock runs until every trace is delivered.

It prints the time until the dead worker's rows were taken back, the time until every trace was
delivered, the re-sent batches' overlap with the batches they repeat, and what a receiver that
deduplicates on the delivery header alone would have kept twice.

``--code DIR`` runs another checkout of the project (e.g. ``git archive main | tar -x -C DIR``)
with this script and this virtualenv: the before/after comparison on the same machine.
"""

from __future__ import annotations

import argparse
import json
import logging
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
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
CELERY = str(Path(sys.executable).parent / "celery")
DATABASE = "tracerelay_bench_drill"


# --- the receiver ----------------------------------------------------------------------------------


@dataclass
class Request:
    arrived: float
    delivery: str
    ids: list[str]


@dataclass
class Receiver:
    """Notes every request as it arrives and stores it (all of it: the receiver has no dedupe of
    its own) before answering; while ``slow`` is set it holds each one until released."""

    arrivals: list[Request] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)  # stored
    cut_short: int = 0  # requests whose sender died while sending the body
    slow: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self) -> str:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    ids = [t["id"] for t in json.loads(raw)["traces"]]
                except ValueError:
                    with receiver.lock:
                        receiver.cut_short += 1
                    return
                request = Request(time.monotonic(), self.headers.get("X-Tracerelay-Delivery", ""), ids)
                with receiver.lock:
                    receiver.arrivals.append(request)
                if receiver.slow.is_set():
                    receiver.released.wait(600)
                with receiver.lock:
                    receiver.requests.append(request)
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                except OSError:
                    pass  # the sender died while we held its request

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}/hook"

    def snapshot(self) -> list[Request]:
        with self.lock:
            return list(self.requests)

    def arrived(self) -> list[Request]:
        with self.lock:
            return list(self.arrivals)


# --- processes -------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proc:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def wait_until(predicate: Any, timeout: float, what: str, every: float = 0.1) -> float:
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)
    return time.monotonic()


# --- the drill -------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=8, help="threads of the delivery worker")
    parser.add_argument("--code", type=Path, default=HERE.parent, help="the checkout to run (default: this one)")
    parser.add_argument("--lease-s", type=float, help="TRACERELAY_DELIVERY_LEASE_S (default: the code's own)")
    parser.add_argument("--timeout", type=float, default=900, help="give up after this many seconds")
    args = parser.parse_args()
    code = args.code.resolve()

    workdir = Path(tempfile.mkdtemp(prefix="bench-drill-"))
    redis_port = free_port()
    server = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tracerelay").rsplit("/", 1)[0]
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"{server}/{DATABASE}",
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "TRACERELAY_DATA_DIR": str(workdir / "data"),
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(code),
        "PYTHONUNBUFFERED": "1",
    }
    if args.lease_s is not None:
        env["TRACERELAY_DELIVERY_LEASE_S"] = str(args.lease_s)
    os.environ.update({k: v for k, v in env.items() if k not in ("PYTHONUNBUFFERED",)})
    sys.path.insert(0, str(code))
    os.chdir(code)  # Celery's loader puts the working directory first on sys.path

    procs: list[Proc] = []
    load_before = os.getloadavg()
    try:
        redis_argv = [
            "redis-server",
            "--port",
            str(redis_port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        procs.append(Proc(redis_argv, env, code, workdir / "redis.log"))
        _recreate_database(server)
        subprocess.run([PYTHON, "manage.py", "migrate", "-v", "0"], env=env, cwd=code, check=True)

        import django

        django.setup()
        receiver = Receiver()
        principal = _setup(receiver.serve())

        def worker() -> Proc:
            argv = [CELERY, "-A", "config", "worker", "-Q", "delivery", "-P", "threads", "-c", str(args.threads),
                    "-n", f"drill-{uuid.uuid4().hex[:6]}@%h", "--without-gossip", "--without-mingle",
                    "--loglevel", "WARNING"]  # fmt: skip
            proc = Proc(argv, env, code, workdir / "worker.log")
            procs.append(proc)
            return proc

        beat_argv = [CELERY, "-A", "config", "beat", "-S", "django_celery_beat.schedulers:DatabaseScheduler",
                     "--loglevel", "WARNING"]  # fmt: skip
        procs.append(Proc(beat_argv, env, code, workdir / "beat.log"))
        first = worker()
        time.sleep(3)  # let the worker connect before the tasks are published

        print(f"code: {code}   traces: {args.traces}   worker: threads, {args.threads}   load: {_load(load_before)}")
        receiver.slow.set()
        _ingest(principal, args.traces)
        in_flight = args.threads * 100
        wait_until(lambda: _sending() >= min(in_flight, args.traces), 120, f"{in_flight} rows in sending")
        wait_until(lambda: len(receiver.arrived()) >= min(args.threads, -(-args.traces // 100)), 60, "the requests")
        held = _claims()
        originals = receiver.arrived()
        first.kill()
        killed = time.monotonic()
        print(f"killed the worker (SIGKILL) with {len(held)} rows in sending, {len(originals)} requests held")
        receiver.released.set()  # the receiver finishes and stores what it held
        receiver.slow.clear()
        worker()
        wait_until(lambda: _still_claimed(held) == 0, args.timeout, "the takeover", every=0.2)
        taken_over = time.monotonic()
        wait_until(lambda: _delivered(held) == len(held), args.timeout, "the taken-over rows delivered", every=0.2)
        resent = time.monotonic()
        wait_until(lambda: _delivered() == args.traces, args.timeout, "every trace delivered", every=0.2)
        done = time.monotonic()
        times = {"taken over": taken_over - killed, "re-sent": resent - killed, "all": done - killed}
        _report(receiver, originals, times, killed, args.traces, load_before)
    finally:
        logging.getLogger("config.invalidation").setLevel(logging.CRITICAL)  # Redis goes away now
        for proc in reversed(procs):
            proc.kill(signal.SIGTERM)
    print(f"(logs in {workdir})")


def _recreate_database(server: str) -> None:
    import psycopg

    with psycopg.connect(f"{server}/postgres".replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DATABASE}")


def _setup(hook_url: str) -> Any:
    from accounts.models import Team
    from accounts.selectors import principal_for_key
    from accounts.services import api_key_create
    from integrations.models import Integration
    from routing.models import RoutingRule, RuleSet
    from routing.services import routing_rules_touched

    team = Team.objects.create(name=f"drill-{uuid.uuid4().hex[:6]}")
    Integration.objects.create(
        team=team, name="hook", platform="webhook", config={"url": hook_url, "headers": {}}, timeout_s=120
    )
    RoutingRule.objects.create(
        team=team, name="all", destinations=[{"name": "hook", "sample_rate": 1.0, "tags": [], "fallback": []}]
    )
    RuleSet.objects.get_or_create(team=team)
    routing_rules_touched(team_id=team.pk, actor="drill")
    _, raw = api_key_create(team=team, environment="production", name="drill")
    return principal_for_key(raw)


def _ingest(principal: Any, count: int) -> None:
    from pipeline.services import traces_ingest

    item = {"model": "gpt-4o-mini", "prompt_tokens": 80, "completion_tokens": 20, "latency_ms": 250}
    for start in range(0, count, 100):  # one ingest → one task of its rows
        traces_ingest(principal=principal, items=[dict(item) for _ in range(min(100, count - start))], source="api")


def _sending() -> int:
    from delivery.models import Delivery

    return Delivery.objects.filter(status="sending").count()


def _claims() -> list[tuple[int, Any]]:
    from delivery.models import Delivery

    return list(Delivery.objects.filter(status="sending").values_list("pk", "claim_token"))


def _still_claimed(held: list[tuple[int, Any]]) -> int:
    """Rows still in sending under the dead worker's claim."""
    from delivery.models import Delivery

    tokens = {token for _, token in held}
    return Delivery.objects.filter(pk__in=[pk for pk, _ in held], status="sending", claim_token__in=tokens).count()


def _delivered(held: list[tuple[int, Any]] | None = None) -> int:
    from delivery.models import Delivery

    rows = Delivery.objects.filter(status="delivered")
    return (rows.filter(pk__in=[pk for pk, _ in held]) if held is not None else rows).count()


def _load(before: tuple[float, float, float]) -> str:
    return "/".join(f"{x:.1f}" for x in before) + " (1/5/15 min)"


def _report(
    receiver: Receiver, originals: list[Request], times: dict[str, float], killed: float, count: int, load: Any
) -> None:
    requests = receiver.snapshot()
    first_sends = {r.delivery: set(r.ids) for r in originals}
    in_originals = set().union(*first_sends.values()) if first_sends else set()
    resent = [r for r in requests if r.arrived > killed and in_originals & set(r.ids)]
    distinct = {i for r in requests for i in r.ids}
    seen: set[str] = set()
    kept = 0
    for r in requests:
        if r.delivery not in seen:
            seen.add(r.delivery)
            kept += len(r.ids)
    overlaps = []
    same = 0
    for r in resent:
        members = set(r.ids)
        best = max(len(members & o) for o in first_sends.values())
        overlaps.append(best)
        same += first_sends.get(r.delivery) == members
    sizes = sorted(len(o) for o in first_sends.values())
    print(f"time to takeover (kill → the dead worker's rows back to pending): {times['taken over']:.1f} s")
    print(f"the taken-over rows delivered again: {times['re-sent']:.1f} s after the kill")
    print(
        f"every trace delivered: {times['all']:.1f} s after the kill (the rows whose tasks the dead worker had "
        "prefetched but not started wait for the sweeper's grace period: TRACERELAY_OUTBOX_SWEEP_GRACE_S)"
    )
    print(
        f"requests stored: {len(requests)} in all, {len(originals)} of them held at the kill (sizes "
        f"{sizes[0]}–{sizes[-1]}) and stored after it; {receiver.cut_short} cut short by the kill"
    )
    if overlaps:
        print(
            f"re-sends of the held traces: {len(resent)} requests; {same} carry the same delivery id and the same "
            f"traces as the batch they repeat; best overlap with an original batch: min {min(overlaps)}, "
            f"median {statistics.median(overlaps):g}, max {max(overlaps)} traces"
        )
    print(
        f"delivered: {len(distinct)} of {count} distinct traces ({'all' if len(distinct) == count else 'NOT all'});"
        f" a receiver deduplicating on X-Tracerelay-Delivery alone keeps {kept}: {kept - len(distinct)} duplicates"
    )
    print(f"load average before {_load(load)}, after {_load(os.getloadavg())}")


if __name__ == "__main__":
    main()
