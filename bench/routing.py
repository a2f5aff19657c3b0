"""Routing benchmark: condition evaluations per second and routing decisions per second.

    .venv/bin/python bench/routing.py [--traces 20000]

No database or network: it compiles conditions and rule sets in-process and times

1. each condition spelling alone (a CEL expression, the same as an object), with a plain context
   dict and with the shared per-trace activation (`Bindings`) the router uses;
2. `route()` over a typical team's rule set (6 rules, CEL and object conditions, sampling policy)
   for ``--traces`` distinct traces: the per-trace cost ingest pays after `compiled_routing`;
3. `route(..., explain=True)` (the dry-run endpoint);
4. compiling the rule set (what a version change costs each process once).

Compare with DESIGN.md §5: batched ingest ≥ 10,000 traces/s must include routing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from routing.conditions import Bindings, compile_condition  # noqa: E402
from routing.router import route  # noqa: E402
from routing.selectors import compile_routing  # noqa: E402
from traces.records import TraceRecord  # noqa: E402

RULES = [
    {"name": "errors", "priority": 1, "conditions": {"error": True}, "destinations": [{"name": "langfuse"}]},
    {
        "name": "expensive",
        "priority": 2,
        "condition": 'model.startsWith("gpt-4") && cost > 0.05',
        "destinations": [{"name": "langsmith"}],
    },
    {
        "name": "prod beta",
        "priority": 3,
        "condition": 'has(metadata.env) && metadata.env == "prod" && "beta" in tags',
        "destinations": [{"name": "datadog", "sample_rate": 0.5}],
    },
    {"name": "slow", "priority": 4, "conditions": {"latency_ms": ">2000"}, "destinations": [{"name": "phoenix"}]},
    {"name": "claude", "priority": 5, "conditions": {"model": "claude*"}, "destinations": [{"name": "weave"}]},
    {"name": "sample", "priority": 6, "destinations": [{"name": "helicone", "sample_rate": 0.1}]},
]
SAMPLING = [{"condition": 'environment == "development"', "sample_rate": 0.2}]


def contexts(n: int) -> list[dict]:
    models = ["gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "llama3-70b"]
    out = []
    for i in range(n):
        record = TraceRecord(
            trace_id=f"trc_bench_{i}",
            team_id=1,
            model=models[i % 4],
            provider="openai",
            prompt_tokens=100 + i % 900,
            completion_tokens=50,
            total_tokens=150 + i % 900,
            latency_ms=100 + (i * 37) % 4000,
            cost=Decimal(i % 100) / 1000,
            status="error" if i % 20 == 0 else "success",
            tags=("beta",) if i % 3 == 0 else (),
            metadata={"env": "prod" if i % 2 else "dev", "customer": f"c{i % 50}"},
            environment="development" if i % 10 == 0 else "production",
        )
        out.append(record.condition_context())
    return out


def rate(label: str, count: int, fn: Callable[[], object]) -> None:
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    print(f"{label:<58} {count / seconds:>12,.0f} /s   ({seconds * 1e6 / count:6.2f} µs each)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=20_000)
    args = parser.parse_args()
    ctxs = contexts(args.traces)
    n = len(ctxs)

    cel = compile_condition('model == "gpt-4o" && cost > 0.05')
    obj = compile_condition({"model": "gpt-4o", "cost": ">0.05"})
    meta = compile_condition('has(metadata.env) && metadata.env == "prod"')
    print(f"conditions over {n:,} traces")
    rate("  CEL  model == ... && cost > ...  (plain dict)", n, lambda: [cel(c) for c in ctxs])
    rate("  CEL  same, one activation per trace (Bindings)", n, lambda: [cel(Bindings(c, cel.variables)) for c in ctxs])
    rate("  CEL  metadata.env == ...  (plain dict)", n, lambda: [meta(c) for c in ctxs])
    rate("  object {model, cost}", n, lambda: [obj(c) for c in ctxs])
    bound = [Bindings(c, cel.variables) for c in ctxs]
    for b in bound:
        b.activation()
    rate("  CEL  evaluation only (activation already built)", n, lambda: [cel(b) for b in bound])

    compiled = compile_routing(RULES, sampling_rules=SAMPLING)
    print(f"\nroute() with {len(RULES)} rules + 1 sampling rule")
    rate("  route(ctx, compiled)", n, lambda: [route(c, compiled) for c in ctxs])
    rate("  route(ctx, compiled, explain=True)", n, lambda: [route(c, compiled, explain=True) for c in ctxs])
    kept = sum(len(route(c, compiled).destinations) for c in ctxs)
    print(f"  (kept decisions per trace on average: {kept / n:.2f})")

    print("\ncompiling")
    rate(
        "  compile_routing(6 rules + sampling)",
        200,
        lambda: [compile_routing(RULES, sampling_rules=SAMPLING) for _ in range(200)],
    )


if __name__ == "__main__":
    main()
