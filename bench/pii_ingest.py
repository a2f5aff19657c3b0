"""The PII policy's share of ingest CPU: per trace of `bench/ingest.py`'s load (a quarter carry an
e-mail and a phone), CPU time of normalising and pricing it (`normalize_trace`) beside the CPU time
of applying the `stored` mode to it as ingest does (`privacy.records.apply_to_records`, one call
per request: a string repeated across a batch is scanned once). Three shapes, as `bench/ingest.py`
sends them: single POSTs (a batch of one), REST batches of 100, and OTLP exports of 1,000 spans
(mapped and normalised as the OTLP endpoint does: their metadata carries random trace and span
ids and the span name). The policy's cost over the normalising cost is an upper bound on ingest's
slowdown (ingest also parses, routes and writes).

    .venv/bin/python bench/pii_ingest.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from ingest import OtlpBodies, trace  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from privacy.policy import CompiledPolicy  # noqa: E402
from privacy.records import apply_to_records  # noqa: E402
from traces.normalize import normalize_trace  # noqa: E402
from traces.otlp.mapping import span_to_item  # noqa: E402
from traces.otlp.spans import iter_spans  # noqa: E402

N = 2000


def cpu(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def rest_records() -> list[Any]:
    return [normalize_trace(trace(i), team_id=1, environment="production", source="batch") for i in range(N)]


def otlp_records() -> list[Any]:
    bodies = OtlpBodies(1000)
    records = []
    for _ in range(N // 1000):
        request = ExportTraceServiceRequest.FromString(bodies.next())  # new random span and trace ids
        items = [span_to_item(span) for span in iter_spans(request)]
        records += [normalize_trace(item, team_id=1, environment="production", source="otlp") for item in items if item]
    return records


def per_request(records: Sequence[Any], size: int, policy: CompiledPolicy) -> Callable[[], None]:
    def run() -> None:
        for start in range(0, len(records), size):
            apply_to_records(records[start : start + size], policy)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7, help="Best of this many runs (CPU time).")
    args = parser.parse_args()
    items = [trace(i) for i in range(N)]
    base = cpu(
        lambda: [normalize_trace(i, team_id=1, environment="production", source="batch") for i in items], args.repeat
    )
    print(f"normalise + price: {base / N * 1e6:8.1f} µs/trace (CPU, best of {args.repeat}, {N} traces)")
    shapes = [
        ("single POST", rest_records(), 1),
        ("batch of 100", rest_records(), 100),
        ("otlp 1000", otlp_records(), 1000),
    ]
    for mode in ("detect", "redact", "hash"):
        policy = CompiledPolicy(team_id=1, version=1, stored=mode, hash_key=b"k" * 32)
        for name, records, size in shapes:
            cost = cpu(per_request(records, size, policy), args.repeat)
            print(
                f"stored {mode:<7} {name:<13} {cost / len(records) * 1e6:8.1f} µs/trace"
                f"  = {cost / len(records) / (base / N):6.1%} of normalise + price"
            )


if __name__ == "__main__":
    main()
