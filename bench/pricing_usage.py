"""Pricing cost per trace: plain input/output usage (the fast path) against usage in full (cached,
cache-write, reasoning, audio tokens through genai-prices' `Usage`), side by side (issue 26).

    .venv/bin/python bench/pricing_usage.py [--traces 20000]

No database: `traces.pricing.price` alone, the call `normalize_trace` makes for every `llm` and
`embedding` span, over a mix of models (OpenAI, Anthropic, Google) with the look-up cache warm, as it
is in a running process. Each row prices the same traces; the full rows add parts to the usage, and
are timed twice: as ingest prices them (cached, cache-write and reasoning parts at plain rates summed
directly, checked against the library for every model) and all through genai-prices' `Usage`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from traces import pricing  # noqa: E402
from traces.usage import NO_DETAILS, TokenDetails  # noqa: E402

MODELS = [("gpt-4o", "openai"), ("gpt-4o-mini", "openai"), ("o3", "openai"), ("claude-sonnet-4-5", "anthropic"),
          ("claude-3-5-haiku-latest", "anthropic"), ("gemini-2.5-flash", "google")]  # fmt: skip
CASES = {
    "plain input/output (fast path)": lambda i: NO_DETAILS,
    "cached prompt": lambda i: TokenDetails(cached_tokens=800 + i % 100),
    "cached + cache write (Anthropic)": lambda i: TokenDetails(cached_tokens=600, cache_write_tokens=200 + i % 50),
    "cached + reasoning": lambda i: TokenDetails(cached_tokens=500, reasoning_tokens=100 + i % 100),
    "cached + audio in and out": lambda i: TokenDetails(
        cached_tokens=300, input_audio_tokens=200, output_audio_tokens=50
    ),
}


def run(traces: int, make) -> float:
    """Microseconds per trace."""
    start = time.perf_counter()
    for i in range(traces):
        model, provider = MODELS[i % len(MODELS)]
        pricing.price(
            model=model, provider=provider, prompt_tokens=1_000 + i % 500, completion_tokens=400, details=make(i)
        )
    return (time.perf_counter() - start) / traces * 1e6


def library_only(traces: int, make) -> float:
    """The same, with every trace through genai-prices' `ModelPrice.calc_price(Usage(...))`."""
    fast = pricing._fast_cost
    pricing._fast_cost = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        return run(traces, make)
    finally:
        pricing._fast_cost = fast


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for make in CASES.values():
        run(len(MODELS) * 2, make)  # warm the look-up cache
    print(f"pricing, {args.traces} traces over {len(MODELS)} models, median of {args.repeats} runs")
    print(f"{'usage':<36} {'ingest µs/trace':>16} {'× plain':>8} {'all-library µs/trace':>21} {'× plain':>8}")
    base = None
    for name, make in CASES.items():
        micros = statistics.median(run(args.traces, make) for _ in range(args.repeats))
        library = statistics.median(library_only(args.traces, make) for _ in range(args.repeats))
        base = base or micros
        print(f"{name:<36} {micros:>16.1f} {micros / base:>8.1f} {library:>21.1f} {library / base:>8.1f}")


if __name__ == "__main__":
    main()
