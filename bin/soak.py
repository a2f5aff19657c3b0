#!/usr/bin/env python3
"""A soak of a running tracerelay: minutes of mixed use, then the bill.

Concurrently, for ``--seconds``: single traces (POST /api/v1/traces) and batches of 50
(/api/v1/traces/batch), every one routed to a webhook receiver on loopback; feed reads
(/api/v1/traces, filtered); analytics reads (/api/v1/analytics, grouped and by interval); a report
run now and half-way (until it has succeeded); a spend alert that beat evaluates on its schedule.
Then it waits for every accepted trace to reach the receiver. It fails on any 5xx or refused
connection, on any accepted trace the receiver never got, on a report run that did not succeed, on
an alert that was never evaluated, and (given the server's log) on "database is locked",
"Unrecoverable error" or a process that exited.

    python3 bin/soak.py http://127.0.0.1:8000 tr_prod_… [--seconds 180] [--log run.log]

bin/smoke runs it on the embedded default. Standard library only.
"""

from __future__ import annotations

import argparse
import http.server
import json
import random
import secrets
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

BAD_LINES = ("database is locked", "Unrecoverable error", "exited unexpectedly")
DELIVERY_WAIT_S = 240.0  # after the soak: every accepted trace must have arrived by then
MODELS = [("gpt-4o", "openai"), ("gpt-4o-mini", "openai"), ("claude-sonnet-4", "anthropic")]


class SoakFailure(Exception):
    pass


class Receiver:
    """The webhook destination: the trace ids it got (POST /traces) and alert notifications (/alert)."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.alerts = 0
        self.changed = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.changed:
                    if self.path.startswith("/alert"):
                        receiver.alerts += 1
                    else:
                        payload = json.loads(body)
                        receiver.ids.update(t["id"] for t in payload.get("traces", []))
                    receiver.changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def missing(self, sent: set[str]) -> set[str]:
        with self.changed:
            return sent - self.ids

    def wait_for_all(self, sent: set[str], timeout: float) -> set[str]:
        deadline = time.monotonic() + timeout
        with self.changed:
            while sent - self.ids and time.monotonic() < deadline:
                self.changed.wait(min(1.0, max(0.0, deadline - time.monotonic())))
            return sent - self.ids

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Soak:
    def __init__(self, base: str, key: str, *, say: Callable[[str], None] = print) -> None:
        self.base, self.key, self.say = base.rstrip("/"), key, say
        self.run = secrets.token_hex(3)
        self.lock = threading.Lock()
        self.sent: set[str] = set()
        self.calls: Counter[str] = Counter()
        self.errors: list[str] = []
        self.stop = threading.Event()

    # --- HTTP -------------------------------------------------------------------------------------

    def call(self, what: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.key}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except OSError as exc:  # refused, reset, timed out: the service is not answering
            self.fail(f"{what}: {method} {path}: {type(exc).__name__}: {exc}")
            return 0, None
        with self.lock:
            self.calls[what] += 1
        if status >= 500:
            self.fail(f"{what}: {method} {path} answered {status}: {raw[:300]!r}")
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, None

    def fail(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)
        self.say(f"  SOAK ERROR {message}")

    def expect(self, status: int, what: str, method: str, path: str, body: Any = None) -> Any:
        got, answer = self.call(what, method, path, body)
        if got != status:
            raise SoakFailure(f"{what}: {method} {path}: expected {status}, got {got}: {answer}")
        return answer

    # --- the mix ----------------------------------------------------------------------------------

    def trace(self, ident: str) -> dict[str, Any]:
        model, provider = random.choice(MODELS)
        trace = {
            "id": ident,
            "model": model,
            "provider": provider,
            "prompt_tokens": random.randint(10, 2000),
            "completion_tokens": random.randint(1, 500),
            "latency_ms": random.randint(80, 4000),
            "tags": ["soak", random.choice(["alpha", "beta"])],
            "metadata": {"soak": self.run},
            "environment": random.choice(["production", "development"]),
        }
        if random.random() < 0.1:
            trace["error"] = {"type": "rate_limit", "message": "slow down"}
        return trace

    def singles(self, worker: int) -> None:
        n = 0
        while not self.stop.is_set():
            ident = f"soak-{self.run}-s{worker}-{n}"
            status, _ = self.call("single ingest", "POST", "/api/v1/traces", self.trace(ident))
            if status in (200, 201):
                with self.lock:
                    self.sent.add(ident)
            elif status:
                self.fail(f"single ingest: {ident} answered {status}")
            n += 1
            self.stop.wait(0.05)

    def batches(self) -> None:
        n = 0
        while not self.stop.is_set():
            traces = [self.trace(f"soak-{self.run}-b{n}-{i}") for i in range(50)]
            status, answer = self.call("batch ingest", "POST", "/api/v1/traces/batch", {"traces": traces})
            if status == 200 and answer:
                stored = {t["id"] for t, r in zip(traces, answer["results"], strict=True) if r["status"] in (200, 201)}
                with self.lock:
                    self.sent |= stored
                if len(stored) != len(traces):
                    self.fail(f"batch ingest: {len(traces) - len(stored)} traces of batch {n} refused")
            elif status:
                self.fail(f"batch ingest: batch {n} answered {status}: {answer}")
            n += 1
            self.stop.wait(1.5)

    def reads(self, what: str, paths: list[str], pause: float) -> None:
        while not self.stop.is_set():
            for path in paths:
                status, _ = self.call(what, "GET", path)
                if status and status != 200:
                    self.fail(f"{what}: GET {path} answered {status}")
                if self.stop.wait(pause):
                    return

    def report_run(self, report_id: int) -> None:
        run = self.expect(202, "report run", "POST", f"/api/v1/reports/{report_id}/run")
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            status, answer = self.call("report run", "GET", f"/api/v1/reports/{report_id}/runs/{run['id']}")
            if status == 200 and answer["status"] == "succeeded":
                self.say(f"  report run {run['id']} succeeded")
                return
            if status == 200 and answer["status"] == "failed":
                break
            time.sleep(1)
        self.fail(f"report run {run['id']} did not succeed: {answer}")

    # --- the whole soak ---------------------------------------------------------------------------

    def soak(self, seconds: float, log_path: Path | None = None) -> dict[str, Any]:
        receiver = Receiver()
        try:
            return self._soak(receiver, seconds, log_path)
        finally:
            receiver.close()

    def _soak(self, receiver: Receiver, seconds: float, log_path: Path | None) -> dict[str, Any]:
        log_start = log_path.stat().st_size if log_path else 0
        hook = f"soak-hook-{self.run}"
        integration = {"name": hook, "platform": "webhook", "config": {"url": f"{receiver.base}/traces"}}
        self.expect(201, "setup", "POST", "/api/v1/integrations", integration)
        self.expect(200, "setup", "PUT", "/api/v1/routing/rules", {"rules": [{"name": "all", "destinations": [hook]}]})
        report = self.expect(
            201,
            "setup",
            "POST",
            "/api/v1/reports",
            {"name": f"soak {self.run}", "group_by": "model", "time_range": "24h", "interval": "hour",
             "formats": ["csv", "pdf"], "recipients": []},
        )  # fmt: skip
        alert = self.expect(
            201,
            "setup",
            "POST",
            "/api/v1/alerts",
            {"name": f"soak spend {self.run}", "metric": "cost", "threshold": 0.000001,
             "window": {"type": "rolling", "minutes": 60}, "scope": {},
             "notify": {"webhooks": [{"url": f"{receiver.base}/alert"}]}},
        )  # fmt: skip
        started = time.monotonic()
        feed = ["/api/v1/traces?limit=50", "/api/v1/traces?status=error&limit=20", "/api/v1/traces?tag=beta&limit=20"]
        analytics = [
            "/api/v1/analytics?time_range=1h",
            "/api/v1/analytics?time_range=1h&group_by=model",
            "/api/v1/analytics?time_range=24h&interval=hour&group_by=provider",
        ]
        threads = [
            threading.Thread(target=self.singles, args=(0,)),
            threading.Thread(target=self.singles, args=(1,)),
            threading.Thread(target=self.batches),
            threading.Thread(target=self.reads, args=("feed read", feed, 0.3)),
            threading.Thread(target=self.reads, args=("analytics read", analytics, 0.5)),
            threading.Thread(target=self.report_run, args=(report["id"],)),
        ]
        for thread in threads:
            thread.start()
        half = threading.Timer(seconds / 2, self.report_run, args=(report["id"],))
        half.start()
        while time.monotonic() - started < seconds:
            time.sleep(min(30.0, seconds - (time.monotonic() - started)))
            if time.monotonic() - started < seconds:
                with self.lock:
                    sent = set(self.sent)
                self.say(
                    f"  {time.monotonic() - started:.0f}s: {len(sent)} traces accepted,"
                    f" {len(sent) - len(receiver.missing(sent))} delivered, {sum(self.calls.values())} calls,"
                    f" {len(self.errors)} errors"
                )
        self.stop.set()
        soaked = time.monotonic() - started
        half.join()
        for thread in threads:
            thread.join()
        with self.lock:
            sent = set(self.sent)
        waited = time.monotonic()
        lost = receiver.wait_for_all(sent, DELIVERY_WAIT_S)
        if lost:
            self.fail(f"{len(lost)} of {len(sent)} accepted traces never reached the webhook, e.g. {sorted(lost)[:5]}")
        events = self.expect(200, "alert events", "GET", f"/api/v1/alerts/{alert['id']}/events")
        if not events["data"] and not receiver.alerts:
            self.fail("the spend alert was never evaluated past its threshold (no event, no notification)")
        if log_path is not None:
            with open(log_path, "rb") as handle:
                handle.seek(log_start)
                text = handle.read().decode(errors="replace")
            for needle in BAD_LINES:
                if needle in text:
                    line = next(line for line in text.splitlines() if needle in line)
                    self.fail(f"the server's log says {needle!r}: {line.strip()[:300]}")
        result = {
            "seconds": round(soaked, 1),
            "traces": len(sent),
            "delivered": len(sent) - len(lost),
            "last_delivery_after_s": round(time.monotonic() - waited, 1),
            "calls": dict(self.calls),
            "alert_events": len(events["data"]),
            "errors": list(self.errors),
        }
        if self.errors:
            raise SoakFailure(f"{len(self.errors)} errors in the soak: " + "; ".join(self.errors[:10]))
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("key")
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--log", type=Path, help="the server's log: checked for lines that mean trouble")
    args = parser.parse_args()
    try:
        result = Soak(args.url, args.key).soak(args.seconds, args.log)
    except SoakFailure as exc:
        print(f"SOAK FAILED: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
