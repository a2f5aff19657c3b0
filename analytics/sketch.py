"""Latency percentiles: a sparse log-bucket histogram (the DDSketch mapping, gamma = 1.02).

Why this and not t-digest or a fixed histogram: its error bound is a *relative* one that holds for
every quantile and every value (t-digest's is rank-based and weakest in the middle), and merging
two of them is adding counts bucket by bucket, so minute rows add up to hours and days with no
loss and in any order. A value v > 0 goes to bucket ``ceil(log_gamma(v))``; the bucket's
representative ``2 * gamma^k / (gamma + 1)`` is within ``(gamma - 1) / (gamma + 1)`` ≈ 0.99% of
every value in it. Latencies of 1 ms to 24 days use at most ~1,100 buckets; a real hour of one
model uses a few dozen to a few hundred, so it is stored sparse, as two parallel arrays: the keys
present, ascending, and their counts (`analytics.fields.IntArrayField`: Postgres arrays, which SQL
adds up with ``unnest ... GROUP BY key``).
"""

from __future__ import annotations

import functools
import math
from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate, compress

GAMMA = 1.02
RELATIVE_ACCURACY = (GAMMA - 1) / (GAMMA + 1)
LOG_GAMMA = math.log(GAMMA)
ZERO_KEY = -1  # latencies are whole milliseconds: 0 is the only value below 1, and has a bucket of its own
QUANTILES = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}


def _key(value: int) -> int:
    if value <= 0:
        return ZERO_KEY
    return math.ceil(math.log(value) / LOG_GAMMA)


_ONE: dict[int, int] = {}
# Latencies below 65.5 s: a list lookup, not a log (ingest's hot path); one int object per key.
_TABLE = [_ONE.setdefault(k, k) for k in map(_key, range(1 << 16))]


def key_of(value: int) -> int:
    return _TABLE[value] if 0 <= value < 65536 else _key(value)


@functools.cache
def key_bounds() -> tuple[list[int], list[int]]:
    """Every key a latency column can hold (0 to 2**31 - 1 ms) and the smallest value of each, both
    ascending: ``keys[bisect_right(bounds, v) - 1]`` is ``key_of(v)``. (SQL works keys out with
    them, `width_bucket`, so that Postgres and Python never disagree on a rounding.)"""
    bounds: list[int] = []
    keys: list[int] = []
    for value, key in enumerate(_TABLE):
        if not keys or key != keys[-1]:
            bounds.append(value)
            keys.append(key)
    top = (1 << 31) - 1
    while keys[-1] < _key(top):
        low, high = bounds[-1] + 1, top  # the smallest value past the last key's
        while low < high:
            mid = (low + high) // 2
            if _key(mid) > keys[-1]:
                high = mid
            else:
                low = mid + 1
        bounds.append(low)
        keys.append(_key(low))
    return bounds, keys


def value_of(key: int) -> float:
    """The bucket's representative; the value itself when the bucket holds a single whole number
    (below ~50 ms buckets are narrower than 1 ms, and latencies are whole milliseconds)."""
    if key == ZERO_KEY:
        return 0.0
    high = GAMMA**key
    low = high / GAMMA
    top = math.floor(high)
    if low < top and top - 1 <= low:
        return float(top)
    return 2 * high / (GAMMA + 1)


def add(counts: dict[int, int], value: int) -> None:
    key = key_of(value)
    counts[key] = counts.get(key, 0) + 1


def merge_into(counts: dict[int, int], other: dict[int, int]) -> None:
    get = counts.get
    for key, n in other.items():
        counts[key] = get(key, 0) + n


def merge_arrays(counts: dict[int, int], keys: list[int] | None, ns: list[int] | None, sign: int = 1) -> None:
    """Add (``sign`` -1: take away) a stored histogram (``arrays``' output) into ``counts``."""
    if not keys:
        return
    if sign == 1 and not counts:
        counts.update(zip(keys, ns or (), strict=True))  # the common case: an interval's first row
        return
    get = counts.get
    if sign == 1:
        for key, n in zip(keys, ns or (), strict=True):
            counts[key] = get(key, 0) + n
    else:
        for key, n in zip(keys, ns or (), strict=True):
            counts[key] = get(key, 0) - n


# Dense accumulators: a list indexed by key, for adding up many stored histograms into one (a
# 30-day series point of ~90 rows): ``acc[key] += n`` costs a third of a dict's get-and-set. Keys
# run from ZERO_KEY (-1: Python's last item, a slot of its own) to the key of the largest latency a
# trace stores (a 32-bit integer of milliseconds).
DENSE_SIZE = _key(2**31) + 2


def dense() -> list[int]:
    return [0] * DENSE_SIZE


def add_dense(acc: list[int], keys: list[int] | None, ns: list[int] | None, sign: int = 1) -> bool:
    """Add (``sign`` -1: take away) a stored histogram into ``acc`` (`dense`); False, with nothing
    added, when a key lies outside it (then merge into a dict)."""
    if not keys:
        return True
    if max(keys) >= DENSE_SIZE - 1:
        return False
    if sign == 1:
        for key, n in zip(keys, ns or (), strict=True):
            acc[key] += n
    else:
        for key, n in zip(keys, ns or (), strict=True):
            acc[key] -= n
    return True


def merge_dense(counts: dict[int, int], acc: list[int]) -> None:
    """Add a dense accumulator into ``counts`` (its non-zero keys only)."""
    get = counts.get
    zero = acc[ZERO_KEY]
    if zero:
        counts[ZERO_KEY] = get(ZERO_KEY, 0) + zero
    for key in compress(range(DENSE_SIZE - 1), acc):
        counts[key] = get(key, 0) + acc[key]


def arrays(counts: dict[int, int]) -> tuple[list[int], list[int]]:
    """The stored form: keys ascending, and their counts (empty buckets left out)."""
    keys = sorted(k for k, n in counts.items() if n)
    return keys, [counts[k] for k in keys]


def quantiles(counts: dict[int, int], qs: Iterable[float]) -> list[float | None]:
    """The value at rank ``floor(q * (n - 1))`` of the sorted values (lower nearest rank), each
    within RELATIVE_ACCURACY (+ the rounding to 0.001 ms) of the exact one, so within 1%; None
    when the histogram is empty."""
    keys = sorted(counts)
    return quantiles_of_arrays(keys, list(map(counts.__getitem__, keys)), qs)


def quantiles_of_arrays(keys: list[int], ns: list[int], qs: Iterable[float]) -> list[float | None]:
    """`quantiles` of a histogram in its stored form (``arrays``: keys ascending, their counts)."""
    running = list(accumulate(ns))  # values at or below each key
    total = running[-1] if running else 0
    if total <= 0:
        return [None for _q in qs]
    # (An empty bucket, say one a day row less its hours emptied, is never picked: its running
    # count equals the one before it, and bisect_right finds the first key whose count passes rank.)
    return [round(value_of(keys[bisect_right(running, math.floor(q * (total - 1)))]), 3) for q in qs]
