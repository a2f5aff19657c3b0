"""The background trace writer: a thread that turns captures into traces and stores them in batches.

The proxy's event loop only calls `TraceWriter.submit` (a queue put). The thread builds the trace
dicts (parsing bodies), groups them by API key and calls `traces_ingest`, one transaction per
group. When the database cannot be reached, batches are appended to a spool file (JSON lines,
fsynced) and replayed once it answers again; nothing is dropped and no call waits on it.

Spool files are safe to share between the processes of one host: each writer appends to a file
of its own and holds an exclusive `flock` on it while it does; a replaying writer only takes files
it can lock, so it never reads one that is still being written. Trace ids travel with the
traces, so replaying a file twice (a crash between storing and unlinking) stores nothing twice.
"""

from __future__ import annotations

import atexit
import fcntl
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson
from django.db import DataError, IntegrityError, close_old_connections, connections

from accounts.principals import KeyPrincipal
from pipeline.services import store_parts, traces_ingest

from .capture import Capture, build_trace

log = logging.getLogger(__name__)

Pair = tuple[KeyPrincipal, dict[str, Any]]
Ingest = Callable[..., Sequence[Any]]
# The database refused these items themselves: retrying cannot help, so they are set aside
# (rejected/, logged) instead of being retried forever. Anything else counts as an outage.
PERMANENT_ERRORS: tuple[type[BaseException], ...] = (IntegrityError, DataError)
MAX_BACKOFF = 30.0
REPLAY_CHECK_INTERVAL = 2.0


@dataclass(slots=True)
class WriterStats:
    stored: int = 0
    spooled: int = 0
    replayed: int = 0
    rejected: int = 0


class Spool:
    """Append-only JSON-lines files under ``directory``; rejected items go to ``directory/rejected``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._file: IO[bytes] | None = None
        self._lock = threading.Lock()  # the writer thread and an overflowing event loop both append

    def append(self, pairs: Sequence[Pair]) -> None:
        if not pairs:
            return
        lines = b"".join(_dump_line(principal, trace) for principal, trace in pairs)
        with self._lock:
            if self._file is None:
                self._file = self._open_new(self.directory)
            self._file.write(lines)
            self._file.flush()
            os.fsync(self._file.fileno())

    def reject(self, principal: KeyPrincipal, trace: dict[str, Any], reason: Any) -> None:
        """Set a trace aside, with why and when (`manage.py proxy_spool` lists and replays them)."""
        line = _dump_line(principal, trace, reason=reason, rejected_at=datetime.now(UTC).isoformat())
        with self._lock:
            append_locked(self.directory / "rejected" / f"rejected-{os.getpid()}.jsonl", line)

    def seal(self) -> None:
        """Close the file being appended to (releasing its lock) so it can be replayed."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def files(self) -> list[Path]:
        try:
            return sorted(p for p in self.directory.iterdir() if p.suffix == ".jsonl")
        except FileNotFoundError:
            return []

    @staticmethod
    def claim(path: Path) -> IO[bytes] | None:
        """The file opened and exclusively locked, or None when another writer holds it (or it is gone)."""
        try:
            handle = open(path, "rb")
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        if os.fstat(handle.fileno()).st_nlink == 0:  # replayed and unlinked while we opened it
            handle.close()
            return None
        return handle

    @staticmethod
    def read(handle: IO[bytes]) -> list[Pair]:
        pairs = []
        for number, line in enumerate(handle, 1):
            try:
                record = orjson.loads(line)
                p = record["principal"]
                scopes = frozenset(p["scopes"])
                principal = KeyPrincipal(p["key_id"], p["team_id"], p["environment"], p["prefix"], scopes)
                pairs.append((principal, record["trace"]))
            except (orjson.JSONDecodeError, KeyError, TypeError):
                # Only a crash in the middle of an append leaves a torn line, and only as the last one.
                log.error("proxy spool %s: unreadable line %d skipped", handle.name, number)
        return pairs

    @staticmethod
    def _open_new(directory: Path) -> IO[bytes]:
        directory.mkdir(parents=True, exist_ok=True)
        name = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
        handle = open(directory / name, "ab")
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        return handle


def append_locked(path: Path, data: bytes) -> None:
    """Append under an exclusive `flock`, to the file now at ``path``: one replaced while we waited
    for the lock (`traces.proxy.rejected` rewrites files under the same lock) is opened again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        with open(path, "ab") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            if os.fstat(handle.fileno()).st_nlink == 0:
                continue
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            return


def _dump_line(
    principal: KeyPrincipal, trace: dict[str, Any], reason: Any = None, rejected_at: str | None = None
) -> bytes:
    record: dict[str, Any] = {
        "principal": {
            "key_id": principal.key_id,
            "team_id": principal.team_id,
            "environment": principal.environment,
            "prefix": principal.prefix,
            "scopes": sorted(principal.scopes),
        },
        "trace": trace,
    }
    if reason is not None:
        record["reason"] = reason
    if rejected_at is not None:
        record["rejected_at"] = rejected_at
    return orjson.dumps(record, default=str) + b"\n"


class TraceWriter:
    def __init__(
        self,
        *,
        spool_dir: Path,
        batch_size: int = 500,
        interval: float = 0.1,
        queue_max: int = 100_000,
        max_body: int = 256 * 1024,
        max_metadata_keys: int = 64,
        ingest: Ingest = traces_ingest,
    ) -> None:
        self.spool = Spool(spool_dir)
        self.batch_size = batch_size
        self.interval = interval
        self.queue_max = queue_max
        self.max_body = max_body
        self.max_metadata_keys = max_metadata_keys
        self.ingest = ingest
        self.stats = WriterStats()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._down_until = 0.0  # while the database is out, batches go straight to the spool
        self._backoff = 0.0
        self._next_replay_check = 0.0
        self._wake = threading.Event()

    # -- the event loop's side ------------------------------------------------------------------

    def submit(self, capture: Capture) -> None:
        if self._queue.qsize() >= self.queue_max:
            # The writer is far behind (a database that hangs rather than refuses): keep the trace
            # on disk rather than grow memory without bound. Rare, and only a file append.
            log.warning("proxy trace queue full (%d): spooling directly", self.queue_max)
            self.spool.append([(capture.principal, self._build(capture))])
            self.stats.spooled += 1
            return
        self._queue.put(capture)

    # -- control --------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._run, name="proxy-trace-writer", daemon=True)
        self._thread.start()
        atexit.register(self.stop)

    def flush(self, timeout: float = 30.0) -> bool:
        """Block until everything submitted so far is stored or spooled (and due replays ran)."""
        if self._thread is None or not self._thread.is_alive():
            return True
        done = threading.Event()
        self._queue.put(done)
        self._wake.set()
        return done.wait(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Drain: store (or spool) everything queued, then end the thread."""
        thread = self._thread
        if thread is None:
            return
        self._thread = None
        if thread.is_alive():
            self._queue.put(_STOP)
            self._wake.set()
            thread.join(timeout)
            if thread.is_alive():
                log.error("proxy trace writer did not drain within %.0fs", timeout)
        atexit.unregister(self.stop)

    # -- the thread -----------------------------------------------------------------------------

    def _run(self) -> None:
        self._replay()  # what an earlier run (or another process that died) left behind
        while True:
            batch, markers, stop = self._collect()
            if batch:
                self._store([(c.principal, self._build(c)) for c in batch])
            if markers or time.monotonic() >= self._next_replay_check:
                self._replay()
            for marker in markers:
                marker.set()
            if stop:
                break
        self.spool.seal()
        close_old_connections()

    def _collect(self) -> tuple[list[Capture], list[threading.Event], bool]:
        """Up to ``batch_size`` captures: wait for a first one, sleep ``interval``, take what came.

        Sleeping rather than waiting item by item matters: every wake-up of this thread has to win
        the GIL back from the event loop, so the writer wakes a few times a second, not per call.
        """
        batch: list[Capture] = []
        markers: list[threading.Event] = []
        try:
            item = self._queue.get(timeout=REPLAY_CHECK_INTERVAL)
        except queue.Empty:
            return batch, markers, False
        if not isinstance(item, threading.Event) and item is not _STOP and self._queue.qsize() < self.batch_size:
            self._wake.wait(self.interval)  # cut short by flush() and stop()
            self._wake.clear()
        while True:
            if item is _STOP:
                return batch, markers, True
            if isinstance(item, threading.Event):
                markers.append(item)
                return batch, markers, False
            batch.append(item)
            if len(batch) >= self.batch_size:
                return batch, markers, False
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return batch, markers, False

    def _build(self, capture: Capture) -> dict[str, Any]:
        try:
            return build_trace(capture, max_body=self.max_body, max_metadata_keys=self.max_metadata_keys)
        except Exception as exc:  # a parsing bug must not cost the trace: keep what is certain
            log.exception("proxy capture %s could not be read", capture.trace_id)
            return {
                "id": capture.trace_id,
                "model": "unknown",
                "latency_ms": capture.latency_ms,
                "status": "error" if capture.error_type or capture.status_code >= 400 else "success",
                "metadata": {"proxy": {"upstream": capture.target.name, "capture_error": repr(exc)[:500]}},
            }

    def _store(self, pairs: Sequence[Pair]) -> None:
        if time.monotonic() < self._down_until:
            self._spool(pairs)
            return
        left = self._ingest(pairs)
        if left:
            self._spool(left)

    def _spool(self, pairs: Sequence[Pair]) -> None:
        self.spool.append(pairs)
        self.stats.spooled += len(pairs)

    def _ingest(self, pairs: Sequence[Pair]) -> list[Pair]:
        """Store ``pairs``; return those that could not be stored because the database is out."""
        groups: dict[KeyPrincipal, list[dict[str, Any]]] = {}
        for principal, trace in pairs:
            groups.setdefault(principal, []).append(trace)
        left: list[Pair] = []
        for principal, traces in groups.items():
            if left:
                left.extend((principal, t) for t in traces)
                continue
            try:
                self._ingest_group(principal, traces)
            except Exception as exc:
                self._outage(exc)
                left.extend((principal, t) for t in traces)
        if not left:
            self._recovered()
        close_old_connections()
        return left

    def _ingest_group(self, principal: KeyPrincipal, traces: list[dict[str, Any]]) -> None:
        # One item the database refuses (its team deleted meanwhile...) must not hold the rest: on a
        # permanent error each trace is stored alone, and only the ones refused are set aside. An
        # outage (any other error) still raises.
        outcomes = store_parts(
            [[trace] for trace in traces],
            lambda items: self.ingest(principal=principal, items=items, source="proxy"),
            refused=PERMANENT_ERRORS,
        )
        for trace, outcome in zip(traces, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                self._reject(principal, trace, {"exception": repr(outcome)[:1000]})
                continue
            for result in outcome:  # one: this trace's
                if result.errors:
                    self._reject(principal, trace, result.errors)
                else:
                    self.stats.stored += 1

    def _reject(self, principal: KeyPrincipal, trace: dict[str, Any], reason: Any) -> None:
        log.error("proxy trace %s refused by ingest, kept in %s: %s", trace.get("id"), self.spool.directory, reason)
        self.spool.reject(principal, trace, reason)
        self.stats.rejected += 1

    def _outage(self, exc: BaseException) -> None:
        self._backoff = min(MAX_BACKOFF, self._backoff * 2 or 1.0)
        self._down_until = time.monotonic() + self._backoff
        log.warning("proxy trace store unavailable (%r): spooling for %.0fs", exc, self._backoff)
        # Connections that saw the failure are broken: drop them so the next try reconnects.
        connections.close_all()

    def _recovered(self) -> None:
        if self._backoff:
            log.info("proxy trace store is back")
            self._backoff = 0.0
            self._down_until = 0.0
            self._next_replay_check = 0.0

    def _replay(self) -> None:
        self._next_replay_check = time.monotonic() + REPLAY_CHECK_INTERVAL
        if time.monotonic() < self._down_until:
            return
        self.spool.seal()
        for path in self.spool.files():
            handle = self.spool.claim(path)
            if handle is None:
                continue
            with handle:
                pairs = self.spool.read(handle)
                for start in range(0, len(pairs), self.batch_size):
                    if self._ingest(pairs[start : start + self.batch_size]):
                        return  # out again: the file stays, and is replayed whole later
                path.unlink()
                self.stats.replayed += len(pairs)
                log.info("proxy spool %s replayed (%d traces)", path.name, len(pairs))


_STOP = object()
