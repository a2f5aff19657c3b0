"""Keeping the rollups: `record` (inside ingest's transaction) and `fold` (beat, every few seconds).

`record` turns a batch of new traces into a few pre-aggregated delta rows (one per team, minute
and dimension combination, and one per team, minute and tag) and appends them with the same
COPY as the traces: insert only, so concurrent ingest transactions never wait on each other
for a counter row. `fold` moves deltas into the minute, hour and day tables in one transaction
(delete the deltas it read + add them into the folded rows), and derives the team-wide and
one-dimension rows there, off the ingest path. One folder at a time (an advisory lock on
Postgres; SQLite serialises writers anyway).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from django.db import connection, transaction

from config.bulk import build_row, insert_rows
from traces.models import SPAN_PROVIDER, Trace

from . import sketch
from .fields import IntArrayField
from .models import COUNTERS, DIMENSIONS, GRAINS, HISTOGRAMS, ONE_DIMENSION, Kind, RollupDelta, RollupFields
from .stats import Stats, cost_units

FOLD_BATCH = 20_000
_FOLD_LOCK = 0x7472_6163_6572  # pg advisory lock id: "tracer"
_BLANK_DIMS = ("",) * len(DIMENSIONS)
_STATUS = DIMENSIONS.index("status")
SliceKey = tuple[int, int, int, str, str, str, str, str, str]  # team, bucket, kind, *DIMENSIONS, key


def record(rows: Sequence[Trace]) -> None:
    """Append the rollup deltas of freshly stored traces. Call it inside the transaction that
    inserts ``rows``, so the deltas commit (or roll back) with them."""
    deltas = build_deltas(rows)
    if deltas:
        insert_rows(deltas)


def record_stored(sender: Any, *, rows: Sequence[Trace], **_: Any) -> None:
    """`traces.signals.traces_stored` receiver: the ingest path's call of `record`."""
    record(rows)


def build_deltas(rows: Iterable[Trace]) -> list[RollupDelta]:
    """The deltas of a batch. Ingest's hot path (bench/analytics_write.py): each trace's figures are
    worked out once and added inline into plain lists, not through `Stats.add_trace` per row; the
    histogram key is a table lookup (`sketch.key_of`); costs are added as Decimals (exact) and
    turned into 1e-10 USD once per row. (A column-wise version, grouping first and summing with
    builtins, was 2x faster on few combinations and 2x slower on realistic ones, where most groups
    hold one or two traces; adding up in SQL cost Postgres more than this costs Python.)"""
    acc: dict[tuple[Any, ...], list[Any]] = {}
    key_of = sketch.key_of
    zero = _ZERO
    for t in rows:
        if t.provider == SPAN_PROVIDER:  # the SDK's manual blocks are no LLM calls (traces.models)
            continue
        minute = int(t.timestamp.timestamp()) // 60 * 60
        status = t.status
        latency, ttft, cost = t.latency_ms, t.time_to_first_token_ms, t.cost
        lkey = None if latency is None else key_of(latency)
        tkey = None if ttft is None else key_of(ttft)
        keys: list[tuple[Any, ...]] = [(t.team_id, minute, t.model, t.provider, status, t.environment, t.service_name)]
        if t.tags:
            keys.extend((t.team_id, minute, tag) for tag in set(t.tags) if isinstance(tag, str))
        for key in keys:
            a = acc.get(key)
            if a is None:
                a = acc[key] = [0, 0, 0, 0, 0, 0, 0, zero, 0, 0, 0, 0, 0, 0, {}, {}]
            a[0] += 1
            if status == "success":
                a[1] += 1
            elif status == "error":
                a[2] += 1
            elif status == "rate_limited":
                a[3] += 1
            a[4] += t.prompt_tokens
            a[5] += t.completion_tokens
            a[6] += t.total_tokens
            if cost is not None:
                a[7] += cost
            a[8] += t.unpriced
            a[9] += t.usage_estimated
            if lkey is not None:
                a[10] += 1
                a[11] += latency
                a[14][lkey] = a[14].get(lkey, 0) + 1
            if tkey is not None:
                a[12] += 1
                a[13] += ttft
                a[15][tkey] = a[15].get(tkey, 0) + 1
    out = []
    for key, a in acc.items():
        values: dict[str, Any] = dict(zip(COUNTERS, a, strict=False))
        values["cost_e10"] = cost_units(a[7])
        values["latency_keys"], values["latency_counts"] = sketch.arrays(a[14])
        values["ttft_keys"], values["ttft_counts"] = sketch.arrays(a[15])
        values["team_id"], values["bucket"] = key[0], key[1]
        if len(key) == 3:
            values["kind"], values["key"] = Kind.TAG.value, key[2]
        else:
            values["kind"] = Kind.DIMS.value
            values.update(zip(DIMENSIONS, key[2:], strict=True))
        out.append(build_row(RollupDelta, values))
    return out


_ZERO = Decimal(0)
_ARRAY = IntArrayField()


def fold(*, batch: int = FOLD_BATCH) -> int:
    """Fold every delta present now into the minute/hour/day rollups; how many delta rows."""
    total = 0
    while True:
        done = _fold_once(batch)
        total += done
        if done < batch:
            return total


def slices_of(kind: int, dims: tuple[str, ...], key: str) -> list[tuple[int, tuple[str, ...], str]]:
    """The folded slices one delta row counts in: itself, and for DIMS rows the team-wide row and
    one row per dimension."""
    if kind != Kind.DIMS:
        return [(kind, _BLANK_DIMS, key)]
    out = [(kind, dims, key), (Kind.ALL.value, _BLANK_DIMS, "")]
    for one, column in ONE_DIMENSION.items():
        value = dims[DIMENSIONS.index(column)]
        if one == Kind.PROVIDER:  # provider rows keep the status too: rate-limited calls per provider
            out.append((one.value, ("", "", dims[_STATUS], "", ""), value))
        else:
            out.append((one.value, _BLANK_DIMS, value))
    return out


_ROW_COLUMNS = ("team_id", "bucket", "kind", *DIMENSIONS, "key", *COUNTERS, *HISTOGRAMS)
_NC = len(COUNTERS)


def _fold_once(batch: int) -> int:
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_FOLD_LOCK])
                if not cursor.fetchone()[0]:
                    return 0  # another folder is at it
        rows = list(RollupDelta.objects.values_list("id", *_ROW_COLUMNS)[:batch])
        if not rows:
            return 0
        folded: dict[str, dict[SliceKey, Stats]] = {grain: defaultdict(Stats) for grain in GRAINS}
        for row in rows:
            team_id, bucket, kind = row[1], row[2], row[3]
            dims = tuple(row[4:9])
            key = row[9]
            stats = Stats()
            stats.add_stored(row[10 : 10 + _NC], row[10 + _NC :])
            slices = slices_of(kind, dims, key)
            for grain, (size, _model) in GRAINS.items():
                start = bucket // size * size
                target = folded[grain]
                for s_kind, s_dims, s_key in slices:
                    target[(team_id, start, s_kind, *s_dims, s_key)].merge(stats)  # type: ignore[index]
        ids = [row[0] for row in rows]
        for i in range(0, len(ids), 1000):
            RollupDelta.objects.filter(pk__in=ids[i : i + 1000])._raw_delete(RollupDelta.objects.db)
        for grain, (_size, model) in GRAINS.items():
            _add_into(model, folded[grain])
    return len(rows)


def _add_into(model: type[RollupFields], entries: dict[SliceKey, Stats]) -> None:
    """Add ``entries`` into ``model``'s rows: read the rows that exist, add, UPDATE them by id;
    COPY the new ones. (Read-add-write is safe: one folder at a time.)"""
    buckets: dict[int, set[int]] = defaultdict(set)
    for team_id, bucket, *_rest in entries:
        buckets[team_id].add(bucket)
    existing: dict[Any, int] = {}
    for team_id, team_buckets in buckets.items():
        ordered = sorted(team_buckets)
        for i in range(0, len(ordered), 500):
            rows = model._default_manager.filter(team_id=team_id, bucket__in=ordered[i : i + 500]).values_list(
                "id", *_ROW_COLUMNS
            )
            for row in rows:
                slice_key: Any = tuple(row[1:10])
                stats = entries.get(slice_key)
                if stats is not None:
                    stats.add_stored(row[10 : 10 + _NC], row[10 + _NC :])
                    existing[slice_key] = row[0]
    updates: list[list[Any]] = []
    new_rows = []

    def prep(name: str, value: Any) -> Any:  # (a raw UPDATE: the arrays as the field stores them)
        return _ARRAY.get_db_prep_value(value, connection) if name in HISTOGRAMS else value

    for slice_key, stats in entries.items():
        values = stats.stored_values()
        row_id = existing.get(slice_key)
        if row_id is not None:
            updates.append([prep(name, value) for name, value in values.items()] + [row_id])
            continue
        team_id, bucket, kind, *dims, key = slice_key
        ident = {"team_id": team_id, "bucket": bucket, "kind": kind, "key": key}
        new_rows.append(build_row(model, ident | dict(zip(DIMENSIONS, dims, strict=True)) | values))
    if updates:
        names = [*COUNTERS, *HISTOGRAMS]
        table = connection.ops.quote_name(model._meta.db_table)
        assignments = ", ".join(f"{connection.ops.quote_name(n)} = %s" for n in names)
        with connection.cursor() as cursor:
            cursor.executemany(f"UPDATE {table} SET {assignments} WHERE id = %s", updates)
    if new_rows:
        insert_rows(new_rows)
