"""Team prices on the ingest hot path (issue 26): microseconds per `traces.pricing.price` call for a
team with 0 and with 50 team prices (the team's compiled list warm in this process, as in a running
server), beside today's path (no team: genai-prices' fast path), side by side.

    .venv/bin/python bench/team_prices.py [--calls 50000] [--repeats 5]

No database: the team's compiled price list is put in the per-process cache directly (what
`traces.prices.lookup.team_prices` returns after its first fill); its recheck against the shared
cache (once a second per team) is left out by a long recheck window.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from config.teamcache import Entry  # noqa: E402
from traces import pricing  # noqa: E402
from traces.prices import lookup  # noqa: E402
from traces.usage import NO_DETAILS, TokenDetails  # noqa: E402

GENAI = [
    ("gpt-4o", "openai"),
    ("gpt-4o-mini", "openai"),
    ("claude-sonnet-4-5", "anthropic"),
    ("gemini-2.5-flash", "google"),
]
WHEN = datetime(2026, 11, 27, tzinfo=UTC)


def team_list(n: int) -> lookup.TeamPrices:
    """``n`` prices: a third exact names, a third prefixes, a third with an effective_from."""
    rates, models = [], []
    for i in range(n):
        rates.append(
            lookup.Rate(
                id=i + 1, revision=1, provider="", effective_from=WHEN if i % 3 == 2 else None,
                input=Decimal("0.3"), output=Decimal("1.2"), cached_input=Decimal("0.15"),
                cache_write=Decimal("0.3"), reasoning=Decimal("1.2"),
            )
        )  # fmt: skip
        models.append(f"private-{i}*" if i % 3 == 1 else f"private-{i}")
    return lookup.compile_prices(rates, models) if n else lookup.NO_PRICES


def run(calls: int, team_id: int | None, models: list[tuple[str, str]], details: TokenDetails) -> float:
    start = time.perf_counter()
    for i in range(calls):
        model, provider = models[i % len(models)]
        pricing.price(
            model=model, provider=provider, prompt_tokens=1_000 + i % 500, completion_tokens=400,
            timestamp=WHEN, details=details, team_id=team_id,
        )  # fmt: skip
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    lookup.RECHECK_SECONDS = 1e9
    cache = lookup.compiled_cache
    cache.entries[1] = Entry((0, 0, 0), team_list(0), time.monotonic())
    cache.entries[2] = Entry((50, 50, 0), team_list(50), time.monotonic())
    cached = TokenDetails(cached_tokens=600, reasoning_tokens=100)
    private = [("private-0", ""), ("private-4-ft", ""), ("private-48", "")]  # exact, prefix, exact
    cases = [
        ("today: genai-prices, no team (fast path)", None, GENAI, NO_DETAILS),
        ("team with 0 prices, genai-prices models", 1, GENAI, NO_DETAILS),
        ("team with 50 prices, genai-prices models (no match)", 2, GENAI, NO_DETAILS),
        ("team with 50 prices, its own models (match)", 2, private, NO_DETAILS),
        ("team with 50 prices, its own models, cached + reasoning", 2, private, cached),
    ]
    for _, team_id, models, details in cases:
        run(2_000, team_id, models, details)  # warm genai-prices' look-up cache
    print(f"pricing.price, {args.calls} calls per run, median of {args.repeats} runs (µs per call)")
    for label, team_id, models, details in cases:
        times = [run(args.calls, team_id, models, details) for _ in range(args.repeats)]
        print(f"  {label:58s} {statistics.median(times):7.2f}")


if __name__ == "__main__":
    main()
