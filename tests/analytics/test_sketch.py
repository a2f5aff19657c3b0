"""The log-bucket histogram: every quantile within 1% of the exact value, merging loses nothing."""

from __future__ import annotations

import math
import random

import pytest

from analytics import sketch


def exact(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[math.floor(q * (len(ordered) - 1))]


@pytest.mark.parametrize("seed", range(5))
def test_it_is_within_one_percent_at_every_quantile(seed):
    rng = random.Random(seed)
    values = [int(rng.lognormvariate(rng.uniform(2, 9), rng.uniform(0.2, 2))) for _ in range(rng.randint(1, 5000))]
    counts: dict[int, int] = {}
    for v in values:
        sketch.add(counts, v)
    qs = [i / 100 for i in range(101)]
    for q, got in zip(qs, sketch.quantiles(counts, qs), strict=True):
        want = exact(values, q)
        assert got is not None
        assert abs(got - want) <= 0.01 * want


def test_it_covers_the_whole_range_of_a_latency_column():
    for v in (0, 1, 2, 3, 999, 1000, 1001, 65_535, 2_147_483_647):
        counts: dict[int, int] = {}
        sketch.add(counts, v)
        (got,) = sketch.quantiles(counts, [0.5])
        assert got is not None
        assert abs(got - v) <= 0.01 * v


def test_merging_equals_counting_everything_at_once():
    rng = random.Random(7)
    parts = [[rng.randint(0, 60_000) for _ in range(rng.randint(0, 300))] for _ in range(20)]
    whole: dict[int, int] = {}
    for part in parts:
        for v in part:
            sketch.add(whole, v)
    merged: dict[int, int] = {}
    for part in parts:
        counts: dict[int, int] = {}
        for v in part:
            sketch.add(counts, v)
        sketch.merge_arrays(merged, *sketch.arrays(counts))
    assert merged == whole
    keys, ns = sketch.arrays(whole)
    assert keys == sorted(whole) and sum(ns) == sum(whole.values())


def test_taking_a_part_away_leaves_the_rest():
    rng = random.Random(8)
    part, rest = [rng.randint(0, 60_000) for _ in range(200)], [rng.randint(0, 60_000) for _ in range(300)]
    whole: dict[int, int] = {}
    for v in part + rest:
        sketch.add(whole, v)
    only_rest: dict[int, int] = {}
    for v in rest:
        sketch.add(only_rest, v)
    part_counts: dict[int, int] = {}
    for v in part:
        sketch.add(part_counts, v)
    sketch.merge_arrays(whole, *sketch.arrays(part_counts), sign=-1)
    assert sketch.arrays(whole) == sketch.arrays(only_rest)  # emptied buckets are left out
    assert sketch.quantiles(whole, [0.5]) == sketch.quantiles(only_rest, [0.5])


def test_an_empty_histogram_has_no_quantiles():
    assert sketch.quantiles({}, [0.5, 0.99]) == [None, None]
    assert sketch.arrays({}) == ([], [])


def test_dense_adding_equals_adding_into_a_dict():
    """`add_dense` and `merge_dense` (many rows of one cell): zero latencies (ZERO_KEY, Python's
    index -1), the largest latency a trace stores, parts taken away, into a dict with counts."""
    rng = random.Random(9)
    parts = [[rng.choice([0, 0, 1, 7, 2_147_483_647, rng.randint(0, 60_000)]) for _ in range(50)] for _ in range(12)]
    signs = [1] * 9 + [-1] * 3
    want: dict[int, int] = {5: 3, sketch.ZERO_KEY: 2}
    got = dict(want)
    acc = sketch.dense()
    for part, sign in zip(parts, signs, strict=True):
        counts: dict[int, int] = {}
        for v in part:
            sketch.add(counts, v)
        sketch.merge_arrays(want, *sketch.arrays(counts), sign=sign)
        assert sketch.add_dense(acc, *sketch.arrays(counts), sign=sign)
    sketch.merge_dense(got, acc)
    assert {k: n for k, n in got.items() if n} == {k: n for k, n in want.items() if n}


def test_a_key_past_the_dense_range_is_refused_untouched():
    acc = sketch.dense()
    assert not sketch.add_dense(acc, [3, sketch.DENSE_SIZE - 1], [1, 1])
    assert not any(acc)
    assert sketch.add_dense(acc, [], [])


def test_key_bounds_key_every_latency_as_key_of():
    """`key_bounds` (SQL keys a pending trace's latency with them) agree with `key_of` everywhere:
    every value below 70,000, every bound and its neighbours, and random values up to 2**31 - 1."""
    from bisect import bisect_right

    bounds, keys = sketch.key_bounds()
    assert bounds == sorted(set(bounds)) and keys == sorted(set(keys)) and bounds[0] == 0
    rng = random.Random(10)
    values = [*range(70_000), *(b + d for b in bounds for d in (-1, 0, 1) if b + d >= 0)]
    values += [rng.randint(0, 2**31 - 1) for _ in range(20_000)] + [2**31 - 1]
    for v in values:
        assert keys[bisect_right(bounds, v) - 1] == sketch.key_of(v), v
