"""Keeping the rollups: traces are pending when stored, and `fold` (beat, every few seconds) adds
them into the minute, hour and day tables.

Ingest sends nothing for the rollups: every trace row carries the id of the transaction that stored
it (a column default), and the fold adds the traces whose transactions its stored snapshot does not
see yet, then stores the newer snapshot, in one transaction (`analytics.snapshots`). (Processes of
the previous release, in a rolling deploy, write one `PendingBatch` row per team of the
transaction, naming its traces; the fold adds and deletes those rows.) The fold works out the
traces' deltas (`build_deltas`: one per team, minute and dimension combination, and one per team,
minute and tag), adds those into the minute, hour and day tables, deriving the team-wide and
one-dimension rows there. One folder at a time (an advisory lock). Until the fold, readers count
pending traces from the traces table (`analytics.pending`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from config.bulk import build_row, insert_rows
from traces.models import CALL_KINDS, Trace

from . import sketch, snapshots
from .models import (
    COUNTERS,
    DIMENSIONS,
    GRAINS,
    HISTOGRAMS,
    ONE_DIMENSION,
    USAGE_PARTS,
    Kind,
    PendingBatch,
    RollupDelta,
    RollupFields,
)
from .stats import Stats, cost_units

FOLD_TRACES = 20_000  # traces per fold transaction (plus the rest of the last transaction's)
FOLD_BATCH = 500  # pending batch rows per fold transaction (up to 1,000 traces each)
LOAD_CHUNK = 2_000  # trace ids per query when the fold loads traces
LEGACY_BATCH = 5_000  # legacy delta rows (RollupDelta) per fold transaction
_FOLD_LOCK = 0x7472_6163_6572  # pg advisory lock id: "tracer"
_BLANK_DIMS = ("",) * len(DIMENSIONS)
_STATUS = DIMENSIONS.index("status")
SliceKey = tuple[int, int, int, str, str, str, str, str, str]  # team, bucket, kind, *DIMENSIONS, key
# What `build_deltas` reads of a trace, in this order (a `values_list` row).
TRACE_COLUMNS = (
    "team_id",
    "timestamp",
    "model",
    "provider",
    "status",
    "environment",
    "service_name",
    "tags",
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


def as_columns(trace: Any) -> tuple[Any, ...]:
    """A trace (or anything with its attributes) as a `build_deltas` row."""
    return tuple(getattr(trace, name) for name in TRACE_COLUMNS)


def build_deltas(rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The deltas of traces given as TRACE_COLUMNS tuples: rows laid out as `_ROW_COLUMNS`, one per
    team, minute and dimension combination (DIMS) and per team, minute and tag (TAG). The fold's
    inner loop (bench/analytics_write.py): each trace's figures are worked out once and added inline
    into plain lists, not through `Stats.add_trace` per row; the histogram key is a table lookup
    (`sketch.key_of`); costs are added as Decimals (exact) and turned into 1e-10 USD once per row.
    (A column-wise version, grouping first and summing with builtins, was 2x faster on few
    combinations and 2x slower on realistic ones, where most groups hold one or two traces; adding
    up in SQL cost Postgres more than this costs Python.)"""
    acc: dict[tuple[Any, ...], list[Any]] = {}
    key_of = sketch.key_of
    zero = _ZERO
    for (team_id, timestamp, model, provider, status, environment, service_name, tags, prompt, completion, total,
         cost, unpriced, usage_estimated, latency, ttft, cached, cache_write, reasoning, audio_in, image_in,
         audio_out, image_out) in rows:  # fmt: skip
        minute = int(timestamp.timestamp()) // 60 * 60
        lkey = None if latency is None else key_of(latency)
        tkey = None if ttft is None else key_of(ttft)
        keys: list[tuple[Any, ...]] = [(team_id, minute, model, provider, status, environment, service_name)]
        if tags:
            keys.extend((team_id, minute, tag) for tag in set(tags) if isinstance(tag, str))
        for key in keys:
            a = acc.get(key)
            if a is None:
                a = acc[key] = [0, 0, 0, 0, 0, 0, 0, zero, 0, 0, 0, 0, 0, 0, {}, {}, 0, 0, 0, 0, 0, 0, 0]
            a[0] += 1
            if status == "success":
                a[1] += 1
            elif status == "error":
                a[2] += 1
            elif status == "rate_limited":
                a[3] += 1
            a[4] += prompt
            a[5] += completion
            a[6] += total
            a[16] += cached
            a[17] += cache_write
            a[18] += reasoning
            a[19] += audio_in
            a[20] += image_in
            a[21] += audio_out
            a[22] += image_out
            if cost is not None:
                a[7] += cost
            a[8] += unpriced
            a[9] += usage_estimated
            if lkey is not None:
                a[10] += 1
                a[11] += latency
                a[14][lkey] = a[14].get(lkey, 0) + 1
            if tkey is not None:
                a[12] += 1
                a[13] += ttft
                a[15][tkey] = a[15].get(tkey, 0) + 1
    out = []
    dims_kind, tag_kind = Kind.DIMS.value, Kind.TAG.value
    for key, a in acc.items():
        counters = (*a[:7], cost_units(a[7]), *a[8:14], *a[16:23])
        hists = (*sketch.arrays(a[14]), *sketch.arrays(a[15]))
        if len(key) == 3:
            out.append((key[0], key[1], tag_kind, *_BLANK_DIMS, key[2], *counters, *hists))
        else:
            out.append((key[0], key[1], dims_kind, *key[2:], "", *counters, *hists))
    return out


_ZERO = Decimal(0)


def fold(*, batch: int = FOLD_BATCH, traces: int = FOLD_TRACES) -> int:
    """Fold every trace pending now into the minute/hour/day rollups; how many traces (plus legacy
    delta rows, `RollupDelta`). Batch rows are those of processes still on the previous release in a
    rolling deploy (their traces' ``rollup_xid`` is cleared by a trigger: they count through their
    batch only); so are delta rows, of the release before."""
    total = 0
    while done := _fold_legacy_once(LEGACY_BATCH):
        total += done
        if done < LEGACY_BATCH:
            break
    while True:
        batches, done = _fold_once(batch)
        total += done
        if batches < batch:
            break
    while True:
        done, more = _fold_xids_once(traces)
        total += done
        if not more:
            break
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


def take_fold_lock() -> bool:
    """Take the fold's lock for this transaction; False when another folder holds it. (The previous
    release's fold takes the same lock.)"""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_FOLD_LOCK])
        return bool(cursor.fetchone()[0])


def _fold_legacy_once(batch: int) -> int:
    """Add up to ``batch`` legacy delta rows into the rollups and delete them, in one transaction."""
    with transaction.atomic():
        if not take_fold_lock():
            return 0
        rows = list(RollupDelta.objects.values_list("id", *_ROW_COLUMNS)[:batch])
        if not rows:
            return 0
        add_deltas([row[1:] for row in rows])
        ids = [row[0] for row in rows]
        for i in range(0, len(ids), 1000):
            RollupDelta.objects.filter(pk__in=ids[i : i + 1000])._raw_delete(RollupDelta.objects.db)
    return len(rows)


def _fold_once(batch: int) -> tuple[int, int]:
    """One transaction: claim up to ``batch`` pending batches, add their traces into the rollups,
    delete them; (batches, traces folded). A trace deleted meanwhile (retention) is not found."""
    with transaction.atomic():
        if not take_fold_lock():
            return 0, 0  # another folder is at it
        claimed = PendingBatch.objects.order_by("id").select_for_update(skip_locked=True)
        pending = list(claimed.values_list("id", "trace_ids")[:batch])
        if not pending:
            return 0, 0
        ids = [trace_id for _pk, trace_ids in pending for trace_id in trace_ids]
        rows: list[tuple[Any, ...]] = []
        for i in range(0, len(ids), LOAD_CHUNK):
            chunk = Trace._base_manager.filter(pk__in=ids[i : i + LOAD_CHUNK], kind__in=CALL_KINDS)
            rows += chunk.values_list(*TRACE_COLUMNS)
        add_deltas(build_deltas(rows))
        done = [pk for pk, _ids in pending]
        for i in range(0, len(done), 1000):
            PendingBatch.objects.filter(pk__in=done[i : i + 1000])._raw_delete(PendingBatch.objects.db)
    return len(pending), len(rows)


def _fold_xids_once(limit: int) -> tuple[int, bool]:
    """One transaction: add the traces pending after the stored snapshot and visible in
    the current one (up to about ``limit``: then up to a transaction id, `Snapshot.cut`) into the
    rollups, and store the snapshot they were taken to; (traces folded, whether more are left)."""
    table = connection.ops.quote_name(Trace._meta.db_table)
    with transaction.atomic():
        if not take_fold_lock():
            return 0, False
        saved, now = snapshots.stored(), snapshots.current()
        if now.xmax < saved.xmin:
            raise snapshots.IdsWentBack(saved, now)
        pending, params = snapshots.pending_where(saved)
        visible = f"pg_visible_in_snapshot({snapshots.COLUMN}, %s::pg_snapshot)"
        column, (xmax, xip) = snapshots.COLUMN, snapshots.values(saved)
        with connection.cursor() as cursor:  # the transaction at the limit, in id order
            cursor.execute(  # (the range part walks the index in order and stops: a backlog is not sorted)
                f"SELECT x::text FROM ((SELECT {column} AS x FROM {table} WHERE {column} = ANY(%s::xid8[])"
                f" AND {visible}) UNION ALL (SELECT {column} FROM {table} WHERE {column} >= %s::xid8 AND {visible}"
                f" ORDER BY {column} LIMIT %s)) p ORDER BY x OFFSET %s LIMIT 1",
                [xip, str(now), xmax, str(now), limit + 1, limit],
            )
            over = cursor.fetchone()
        # Up to and including that transaction (never below the stored xmax: what the stored snapshot
        # saw, the new one must see too).
        target = now if over is None else now.cut(max(int(over[0]) + 1, saved.xmax))
        if target == saved:
            return 0, False
        done = add_traces_where(f"{pending} AND {visible}", [*params, str(target)])
        snapshots.store(target)
    return done, target != now


def add_traces_where(sql: str, params: list[Any]) -> int:
    """Add the traces (calls: no structural spans) that ``sql`` on the traces table picks into the rollups;
    how many. Call it holding the fold lock."""
    where = RawSQL(sql, params, output_field=BooleanField())
    rows = list(Trace._base_manager.filter(where, kind__in=CALL_KINDS).values_list(*TRACE_COLUMNS))
    add_deltas(build_deltas(rows))
    return len(rows)


def add_deltas(
    deltas: Iterable[tuple[Any, ...]], grains: dict[str, tuple[int, type[RollupFields]]] | None = None
) -> None:
    """Add delta rows (`build_deltas`' layout) into the minute, hour and day tables (``grains``: the
    models to write, the migration's historical ones; default the app's). Call it holding the fold
    lock, or where no fold runs (the migration, the benches' loaders)."""
    grains = grains or GRAINS
    folded: dict[str, dict[SliceKey, Stats]] = {grain: defaultdict(Stats) for grain in grains}
    for row in deltas:
        team_id, bucket, kind = row[0], row[1], row[2]
        stats = Stats()
        stats.add_stored(row[9 : 9 + _NC], row[9 + _NC :])
        slices = slices_of(kind, tuple(row[3:8]), row[8])
        for grain, (size, _model) in grains.items():
            start = bucket // size * size
            target = folded[grain]
            for s_kind, s_dims, s_key in slices:
                target[(team_id, start, s_kind, *s_dims, s_key)].merge(stats)  # type: ignore[index]
    for grain, (_size, model) in grains.items():
        _add_into(model, folded[grain])


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

    for slice_key, stats in entries.items():
        values = stats.stored_values()
        row_id = existing.get(slice_key)
        if row_id is not None:
            updates.append([*values.values(), row_id])
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


def wait_fold_lock() -> None:
    """Take the fold's lock for this transaction, waiting for a fold that holds it (re-pricing: its
    corrections must not interleave with a fold's read-add-write of the same rows)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_FOLD_LOCK])


# A folded trace whose price changed (`correct_costs`): where it counts, and by how much its cost
# (1e-10 USD) and its unpriced count (-1, 0 or 1) change.
CostChange = tuple[int, Any, str, str, str, str, str, Any, int, int]  # team, timestamp, *DIMENSIONS, tags, Δ


def correct_costs(changes: Iterable[CostChange]) -> int:
    """Apply the cost and unpriced deltas of re-priced traces that are folded already to every
    minute, hour and day row they count in (the same slices the fold adds them to: `slices_of`); how
    many rows were updated. Rows gone past retention are left gone. Call it holding the fold lock
    (`wait_fold_lock`): a fold reads, adds and writes rows back."""
    folded: dict[str, dict[SliceKey, list[int]]] = {grain: defaultdict(lambda: [0, 0]) for grain in GRAINS}
    for team_id, timestamp, model, provider, status, environment, service_name, tags, d_cost, d_unpriced in changes:
        if not d_cost and not d_unpriced:
            continue
        minute = int(timestamp.timestamp()) // 60 * 60
        dims = (model, provider, status, environment, service_name)
        slices = slices_of(Kind.DIMS.value, dims, "")
        for tag in set(tags or ()):
            if isinstance(tag, str):
                slices += slices_of(Kind.TAG.value, _BLANK_DIMS, tag)
        for grain, (size, _model) in GRAINS.items():
            start = minute // size * size
            target = folded[grain]
            for s_kind, s_dims, s_key in slices:
                entry = target[(team_id, start, s_kind, *s_dims, s_key)]  # type: ignore[index]
                entry[0] += d_cost
                entry[1] += d_unpriced
    updated = 0
    for grain, (_size, model_class) in GRAINS.items():
        entries = [(key, d) for key, d in folded[grain].items() if d[0] or d[1]]
        if not entries:
            continue
        # One UPDATE per grain, joined to the deltas as arrays (a statement per row cost 1 s a chunk).
        columns: list[list[Any]] = [[d[0] for _k, d in entries], [d[1] for _k, d in entries]]
        columns += [[key[i] for key, _d in entries] for i in range(9)]
        names = ["d_cost", "d_unpriced", *_ROW_COLUMNS[:9]]
        types = ["bigint", "bigint", "bigint", "bigint", "smallint", *["text"] * 6]
        arrays = ", ".join(f"%s::{t}[]" for t in types)
        join = " AND ".join(f"r.{connection.ops.quote_name(c)} = v.{connection.ops.quote_name(c)}" for c in names[2:])
        table = connection.ops.quote_name(model_class._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} r SET cost_e10 = r.cost_e10 + v.d_cost, unpriced = r.unpriced + v.d_unpriced"
                f" FROM unnest({arrays}) AS v({', '.join(connection.ops.quote_name(n) for n in names)}) WHERE {join}",
                columns,
            )
            updated += max(cursor.rowcount, 0)
    return updated
