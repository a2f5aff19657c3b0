"""The client: a bounded queue the application's threads append to, and one daemon thread that sends.

The caller's side (`record`) is a length check and a `deque.append`; everything else (building the
trace, sampling, JSON, gzip, HTTP, retries) happens on the worker thread. When the queue is full the
newest record is dropped and counted, so a server that is down costs the application a bounded amount
of memory and nothing else.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from typing import Any
from urllib.parse import quote

from ._build import to_trace
from ._config import Config
from ._ids import sample_point
from ._jsonable import dumps
from ._records import Call, Span
from ._transport import Answer, Transport

log = logging.getLogger("tracerelay")

MAX_TRACE_BYTES = 1024 * 1024 - 4096  # the server's 1 MiB per trace, with room for what we add
MAX_REQUEST_BYTES = 5 * 1024 * 1024  # under the server's 10 MiB per batch
MAX_BACKOFF = 30.0
IDLE_WAKE = 1.0  # seconds: how often an idle worker in immediate mode looks at the queue anyway


class _Flush:
    """A marker in the queue: set once everything queued before it has been sent (or given up on)."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class Client:
    def __init__(self, config: Config, transport: Any = None) -> None:
        self.config = config
        self.transport = transport or Transport(
            config.base_url, config.api_key, timeout=config.timeout, compress=config.compress
        )
        self.counts = {
            "captured": 0,  # traces built from records
            "sent": 0,  # stored by the server (created, or already there)
            "dropped": 0,  # the queue was full: never built
            "sampled_out": 0,  # sampling_rate dropped them
            "failed": 0,  # given up after retries (server down, 5xx, 429 beyond max_retries)
            "rejected": 0,  # the server refused them (400, 401, 403, 413...): not retried
            "retries": 0,
            "requests": 0,
        }
        self.routing_rules_status = "not requested" if config.routing_rules is None else "pending"
        self._eager = not config.batch
        self._max = config.max_queue_size
        self._batch_size = config.batch_size
        self._warned: set[str] = set()
        self._start()

    def _start(self) -> None:
        self.queue: deque[Any] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._flushes = 0  # flush markers queued and not yet reached
        self._thread = threading.Thread(target=self._run, name="tracerelay-worker", daemon=True)
        self._thread.start()

    # --- the caller's side ----------------------------------------------------------------------

    def record(self, item: Call | Span) -> None:
        queue = self.queue
        if len(queue) >= self._max:
            with self._lock:
                self.counts["dropped"] += 1
            return
        queue.append(item)
        if self._eager or len(queue) >= self._batch_size:
            self._wake.set()

    def flush(self, timeout: float) -> bool:
        """Send everything recorded so far; False when `timeout` seconds were not enough."""
        if not self._thread.is_alive():
            return not self.queue
        marker = _Flush()
        with self._lock:
            self._flushes += 1
        self.queue.append(marker)
        self._wake.set()
        return marker.done.wait(timeout)

    def shutdown(self, timeout: float) -> bool:
        done = self.flush(timeout)
        self._stop.set()
        self._wake.set()
        self._thread.join(0.5 if done else 0.05)
        self.transport.close()
        return done

    def stats(self) -> dict[str, Any]:
        with self._lock:
            out: dict[str, Any] = dict(self.counts)
        out["queued"] = sum(1 for item in list(self.queue) if not isinstance(item, _Flush))
        out["routing_rules"] = self.routing_rules_status
        return out

    def after_fork(self) -> None:
        """In a forked child: the parent's worker thread is gone and its queue is the parent's to send."""
        self._start()

    # --- the worker thread ----------------------------------------------------------------------

    def _run(self) -> None:
        try:
            if self.config.routing_rules is not None:
                try:
                    self._register_rules()
                except Exception as exc:
                    self.routing_rules_status = f"failed: {type(exc).__name__}"
                    log.warning("tracerelay: routing_rules were not registered (%s)", exc)
            wait = IDLE_WAKE if self._eager else self.config.flush_interval
            while not self._stop.is_set():
                woken = self._wake.wait(wait)
                self._wake.clear()
                # Batch mode woken by the batch size sends full batches only: the rest waits for the
                # interval, a flush, or the next full batch.
                self._drain(everything=self._eager or not woken or self._flushes > 0)
            self._drain(everything=True)
        except Exception:  # never reached in normal operation; a dead worker must say why
            log.exception("tracerelay: the worker thread stopped")

    def _drain(self, *, everything: bool) -> None:
        pending: list[bytes] = []
        size = 0
        taken = 0  # records taken for the batch being filled
        while True:
            if not taken and not everything and len(self.queue) < self._batch_size:
                break
            try:
                item = self.queue.popleft()
            except IndexError:
                break
            if isinstance(item, _Flush):
                if pending:
                    self._send(pending)
                    pending, size = [], 0
                taken = 0
                with self._lock:
                    self._flushes -= 1
                item.done.set()
                continue
            taken = (taken + 1) % self._batch_size
            body = self._encode(item)
            if body is None:
                continue
            if pending and (len(pending) >= self._batch_size or size + len(body) > MAX_REQUEST_BYTES):
                self._send(pending)
                pending, size = [], 0
            pending.append(body)
            size += len(body)
        if pending:
            self._send(pending)

    def _encode(self, item: Call | Span) -> bytes | None:
        try:
            trace, group = to_trace(item, self.config)
        except Exception as exc:  # a provider object we could not read: lose this trace, not the worker
            self._count("failed")
            self._warn("build", f"tracerelay: could not build a trace ({type(exc).__name__}: {exc})")
            return None
        self._count("captured")
        rate = self.config.sampling_rate
        if rate < 1.0 and sample_point(group) >= rate:
            self._count("sampled_out")
            return None
        body = dumps(trace)
        if len(body) > MAX_TRACE_BYTES:
            size = len(body)
            trace["input"] = {"truncated": True, "bytes": size}
            trace["output"] = None
            body = dumps(trace)
        if self.config.debug:
            log.debug("tracerelay: trace %s", body.decode(errors="replace"))
        return body

    def _send(self, bodies: list[bytes]) -> None:
        try:
            self._send_once(bodies)
        except Exception as exc:  # a bug of ours or a transport's: lose these traces, keep the worker
            self._count("failed", len(bodies))
            self._warn("send", f"tracerelay: sending failed ({type(exc).__name__}: {exc})")

    def _send_once(self, bodies: list[bytes]) -> None:
        if len(bodies) == 1:
            path, body = "/api/v1/traces", bodies[0]
        else:
            path, body = "/api/v1/traces/batch", b'{"traces":[' + b",".join(bodies) + b"]}"
        answer = self._deliver("POST", path, body, len(bodies))
        if answer is None:
            self._count("failed", len(bodies))
            return
        if answer.status in (200, 201):
            self._count("sent", len(bodies))
        elif answer.status == 207 and isinstance(answer.body, dict):
            refused = int(answer.body.get("failed") or 0)
            self._count("sent", len(bodies) - refused)
            self._count("rejected", refused)
            for result in answer.body.get("results") or ():
                if isinstance(result, dict) and result.get("status", 0) >= 400:
                    self._warn("item", f"tracerelay: the server refused a trace: {result.get('errors')}")
        else:
            self._count("rejected", len(bodies))
            self._warn(
                f"status-{answer.status}",
                f"tracerelay: the server refused {len(bodies)} trace(s) with {answer.status}: {_detail(answer)}",
            )

    def _deliver(self, method: str, path: str, body: bytes, count: int) -> Answer | None:
        """One request, retried on 429, 5xx and network errors; None when every attempt failed."""
        delay = 0.5
        answer = Answer(0)
        for attempt in range(self.config.max_retries + 1):
            started = time.perf_counter()
            answer = self.transport.request(method, path, body)
            self._count("requests")
            if self.config.debug:
                log.debug(
                    "tracerelay: %s %s (%d trace(s), %d bytes, key %s) → %s in %.1f ms",
                    method,
                    path,
                    count,
                    len(body),
                    self.config.masked_key(),
                    answer.status or answer.error,
                    (time.perf_counter() - started) * 1000,
                )
            if not (answer.status == 0 or answer.status in (408, 429) or answer.status >= 500):
                return answer
            if attempt == self.config.max_retries:
                break
            wait = answer.retry_after if answer.retry_after is not None else delay * random.uniform(0.5, 1.5)
            self._count("retries")
            if self._stop.wait(min(wait, MAX_BACKOFF)):
                break  # shutting down: the bounded time at exit is spent
            delay = min(delay * 2, MAX_BACKOFF)
        self._warn(
            "unreachable",
            f"tracerelay: could not deliver to {self.config.base_url} "
            f"({answer.status or answer.error}); traces are dropped and counted in tracerelay.stats()",
        )
        return None

    def _register_rules(self) -> None:
        name = self.config.service_name
        if not name:
            self.routing_rules_status = "skipped: no service_name"
            log.warning("tracerelay: routing_rules are registered per service: pass service_name= to init")
            return
        path = f"/api/v1/routing/rules/services/{quote(name, safe='')}"
        answer = self._deliver("PUT", path, dumps({"rules": self.config.routing_rules}), 0)
        if answer is None:
            self.routing_rules_status = "failed: server unreachable"
        elif 200 <= answer.status < 300:
            self.routing_rules_status = "registered"
            log.debug("tracerelay: %d routing rule(s) registered for %s", len(self.config.routing_rules or ()), name)
        elif answer.status == 403:
            self.routing_rules_status = "refused: 403"
            log.warning(
                "tracerelay: this API key may not change routing rules (a production key can); "
                "routing_rules were not registered for %s",
                name,
            )
        elif answer.status == 404:
            self.routing_rules_status = "unsupported: 404"
            log.warning("tracerelay: the server does not accept per-service routing rules (too old?); ignored")
        else:
            self.routing_rules_status = f"refused: {answer.status}"
            log.warning("tracerelay: routing_rules were refused (%s): %s", answer.status, _detail(answer))

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] += n

    def _warn(self, kind: str, message: str) -> None:
        """Each kind of trouble once at WARNING, then at DEBUG: a down server must not flood the app's logs."""
        if kind in self._warned:
            log.debug(message)
        else:
            self._warned.add(kind)
            log.warning(message)


def _detail(answer: Answer) -> str:
    body = answer.body
    if isinstance(body, dict):
        return str(body.get("detail") or body.get("title") or body)[:500]
    return answer.error or "no detail"
