"""A worker process's lease on the rows it claims: a heartbeat in Postgres, taken over when it stops.

Every delivery worker process registers a `DeliveryWorker` row and renews its ``heartbeat_at``
every TRACERELAY_DELIVERY_HEARTBEAT_S (5 s) from a thread of its own; each claim stamps the rows
with that worker's id (`Delivery.claimed_by`). While the process lives, its lease is renewed
however long a send takes (a destination answering in 60 s keeps its rows). Once a heartbeat is
older than TRACERELAY_DELIVERY_LEASE_S (20 s) the process is taken for dead, and the next live
worker's heartbeat (or beat's sweeper) puts its rows back to pending and dispatches them: they
are re-sent as the batches they were (`delivery.batches`) within seconds, not after the 300 s
claim timeout, which stays as the backstop for a thread stuck inside a live process.

Why Postgres and not Redis: the rows and the lease then live in one system of record and share
one clock (``now()`` of the database, whatever the hosts' clocks say), and a Redis restart,
which loses keys without persistence, cannot make every live worker's lease look expired and
re-send everything in flight. Why one row per process and not a heartbeat on each claimed row:
one small UPDATE every 5 s per process, however many rows it holds, and nothing more written on
the hot path than the worker id in the claim's own UPDATE.

A worker takes over others' claims only after its own heartbeats have succeeded for three
heartbeat intervals in a row (`may_take_over`; at most a lease): after a database outage every
heartbeat was missed, and the worker that is back first must give the others time to renew
theirs (a live worker tries every interval) before it calls them dead.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection
from django.db.models.functions import Now

from .models import DeliveryWorker
from .sweeper import lease_seconds, take_over_expired

log = logging.getLogger(__name__)

# A stopped worker's heartbeat: long expired, so that what it left is taken over at once.
STOPPED = datetime(1970, 1, 1, tzinfo=UTC)


def settle_seconds() -> float:
    """How long a worker's own heartbeats must have held before it may call another worker dead:
    long enough for every live worker to have renewed (each tries every heartbeat interval)."""
    return min(lease_seconds(), 3 * heartbeat_seconds())


def heartbeat_seconds() -> float:
    """The heartbeat interval: at most a third of the lease, so that two missed beats (a busy
    database, a long pause for garbage collection) do not lose it."""
    return max(0.2, min(float(settings.TRACERELAY_DELIVERY_HEARTBEAT_S), lease_seconds() / 3))


@dataclass
class Lease:
    """This process's lease: its worker id and the heartbeat thread that renews it."""

    worker_id: uuid.UUID
    pid: int
    healthy_since: float | None = None  # monotonic time of the first heartbeat of the current run of successes
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def renew(self) -> None:
        """One heartbeat: renew the lease (register again if the row is gone: this process was
        paused past its lease, its rows were taken over, and it is alive again)."""
        renewed = DeliveryWorker.objects.filter(pk=self.worker_id).update(heartbeat_at=Now())
        if not renewed:
            _register(self.worker_id)
        if self.healthy_since is None:
            self.healthy_since = time.monotonic()

    def may_take_over(self) -> bool:
        return self.healthy_since is not None and time.monotonic() - self.healthy_since >= settle_seconds()

    def beat(self) -> None:
        """Renew, then take over the claims of workers whose lease expired."""
        try:
            self.renew()
            if self.may_take_over():
                take_over_expired()
        except Exception:  # the database is away: no heartbeat, and no taking over after it either
            self.healthy_since = None
            log.warning("delivery worker %s: heartbeat failed", self.worker_id, exc_info=True)

    def run(self) -> None:
        while not self.stop.wait(heartbeat_seconds()):
            self.beat()
            connection.close()  # the thread's connection goes back to the pool between beats


_lease: Lease | None = None
_lock = threading.Lock()


def _register(worker_id: uuid.UUID) -> None:
    DeliveryWorker.objects.update_or_create(
        pk=worker_id,
        defaults={"heartbeat_at": Now()},
        create_defaults={
            "hostname": socket.gethostname()[:255],
            "pid": os.getpid(),
            "started_at": Now(),
            "heartbeat_at": Now(),
        },
    )


def start() -> uuid.UUID:
    """Hold a lease in this process (registered now, renewed by a thread from here on); its worker
    id. Idempotent; a forked child gets a lease of its own."""
    global _lease
    with _lock:
        if _lease is not None and _lease.pid == os.getpid():
            return _lease.worker_id
        lease = Lease(worker_id=uuid.uuid4(), pid=os.getpid())
        _register(lease.worker_id)
        lease.healthy_since = time.monotonic()
        lease.thread = threading.Thread(target=lease.run, name="delivery-lease", daemon=True)
        lease.thread.start()
        _lease = lease
        return lease.worker_id


def current() -> uuid.UUID | None:
    """This process's worker id when it holds a lease (claims are stamped with it); None in a
    process that never started one (a test, a shell): its claims fall back to the claim timeout."""
    lease = _lease
    return lease.worker_id if lease is not None and lease.pid == os.getpid() else None


def may_take_over() -> bool:
    """Whether this process may take over others' claims now: only with a lease of its own whose
    heartbeats have held long enough (`settle_seconds`; a process that cannot tell whether the
    database was away must not call the other workers dead)."""
    lease = _lease
    return lease is not None and lease.pid == os.getpid() and lease.may_take_over()


def stop() -> None:
    """Give the lease up (a worker shutting down): the heartbeat stops and the lease is marked
    expired, so that anything this process still held is taken over at once, not in 20 s."""
    global _lease
    with _lock:
        lease, _lease = _lease, None
    if lease is None or lease.pid != os.getpid():
        return
    lease.stop.set()
    if lease.thread is not None:
        lease.thread.join(timeout=heartbeat_seconds() + 5)
    try:
        DeliveryWorker.objects.filter(pk=lease.worker_id).update(heartbeat_at=STOPPED)
    except Exception:
        log.warning("delivery worker %s: could not give its lease up", lease.worker_id, exc_info=True)
