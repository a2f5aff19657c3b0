"""What the /metrics hooks cost on the hot paths, per call, in-process (config.metrics).

    .venv/bin/python bench/metrics.py

Runs itself twice: with PROMETHEUS_MULTIPROC_DIR (memory-mapped files, as under bin/run) and
without (in-memory values). Per mode it times, over many calls: the ingest hook for a batch of
1,000 traces and for a single trace (`traces_stored_receiver`'s tally + the on-commit count), one
proxy latency observation, and a delivery group's `deliveries_counted`. Compare with ingest's
cost per trace (bench/ingest.py) and the proxy's added latency (bench/proxy_overhead.py).

Each figure is given twice: wall clock (`perf_counter`) and this process's CPU time
(`process_time`), which a machine shared with other work inflates far less; the batch's is also
given per trace. Print the load average beside them (`uptime`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _per_call(fn, n: int) -> tuple[float, float]:
    """µs per call: wall clock and CPU time of this process."""
    fn()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        fn()
    return (time.perf_counter() - wall) / n * 1e6, (time.process_time() - cpu) / n * 1e6


def _line(label: str, figures: tuple[float, float], per: int = 1) -> None:
    wall, cpu = (f / per for f in figures)
    print(f"  {label:<36} {wall:9.3f} µs wall {cpu:9.3f} µs CPU")


def measure() -> None:
    from config import metrics

    batch = [SimpleNamespace(source="batch", status="success" if i % 20 else "error") for i in range(1000)]
    single = [SimpleNamespace(source="api", status="success")]
    report = SimpleNamespace(delivered=0, retried=0, failed=0, dead=0, deferred=0)

    def delivery_group() -> None:
        with metrics.deliveries_counted("langfuse", report):
            report.delivered += 100

    mode = "multi-process files" if os.environ.get("PROMETHEUS_MULTIPROC_DIR") else "in-memory"
    print(f"{mode}:")
    batched = _per_call(lambda: metrics.record_traces_stored(batch), 300)
    _line("ingest hook, batch of 1,000:", batched)
    _line("  per trace of the batch:", batched, per=1000)
    _line("ingest hook, one trace:", _per_call(lambda: metrics.record_traces_stored(single), 20000))
    _line("proxy latency observation:", _per_call(lambda: metrics.observe_proxy_added_latency(0.0004), 20000))
    _line("delivery group count:", _per_call(delivery_group, 20000))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        measure()
        return
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    subprocess.run([sys.executable, __file__, "--child"], env=env, check=True)
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            [sys.executable, __file__, "--child"], env={**env, "PROMETHEUS_MULTIPROC_DIR": folder}, check=True
        )


if __name__ == "__main__":
    main()
