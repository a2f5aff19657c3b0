"""What routing runs as trees adds to ingest: the store step (route, one transaction with the outbox)
for spans of runs, side by side with today's per-call path.

    .venv/bin/python bench/run_routing.py [--spans 1000] [--rounds 8] [--reuse]

Its own database (``tracerelay_bench_run_routing``, made afresh unless ``--reuse``), one team with a
webhook integration and one rule (``model == "gpt-4o"`` → the webhook). Each round stores, through
`pipeline.services.traces_store` (what every door calls after normalising), batches of ``--spans``:

* ``calls``: calls sent without a run (today's path: no run bookkeeping at all), 7 in 10 routed (as
  many outbox rows as the runs make);
* ``runs``: the same number of spans in runs of 10 (an agent root, 3 tools, 3 gpt-4o calls routed
  to the webhook, 3 claude calls routed nowhere), in one batch: the run rows' upsert, and outbox
  rows for the structural spans that follow their run;
* ``runs, root last``: the same runs in two batches, calls first, then the structure (the back-fill
  path: a structural span arriving after its run was routed).

The scenarios alternate within every round (the machine is shared: figures move by ±30% between
rounds). Printed per 1,000 spans: wall milliseconds, this process's CPU milliseconds and the
Postgres backend's CPU milliseconds (``/proc/<backend pid>/stat``), medians over the rounds. Publishing
the delivery tasks is left out (no broker involved).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchdb import recreate_database, use_database  # noqa: E402

use_database("tracerelay_bench_run_routing")

import django  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def backend_cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICKS  # utime + stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    if not args.reuse:
        recreate_database()
    django.setup()

    from django.db import connection

    from accounts.models import ApiKey, Team
    from accounts.principals import KeyPrincipal
    from delivery import outbox
    from integrations.models import Integration
    from pipeline.services import PendingTrace, traces_store
    from routing.models import RoutingRule
    from routing.services import routing_rules_touched
    from traces.normalize import normalize_trace

    outbox.publish = lambda ids, countdown=None: True  # type: ignore[assignment]  # no broker here

    team = Team.objects.create(name=f"bench-{uuid.uuid4().hex[:6]}")
    key = ApiKey.objects.create(
        team=team, name="bench", environment="production", prefix=uuid.uuid4().hex[:12], key_hash=uuid.uuid4().hex
    )
    principal = KeyPrincipal(key.id, team.id, "production", key.prefix, key.scopes)
    Integration.objects.create(team=team, name="hook", platform="webhook", config={"url": "http://127.0.0.1:9/"})
    RoutingRule.objects.create(
        team=team,
        name="gpt-4o",
        priority=1,
        condition='model == "gpt-4o"',
        destinations=[{"name": "hook", "sample_rate": 1.0, "tags": [], "fallback": []}],
    )
    routing_rules_touched(team_id=team.id, actor="bench")
    template = {
        "gpt-4o": normalize_trace({"model": "gpt-4o", "prompt_tokens": 100}, team_id=team.id, environment="production"),
        "claude": normalize_trace(
            {"model": "claude-sonnet-4-5", "prompt_tokens": 100}, team_id=team.id, environment="production"
        ),
    }
    structural = dataclasses.replace(template["gpt-4o"], model="", provider="", cost=None, unpriced=False)

    def pending(record) -> PendingTrace:
        return PendingTrace(0, record, principal, True)

    def calls(n: int) -> list[list[PendingTrace]]:
        # 7 in 10 routed: as many outbox rows as the runs below make (3 calls + 4 structural spans of 10)
        models = ["gpt-4o"] * 7 + ["claude"] * 3
        return [
            [pending(dataclasses.replace(template[models[i % 10]], trace_id=f"c-{uuid.uuid4().hex}")) for i in range(n)]
        ]

    def run_spans(n: int) -> tuple[list[PendingTrace], list[PendingTrace]]:
        calls_, structure = [], []
        for _ in range(n // 10):
            run = f"r-{uuid.uuid4().hex}"
            root = f"{run}-agent"
            structure.append(pending(dataclasses.replace(structural, trace_id=root, run_id=run, kind="agent")))
            for t in range(3):
                tool = f"{run}-tool-{t}"
                structure.append(
                    pending(dataclasses.replace(structural, trace_id=tool, run_id=run, parent_id=root, kind="tool"))
                )
                for model in ("gpt-4o", "claude"):
                    span = dataclasses.replace(
                        template[model], trace_id=f"{run}-{model}-{t}", run_id=run, parent_id=tool, kind="llm"
                    )
                    calls_.append(pending(span))
        return calls_, structure

    def runs(n: int) -> list[list[PendingTrace]]:
        calls_, structure = run_spans(n)
        return [structure + calls_]

    def root_last(n: int) -> list[list[PendingTrace]]:
        calls_, structure = run_spans(n)
        return [calls_, structure]

    scenarios: dict[str, Callable[[int], list[list[PendingTrace]]]] = {
        "calls": calls,
        "runs": runs,
        "runs, root last": root_last,
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]

    figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in scenarios}
    for _ in range(args.rounds):
        for name, make in scenarios.items():
            batches = make(args.spans)
            spans = sum(len(b) for b in batches)
            wall, cpu, server = time.perf_counter(), time.process_time(), backend_cpu_ms(backend)
            for batch in batches:
                traces_store(batch)
            scale = 1000 / spans
            figures[name].append(
                (
                    (time.perf_counter() - wall) * 1000 * scale,
                    (time.process_time() - cpu) * 1000 * scale,
                    (backend_cpu_ms(backend) - server) * scale,
                )
            )

    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds of {args.spans} spans per scenario, load average {load:.1f}")
    print(f"{'scenario':<18}{'wall ms/1k':>12}{'client CPU ms/1k':>18}{'Postgres CPU ms/1k':>20}")
    base = statistics.median(f[0] for f in figures["calls"])
    for name, rows in figures.items():
        wall, cpu, server = (statistics.median(r[i] for r in rows) for i in range(3))
        print(f"{name:<18}{wall:>12.1f}{cpu:>18.1f}{server:>20.1f}   ({wall / base:.2f}× the calls' wall time)")


if __name__ == "__main__":
    main()
