"""`Stats`: the exact counters and the two histograms of a set of traces, and how they add up.

One accumulator for every path: the fold, the readers of rollups and the raw
scans all count with it, so they cannot disagree on a definition.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from . import sketch
from .models import COUNTERS, USAGE_PARTS

E10 = Decimal(10) ** 10


def cost_units(cost: Decimal | None) -> int:
    """Trace.cost (10 decimal places) as an exact integer of 1e-10 USD."""
    return int(cost.scaleb(10).to_integral_value()) if cost is not None else 0


# The Trace columns `Stats.add_trace` takes, in its arguments' order (raw and pending reads).
ADD_TRACE_FIELDS = (
    "status",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost",
    "unpriced",
    "usage_estimated",
    "latency_ms",
    "time_to_first_token_ms",
    *USAGE_PARTS,
)


class Stats:
    __slots__ = (*COUNTERS, "latency", "ttft", "points")
    count: int
    success: int
    errors: int
    rate_limited: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cost_e10: int
    unpriced: int
    estimated_usage: int
    latency_count: int
    latency_sum: int
    ttft_count: int
    ttft_sum: int
    cached_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    input_audio_tokens: int
    input_image_tokens: int
    output_audio_tokens: int
    output_image_tokens: int

    def __init__(self) -> None:
        # (Spelled out, as in add_counters and merge: a read makes and adds up thousands of these.)
        self.count = self.success = self.errors = self.rate_limited = 0
        self.prompt_tokens = self.completion_tokens = self.total_tokens = self.cost_e10 = 0
        self.unpriced = self.estimated_usage = 0
        self.latency_count = self.latency_sum = self.ttft_count = self.ttft_sum = 0
        self.cached_tokens = self.cache_write_tokens = self.reasoning_tokens = 0
        self.input_audio_tokens = self.input_image_tokens = self.output_audio_tokens = self.output_image_tokens = 0
        self.latency: dict[int, int] = {}
        # A series point's latency quantiles (p50, p95), worked out by `analytics.merged.read` from
        # the one stored row the point is; None: from ``latency``.
        self.points: list[float | None] | None = None
        self.ttft: dict[int, int] = {}

    # ---- adding traces (ingest, raw scans) ----------------------------------------------------
    def add_trace(
        self,
        status: str,
        prompt_tokens: int,
        completion_tokens: int,
        total_tokens: int,
        cost: Decimal | None,
        unpriced: bool,
        usage_estimated: bool,
        latency_ms: int | None,
        ttft_ms: int | None,
        cached_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        input_audio_tokens: int = 0,
        input_image_tokens: int = 0,
        output_audio_tokens: int = 0,
        output_image_tokens: int = 0,
    ) -> None:
        self.count += 1
        if status == "success":
            self.success += 1
        elif status == "error":
            self.errors += 1
        elif status == "rate_limited":
            self.rate_limited += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.total_tokens += total_tokens
        self.cached_tokens += cached_tokens
        self.cache_write_tokens += cache_write_tokens
        self.reasoning_tokens += reasoning_tokens
        self.input_audio_tokens += input_audio_tokens
        self.input_image_tokens += input_image_tokens
        self.output_audio_tokens += output_audio_tokens
        self.output_image_tokens += output_image_tokens
        if cost is not None:
            self.cost_e10 += cost_units(cost)
        if unpriced:
            self.unpriced += 1
        if usage_estimated:
            self.estimated_usage += 1
        if latency_ms is not None:
            self.latency_count += 1
            self.latency_sum += latency_ms
            sketch.add(self.latency, latency_ms)
        if ttft_ms is not None:
            self.ttft_count += 1
            self.ttft_sum += ttft_ms
            sketch.add(self.ttft, ttft_ms)

    # ---- adding stored rows and other accumulators --------------------------------------------
    def add_stored(self, counters: tuple[Any, ...], histograms: tuple[Any, ...], sign: int = 1) -> None:
        """A rollup row: its COUNTERS in order, then its HISTOGRAMS (latency keys and counts, TTFT
        keys and counts). ``sign`` -1 takes the row away (a day row less the hours outside a range)."""
        self.add_counters(counters, sign)
        sketch.merge_arrays(self.latency, histograms[0], histograms[1], sign)
        sketch.merge_arrays(self.ttft, histograms[2], histograms[3], sign)

    def add_counters(self, counters: Iterable[Any], sign: int = 1) -> None:
        """COUNTERS' values in order (ints, or what int() takes), times ``sign``."""
        (count, success, errors, rate_limited, prompt, completion, total, cost, unpriced, estimated,
         latency_count, latency_sum, ttft_count, ttft_sum, cached, cache_write, reasoning, audio_in, image_in,
         audio_out, image_out) = (
            map(int, counters) if sign == 1 else (sign * int(v) for v in counters))  # fmt: skip
        self.count += count
        self.success += success
        self.errors += errors
        self.rate_limited += rate_limited
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.total_tokens += total
        self.cost_e10 += cost
        self.unpriced += unpriced
        self.estimated_usage += estimated
        self.latency_count += latency_count
        self.latency_sum += latency_sum
        self.ttft_count += ttft_count
        self.ttft_sum += ttft_sum
        self.cached_tokens += cached
        self.cache_write_tokens += cache_write
        self.reasoning_tokens += reasoning
        self.input_audio_tokens += audio_in
        self.input_image_tokens += image_in
        self.output_audio_tokens += audio_out
        self.output_image_tokens += image_out

    def counters(self) -> tuple[int, ...]:
        return (self.count, self.success, self.errors, self.rate_limited, self.prompt_tokens, self.completion_tokens,
                self.total_tokens, self.cost_e10, self.unpriced, self.estimated_usage, self.latency_count,
                self.latency_sum, self.ttft_count, self.ttft_sum, self.cached_tokens, self.cache_write_tokens,
                self.reasoning_tokens, self.input_audio_tokens, self.input_image_tokens, self.output_audio_tokens,
                self.output_image_tokens)  # fmt: skip

    def merge(self, other: Stats, *, histograms: bool = True) -> None:
        self.add_counters(other.counters())
        if histograms:
            sketch.merge_into(self.latency, other.latency)
            sketch.merge_into(self.ttft, other.ttft)

    # ---- rows to store ------------------------------------------------------------------------
    def stored_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {name: getattr(self, name) for name in COUNTERS}
        values["latency_keys"], values["latency_counts"] = sketch.arrays(self.latency)
        values["ttft_keys"], values["ttft_counts"] = sketch.arrays(self.ttft)
        return values

    # ---- figures the API shows ----------------------------------------------------------------
    @property
    def cost(self) -> Decimal:
        return Decimal(self.cost_e10) / E10

    def totals(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "success": self.success,
            "errors": self.errors,
            "rate_limited": self.rate_limited,
            "error_rate": round((self.errors + self.rate_limited) / self.count, 6) if self.count else 0.0,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "input_audio_tokens": self.input_audio_tokens,
            "input_image_tokens": self.input_image_tokens,
            "output_audio_tokens": self.output_audio_tokens,
            "output_image_tokens": self.output_image_tokens,
            "cost": float(self.cost),
            "unpriced": self.unpriced,
            "estimated_usage": self.estimated_usage,
        }

    def percentiles(self, which: str) -> dict[str, float | None]:
        counts = self.latency if which == "latency" else self.ttft
        n, total = (self.latency_count, self.latency_sum) if which == "latency" else (self.ttft_count, self.ttft_sum)
        values = sketch.quantiles(counts, sketch.QUANTILES.values())
        out: dict[str, float | None] = dict(zip(sketch.QUANTILES, values, strict=True))
        out["mean"] = round(total / n, 3) if n else None
        return out
