"""Which folded rollup rows a read adds up: `Part`s, one SELECT each (a table, a slice, time ranges, a
sign), which `analytics.merged` reads in one statement."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from .models import GRAINS, RollupFields
from .plan import Ranges
from .slices import Slice
from .stats import Stats

Acc = defaultdict[tuple[int, Any], Stats]


@dataclass(frozen=True)
class Part:
    """One SELECT of rollup rows: a table, the rows of the slice in ``ranges`` (less ``skip``),
    counted with ``sign`` into the interval that ``anchor`` names."""

    model: type[RollupFields]
    kind: int
    where: dict[str, Any]
    group: str | None
    ranges: Ranges
    sign: int = 1
    anchor: str = "bucket"  # "bucket", "day_noon" (day rows), "noon_of_day" (taken-away hours)
    skip: Ranges = dataclasses.field(default_factory=list)


def lookup_sql(column: str, lookup: str, value: Any, params: list[Any]) -> str:
    """A slice's Django lookup (the part of ``lookup`` after the field: "" or exact, ``in``,
    ``startswith``, ``has_item`` on a JSON list) as SQL on ``column``, its values added to
    ``params``; the SQL readers of folded rows (`analytics.merged`) and of pending traces
    (`analytics.pending`) share it."""
    if lookup in ("", "exact"):
        params.append(value)
        return f"{column} = %s"
    if lookup == "in":
        params.append(list(value))
        return f"{column} = ANY(%s)"
    if lookup == "startswith":  # (not LIKE: no escaping, and exact for any prefix)
        params.extend((len(value), value))
        return f"left({column}, %s) = %s"
    if lookup == "has_item":
        params.append(value)
        return f"{column} @> jsonb_build_array(%s::text)"
    raise ValueError(f"analytics: no SQL for the lookup {lookup!r}")


def parts_of(slice_: Slice, pieces: dict[str, Ranges], *, extra_where: dict[str, Any] | None = None) -> list[Part]:
    """The folded rows of ``pieces`` (the traces not folded yet: `analytics.pending`)."""
    where = {**slice_.where, **(extra_where or {})}
    parts = []
    for grain, ranges in pieces.items():
        if grain == "raw" or not ranges:
            continue
        model = GRAINS[grain.lstrip("-")][1]
        if grain == "-hour":
            parts.append(Part(model, slice_.kind, where, slice_.group, ranges, -1, "noon_of_day"))
        else:
            parts.append(Part(model, slice_.kind, where, slice_.group, ranges, 1, _ANCHOR.get(grain, "bucket")))
    return parts


_ANCHOR = {"day": "day_noon"}
