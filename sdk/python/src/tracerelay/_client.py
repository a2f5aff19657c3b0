"""The client: a bounded queue the application's threads append to, and one daemon thread that sends.

The caller's side (`record`) is a length check and a `deque.append`; everything else (building the
trace, sampling, JSON, gzip, HTTP, retries) happens on the worker thread. When the queue is full the
newest record is dropped and counted, so a server that is down costs the application a bounded amount
of memory and nothing else.

`flush` and `shutdown` put a marker in the queue with a deadline. A flush starts the next attempt at
once (cutting a backoff wait short), and answers False as soon as it cannot succeed in time: the server
is unreachable (refused, unknown host), or the next backoff would end past its deadline; its traces stay
queued and are retried. At shutdown (exit) every pending batch gets one attempt, with no backoff and
within the deadline; once the server is unreachable or the time is spent, what is left is dropped and
counted failed, with one log line.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from typing import Any
from urllib.parse import quote

from ._answers import batch_outcome, failure, retryable, rules_outcome
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
# At shutdown the worker stops starting requests this long before the deadline (at most a quarter of
# it), and a request still in flight then is cut, so the counting and the log line fit in the time.
EXIT_MARGIN = 0.2
TIME_SPENT = "time"


class _Flush:
    """A marker in the queue: answered True once everything queued before it has been sent (or given
    up on), False as soon as the worker knows that cannot happen by `deadline` (monotonic)."""

    __slots__ = ("deadline", "done", "ok")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.done = threading.Event()
        self.ok = True

    def answer(self, ok: bool) -> None:
        if not self.done.is_set():
            self.ok = ok
            self.done.set()


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
        # Calls to tracerelay's own proxy are recorded there, not here (instrument/_wrap.py).
        self.proxy_prefix = f"{config.base_url}/api/v1/proxy/"
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
        self._hurry = threading.Event()  # a flush or the shutdown began: a backoff wait looks again
        self._flushes: list[_Flush] = []  # markers queued and not yet reached (under _lock)
        self._flush_calls = 0  # flushes begun so far: a backoff wait ends when a new one begins
        self._cutoff: float | None = None  # shutting down: no request starts after this (monotonic)
        self._exit_error = ""  # at exit: the last attempt's failure, for the one log line
        self._exit_over = ""  # at exit: why nothing more is tried (the server unreachable, or TIME_SPENT)
        self._in_flight = 0  # traces in the request being made (under _lock)
        self._frozen = False  # shutdown left a stuck worker behind: the counts are final (under _lock)
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
        """Send everything recorded so far; False when it cannot be done in `timeout` seconds."""
        if not self._thread.is_alive():
            return not self.queue
        marker = self._mark(time.monotonic() + timeout)
        return marker.done.wait(timeout) and marker.ok

    def shutdown(self, timeout: float) -> bool:
        """Flush and stop, never taking longer than `timeout`: one attempt per pending batch, no backoff;
        what is left when the server is unreachable or the time is spent is dropped and counted failed."""
        deadline = time.monotonic() + timeout
        with self._lock:
            failed_before = self.counts["failed"]
        self._cutoff = deadline - min(EXIT_MARGIN, timeout / 4)
        done = not self.queue
        if self._thread.is_alive():
            marker = self._mark(deadline)
            done = marker.done.wait(max(0.0, self._cutoff - time.monotonic()))
            if not done:
                abort = getattr(self.transport, "abort", None)
                if abort is not None:
                    abort()  # a request in flight (a server that never answers) ends now
                done = marker.done.wait(max(0.0, deadline - time.monotonic()))
            done = done and marker.ok
        self._stop.set()
        self._wake.set()
        self._thread.join(max(0.05, deadline - time.monotonic()))
        if self._thread.is_alive() or self.queue:  # stuck (a DNS look-up cannot be cut), or never started
            self._abandon()
        self.transport.close()
        with self._lock:
            lost = self.counts["failed"] - failed_before
        if lost:
            why = self._exit_over or self._exit_error
            if why in (TIME_SPENT, ""):
                why = f"shutdown_timeout ({timeout:g} s) ran out"
                if self._exit_error:
                    why += f", last error: {self._exit_error}"
            message = f"tracerelay: {lost} trace(s) not sent at exit: {why}; counted failed in tracerelay.stats()"
            self._warn("unreachable", message, at_exit=True)
        return done and not lost

    def _mark(self, deadline: float) -> _Flush:
        marker = _Flush(deadline)
        with self._lock:
            self._flushes.append(marker)
            self._flush_calls += 1
        self.queue.append(marker)
        self._wake.set()
        self._hurry.set()
        return marker

    def _abandon(self) -> None:
        """Shutdown's deadline passed with the worker still busy: count what it holds and what is queued
        as failed, and freeze the counts (the worker, if it ever wakes, changes nothing)."""
        with self._lock:
            if not self._frozen:
                self.counts["failed"] += self._in_flight + self._empty_queue()
                self._frozen = True

    def _empty_queue(self) -> int:
        """Take everything queued (under _lock): markers are answered False, records counted (returned),
        not built."""
        records = 0
        while True:
            try:
                item = self.queue.popleft()
            except IndexError:
                break
            if isinstance(item, _Flush):
                item.answer(False)
            else:
                records += 1
        self._flushes.clear()  # all of them were in the queue
        return records

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
                self._drain(everything=self._eager or not woken or bool(self._flushes))
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
                    if item in self._flushes:
                        self._flushes.remove(item)
                item.answer(not self._exit_over)
                continue
            taken = (taken + 1) % self._batch_size
            body = self._encode(item)
            if body is None:
                continue
            if pending and size + len(body) > MAX_REQUEST_BYTES:
                self._send(pending)
                pending, size = [], 0
            pending.append(body)
            size += len(body)
            if len(pending) >= self._batch_size:
                self._send(pending)
                pending, size = [], 0
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
        with self._lock:
            self._in_flight = len(bodies)
        try:
            outcome = self._send_once(bodies)
        except Exception as exc:  # a bug of ours or a transport's: lose these traces, keep the worker
            outcome = {"failed": len(bodies)}
            self._warn("send", f"tracerelay: sending failed ({type(exc).__name__}: {exc})")
        with self._lock:  # counted and no longer in flight at once: `_abandon` counts each trace once
            self._in_flight = 0
            if not self._frozen:
                for name, n in outcome.items():
                    self.counts[name] += n

    def _send_once(self, bodies: list[bytes]) -> dict[str, int]:
        """The request's outcome: how many traces to count under which counter."""
        if len(bodies) == 1:
            path, body = "/api/v1/traces", bodies[0]
        else:
            path, body = "/api/v1/traces/batch", b'{"traces":[' + b",".join(bodies) + b"]}"
        answer = self._deliver("POST", path, body, len(bodies))
        if answer is None:
            return {"failed": len(bodies)}
        outcome, warnings = batch_outcome(answer, len(bodies))
        for kind, message in warnings:
            self._warn(kind, message)
        return outcome

    def _deliver(self, method: str, path: str, body: bytes, count: int) -> Answer | None:
        """One request, retried on 429, 5xx and network errors; None when every attempt failed.

        Shutting down: one attempt, no backoff, within the deadline; an unreachable server drops the rest.
        """
        delay = 0.5
        answer = Answer(0)
        for attempt in range(self.config.max_retries + 1):
            timeout = self.config.timeout
            if self._cutoff is not None:
                timeout = min(timeout, self._cutoff - time.monotonic())
                if timeout <= 0 or self._exit_over:
                    self._give_up_at_exit(self._exit_over or TIME_SPENT)
                    return None
            started = time.perf_counter()
            answer = self.transport.request(method, path, body, timeout=timeout)
            self._count("requests")
            if self.config.debug:
                took, outcome = (time.perf_counter() - started) * 1000, answer.status or answer.error
                sent = f"{count} trace(s), {len(body)} bytes, key {self.config.masked_key()}"
                log.debug(f"tracerelay: {method} {path} ({sent}) → {outcome} in {took:.1f} ms")
            if not retryable(answer):
                return answer
            if self._cutoff is not None:  # at exit: this batch had its attempt
                self._exit_error = failure(self.config.base_url, answer)
                if answer.unreachable:
                    self._give_up_at_exit(self._exit_error)
                return None
            if answer.unreachable:
                self._fail_flushes()  # no server there: a flush waiting for it fails now
            if attempt == self.config.max_retries:
                break
            wait = answer.retry_after if answer.retry_after is not None else delay * random.uniform(0.5, 1.5)
            self._count("retries")
            self._backoff(min(wait, MAX_BACKOFF))
            delay = min(delay * 2, MAX_BACKOFF)
        self._warn(
            "unreachable",
            f"tracerelay: could not deliver to {self.config.base_url} "
            f"({answer.status or answer.error}); traces are dropped and counted in tracerelay.stats()",
        )
        return None

    def _backoff(self, seconds: float) -> None:
        """Wait before the next attempt; a flush or the shutdown beginning meanwhile ends the wait (the
        next attempt goes at once), and a flush whose deadline comes first is answered False now."""
        resume = time.monotonic() + seconds
        flushes = self._flush_calls
        while self._cutoff is None and self._flush_calls == flushes:
            left = resume - time.monotonic()
            if left <= 0:
                return
            self._fail_flushes(due_before=resume)
            self._hurry.wait(left)
            self._hurry.clear()

    def _fail_flushes(self, *, due_before: float | None = None) -> None:
        """Answer False the flushes waiting (those due before `due_before`): they cannot succeed in time.
        Their traces stay queued for the next attempts."""
        with self._lock:
            waiting = [m for m in self._flushes if due_before is None or m.deadline < due_before]
        for marker in waiting:
            marker.answer(False)

    def _give_up_at_exit(self, why: str) -> None:
        """At exit, with the server unreachable or the time spent: count every queued trace failed (never
        built: no time for it) and answer the markers; shutdown logs the one line."""
        self._exit_over = why
        with self._lock:
            lost = self._empty_queue()
        self._count("failed", lost)

    def _register_rules(self) -> None:
        name = self.config.service_name
        if not name:
            self.routing_rules_status = "skipped: no service_name"
            log.warning("tracerelay: routing_rules are registered per service: pass service_name= to init")
            return
        path = f"/api/v1/routing/rules/services/{quote(name, safe='')}"
        answer = self._deliver("PUT", path, dumps({"rules": self.config.routing_rules}), 0)
        rules = self.config.routing_rules or ()
        self.routing_rules_status, level, message = rules_outcome(answer, name, len(rules))
        if message:
            log.log(level, message)

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            if not self._frozen:
                self.counts[name] += n

    def _warn(self, kind: str, message: str, *, at_exit: bool = False) -> None:
        """Each kind of trouble once at WARNING, then at DEBUG: a down server must not flood the app's logs.

        Quiet on a worker shutdown left behind: the interpreter may be finalizing under it."""
        if self._frozen and not at_exit:
            return
        if kind in self._warned:
            log.debug(message)
        else:
            self._warned.add(kind)
            log.warning(message)
