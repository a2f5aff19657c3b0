"""Operators' metrics (Prometheus, `/metrics`; docs/deployment.md): what the processes count.

Every process (uvicorn workers, Celery workers) records into these. With PROMETHEUS_MULTIPROC_DIR
set (bin/run sets it and empties it at start) prometheus-client keeps each process's values in
memory-mapped files in that folder, and a scrape in any web worker adds up every process's files
(`analytics.metrics_view`); unset (tests, one process), they live in this process's registry.

The recording functions are the only API: callers on hot paths (ingest, the proxy, delivery) make
one call each, which costs a few microseconds (a lock and a float add in a mmap'd file).
It must be imported after the environment is final: prometheus-client picks its storage at import.
"""

from __future__ import annotations

import os
from collections import Counter as Tally
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _DIR:
    os.makedirs(_DIR, exist_ok=True)  # prometheus-client opens its files there at the first metric

from django.db import transaction  # noqa: E402
from prometheus_client import Counter, Histogram  # noqa: E402  (after the folder exists)

# Trace sources (Trace.source) → the ingest path label.
PATHS = {"api": "rest", "batch": "batch", "otlp": "otlp", "proxy": "proxy"}
DELIVERY_OUTCOMES = ("delivered", "retried", "failed", "dead", "deferred", "dropped", "held")
ALERT_OUTCOMES = ("ok", "fired", "resolved", "error")

TRACES_INGESTED = Counter(
    "tracerelay_traces_ingested",
    "Traces stored, by ingest path (rest, batch, otlp, proxy) and trace status.",
    ["path", "status"],
)
PROXY_ADDED_LATENCY = Histogram(
    "tracerelay_proxy_added_latency_seconds",
    "Time the proxy spends before the upstream request is sent (key check, routing, reading the body).",
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)
DELIVERIES = Counter(
    "tracerelay_deliveries",
    "Delivery attempts' outcomes by destination name: delivered, retried (failed, will retry), failed "
    "(gave up, a fallback took over), dead (gave up), deferred (circuit open, not attempted).",
    ["destination", "outcome"],
)
CLAIMS_TAKEN_OVER = Counter(
    "tracerelay_delivery_claims_taken_over",
    "Deliveries being sent that were taken back from their worker and sent again, by reason: "
    "lease_expired (the worker process stopped renewing its lease: it died), claim_timeout (held past "
    "TRACERELAY_DELIVERY_CLAIM_TIMEOUT_S by a worker that still renews its lease, or by none).",
    ["reason"],
)
ALERT_EVALUATIONS = Counter(
    "tracerelay_alert_evaluations",
    "Spend alert evaluations by outcome: ok (no change), fired, resolved, error.",
    ["outcome"],
)


def record_traces_stored(rows: Iterable[Any]) -> None:
    """Count stored traces (objects with ``source`` and ``status``) by ingest path and status."""
    _count_ingested(Tally((row.source, row.status) for row in rows))


def traces_stored_receiver(sender: Any, *, rows: Iterable[Any], **_: Any) -> None:
    """`traces.signals.traces_stored` receiver (sent inside ingest's transaction): count the rows
    once that transaction commits (a rolled-back batch, e.g. retried on an id collision, is not)."""
    tally = Tally((row.source, row.status) for row in rows)
    transaction.on_commit(lambda: _count_ingested(tally))


def _count_ingested(tally: Tally[tuple[str, str]]) -> None:
    for (source, status), n in tally.items():
        TRACES_INGESTED.labels(PATHS.get(source, source), status).inc(n)


def observe_proxy_added_latency(seconds: float) -> None:
    PROXY_ADDED_LATENCY.observe(seconds)


def record_claims_taken_over(reason: str, count: int) -> None:
    """``count`` deliveries taken back from their worker (``reason``: lease_expired, claim_timeout)."""
    CLAIMS_TAKEN_OVER.labels(reason).inc(count)


def record_alert_evaluation(outcome: str) -> None:
    """One spend alert evaluated: ``outcome`` is one of ALERT_OUTCOMES."""
    if outcome not in ALERT_OUTCOMES:
        raise ValueError(f"alert evaluation outcome {outcome!r}: use one of {', '.join(ALERT_OUTCOMES)}")
    ALERT_EVALUATIONS.labels(outcome).inc()


@contextmanager
def deliveries_counted(destination: str, report: Any) -> Iterator[None]:
    """Count what the block adds to ``report``'s outcome counters (a `delivery.states.DeliveryReport`)
    under ``destination``."""
    before = [getattr(report, name) for name in DELIVERY_OUTCOMES]
    try:
        yield
    finally:
        for name, was in zip(DELIVERY_OUTCOMES, before, strict=True):
            added = getattr(report, name) - was
            if added:
                DELIVERIES.labels(destination, name).inc(added)
