"""The PII policy's share of ingest CPU: per trace of `bench/ingest.py`'s load (a quarter carry an
e-mail and a phone), CPU time of normalising and pricing it (`normalize_trace`) beside the CPU time
of applying the `stored` mode to it (`privacy.records.apply_to_record`). The policy's cost over the
normalising cost is an upper bound on ingest's slowdown (ingest also parses, routes and writes).

    .venv/bin/python bench/pii_ingest.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from ingest import trace  # noqa: E402

from privacy.policy import CompiledPolicy  # noqa: E402
from privacy.records import apply_to_record  # noqa: E402
from traces.normalize import normalize_trace  # noqa: E402

N = 2000


def cpu(fn, repeat: int = 5) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    items = [trace(i) for i in range(N)]
    records = [normalize_trace(item, team_id=1, environment="production", source="batch") for item in items]
    base = cpu(lambda: [normalize_trace(i, team_id=1, environment="production", source="batch") for i in items])
    print(f"normalise + price: {base / N * 1e6:8.1f} µs/trace (CPU, best of 5, {N} traces)")
    for mode in ("detect", "redact", "hash"):
        policy = CompiledPolicy(team_id=1, version=1, stored=mode, hash_key=b"k" * 32)
        cost = cpu(lambda policy=policy: [apply_to_record(r, policy) for r in records])
        print(f"stored {mode:<7}    {cost / N * 1e6:8.1f} µs/trace  = {cost / base:6.1%} of normalise + price")


if __name__ == "__main__":
    main()
