"""Reads: the feed page (filtered, cursor-paginated, newest first), one trace, plants.

A trace's deliveries are read by `delivery.selectors.trace_deliveries`.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from django.db import connections, transaction
from django.db.models import Count, Max, Min, Q, QuerySet, Sum

from config import cursors

from .filters import TraceFilter
from .models import CALL_KINDS, FeedColumn, FeedColumns, Plant, Status, Trace
from .usage import DETAIL_FIELDS

FEED_DEFERRED = ("input", "output", "routing")
FEED_DEFERRED_WITH_INPUT = ("output", "routing")  # the prompt preview column reads the input
USUAL_SAMPLE = 1_000  # the newest traces the team's usual environment is counted over
USUAL_TTL_S = 60
_usual: dict[int, tuple[float, str]] = {}  # team id → (when counted, monotonic; environment)


class CursorError(ValueError):
    pass


# Before every trace: `after` this cursor is everything the filter matches (an empty feed's tail starts here).
FLOOR_CURSOR = cursors.encode_cursor(f"{datetime(1970, 1, 1, tzinfo=UTC).isoformat()}|{uuid.UUID(int=0)}")


def encode_cursor(trace: Trace) -> str:
    return cursors.encode_cursor(f"{trace.timestamp.isoformat()}|{trace.id}")


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        raw = cursors.decode_cursor(cursor)
        stamp, _, ident = raw.partition("|")
        when = datetime.fromisoformat(stamp)
        if when.tzinfo is None:
            raise ValueError("naive")
        return when, uuid.UUID(ident)
    except ValueError:
        raise CursorError("Not a cursor this API gave out: pass next_cursor as it came.")


def traces_for_team(team_id: int, trace_filter: TraceFilter | None = None) -> QuerySet[Trace]:
    qs = Trace.objects.filter(team_id=team_id)
    return trace_filter.apply(qs) if trace_filter is not None else qs


def trace_page(
    *, team_id: int, trace_filter: TraceFilter, limit: int, cursor: str | None = None, with_input: bool = False
) -> tuple[Sequence[Trace], str | None]:
    """One page of the feed, newest first, and the cursor of the next page (None at the end).

    Keyset pagination on (timestamp, id): `timestamp <= t` bounds the index scan, the OR only
    breaks ties, so a deep page costs what the first one does.
    """
    qs = traces_for_team(team_id, trace_filter).defer(*(FEED_DEFERRED_WITH_INPUT if with_input else FEED_DEFERRED))
    rows = _keyset_page(qs, decode_cursor(cursor) if cursor else None, limit + 1)
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1])
    return rows, None


def _keyset_page(
    qs: QuerySet[Trace], before: tuple[datetime, uuid.UUID] | None, limit: int, *, fields: Sequence[str] = ()
) -> list[Any]:
    """Up to ``limit`` rows of ``qs`` older than ``before`` (timestamp, id) in the feed's order, newest
    first: model instances, or dicts of ``fields``."""
    if before is not None:
        when, ident = before
        qs = qs.filter(timestamp__lte=when).filter(Q(timestamp__lt=when) | Q(id__lt=ident))
    page = qs.order_by("-timestamp", "-id")
    return _read_page(page.values(*fields)[:limit] if fields else page[:limit])


# What an export reads of a trace (`TraceRecord.from_trace`'s attributes): plain values, not model
# instances, which cost a third of the export's time (bench/export.py).
EXPORT_FIELDS = (
    "id", "timestamp", "trace_id", "team_id", "model", "provider", "prompt_tokens", "completion_tokens",
    "total_tokens", *DETAIL_FIELDS, "latency_ms", "time_to_first_token_ms", "status", "error_type",
    "error_message", "input", "output", "tags", "metadata", "environment", "service_name", "session_id", "user_id",
    "cost", "unpriced", "usage_estimated", "source", "client_cost", "price_source", "price_version", "run_id",
    "parent_id", "kind", "name",
)  # fmt: skip


def trace_chunks(*, team_id: int, trace_filter: TraceFilter, size: int) -> Iterator[list[SimpleNamespace]]:
    """Every trace the feed lists for ``trace_filter``, newest first, in chunks of at most ``size``
    (the export, `traces.export`): the feed's own pages, walked to the end on the (timestamp, id)
    keyset with input and output read too, so a chunk costs what a feed page does at any depth and
    the memory held is one chunk's, whatever the table's size.

    No transaction spans the chunks (a minutes-long export must not hold a snapshot that long): a
    trace stored during the walk is in it when it sorts below the rows already read.
    """
    qs = traces_for_team(team_id, trace_filter)
    before: tuple[datetime, uuid.UUID] | None = None
    while True:
        rows = [SimpleNamespace(**row) for row in _keyset_page(qs, before, size, fields=EXPORT_FIELDS)]
        if rows:
            yield rows
        if len(rows) < size:
            return
        before = (rows[-1].timestamp, rows[-1].id)


# Postgres's default (0.005) charges next to nothing per index entry read, so for a page near the end
# of a sparse filter it prefers a bitmap of everything the filter's indexes match to the keyset scan
# that stops after the page: model=gpt-4o&status=error&tag=tag-03, pages 4-7 of 1M traces, a BitmapAnd
# of `trace_model_failed` and the tags' GIN index, ~14 ms, against ~0.9 ms down `trace_model_failed`
# (EXPLAIN ANALYZE, bench/dashboard.py's data, docs/dashboard.md). At 0.05 it walks the index on every
# page; the plans of the other filters measured stay the same.
PAGE_INDEX_TUPLE_COST = "0.05"


def _read_page(qs: QuerySet[Any]) -> list[Any]:
    connection = connections[qs.db]
    with transaction.atomic(using=qs.db):
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL cpu_index_tuple_cost = {PAGE_INDEX_TUPLE_COST}")
        rows = list(qs)
        # Nothing was written: rolling back ends the setting with this block (to its savepoint when the
        # caller is in a transaction already) where a commit would leave it for the caller's queries.
        transaction.set_rollback(True, using=qs.db)
    return rows


def usual_environment(team_id: int) -> str:
    """The environment most of the team's newest traces carry ("" when most carry none): the feed
    badges only the others. Counted over the newest USUAL_SAMPLE down the `trace_feed` index (~2 ms)
    and kept by this process for USUAL_TTL_S, so the live poll every 2 s pays nothing for it."""
    now = time.monotonic()
    known = _usual.get(team_id)
    if known is not None and now - known[0] < USUAL_TTL_S:
        return known[1]
    newest = Trace.objects.filter(team_id=team_id).order_by("-timestamp", "-id")[:USUAL_SAMPLE]
    counts = Counter(newest.values_list("environment", flat=True))
    usual = counts.most_common(1)[0][0] if counts else ""
    if counts:  # a team with no trace yet is asked again next time
        _usual[team_id] = (now, usual)
    return usual


def feed_columns(user_id: int) -> list[str]:
    """The optional feed columns the person chose (FeedColumn values, in FeedColumn order); none by default."""
    chosen = FeedColumns.objects.filter(user_id=user_id).values_list("columns", flat=True).first() or []
    return [c.value for c in FeedColumn if c.value in chosen]


def trace_get(*, team_id: int, trace_id: str) -> Trace | None:
    return Trace.objects.filter(team_id=team_id, trace_id=trace_id).first()


def plants_for_team(team_id: int, *, limit: int | None = None) -> QuerySet[Plant]:
    qs = Plant.objects.filter(team_id=team_id).order_by("id")
    return qs[:limit] if limit else qs


def traces_newer(
    *, team_id: int, trace_filter: TraceFilter, after: str, limit: int, with_input: bool = False
) -> tuple[list[Trace], str]:
    """The live feed's poll: up to ``limit`` rows newer than the cursor ``after`` (the newest shown),
    newest first, and the cursor of the newest row now shown.

    Oldest first under the hood, so a burst larger than ``limit`` arrives over several polls with no
    gap. The `trace_feed` index (team, -timestamp, -id) is walked from the cursor up: the cost of a
    poll depends on how many rows are newer, never on the table's size.
    """
    when, ident = decode_cursor(after)
    qs = traces_for_team(team_id, trace_filter).defer(*(FEED_DEFERRED_WITH_INPUT if with_input else FEED_DEFERRED))
    qs = qs.filter(timestamp__gte=when).filter(Q(timestamp__gt=when) | Q(id__gt=ident))
    rows = list(qs.order_by("timestamp", "id")[:limit])
    newest = encode_cursor(rows[-1]) if rows else after
    return rows[::-1], newest


def traces_newer_count(*, team_id: int, trace_filter: TraceFilter, after: str, cap: int) -> int:
    """How many rows are newer than the cursor, counted up to ``cap`` (a paused feed shows "cap+")."""
    when, ident = decode_cursor(after)
    qs = traces_for_team(team_id, trace_filter).filter(timestamp__gte=when)
    qs = qs.filter(Q(timestamp__gt=when) | Q(id__gt=ident)).order_by()
    return qs.values("id")[:cap].count()


GROUP_FIELDS = ("session_id", "user_id")
GROUP_SCAN = 50_000  # rows read at most to find the most recent ids
GROUP_PAGES = (1_000, 4_000, 15_000, 30_000)  # how they are read (sum: GROUP_SCAN); most need the first


def trace_groups(*, team_id: int, field: str, trace_filter: TraceFilter, limit: int) -> list[dict[str, Any]]:
    """The sessions (``field="session_id"``) or end users (``"user_id"``) seen within the filter's
    time range, most recently active first: calls, tokens, cost, errors, first and last seen.

    Two steps, so the cost follows ``limit``, not the range: the newest rows are read down the
    `trace_feed` index until ``limit`` distinct ids are seen (at most GROUP_SCAN rows), then only
    those ids are aggregated, through the partial index (team, <field>, -timestamp).

    The first step reads in growing pages on the (timestamp, id) cursor, not through a server-side
    cursor: outside a transaction Django declares that WITH HOLD, and Postgres then computes all
    GROUP_SCAN rows before the first is read (it was most of /sessions' time). A page brings the ids
    alone; the cursor is its last row, read on its own (OFFSET) only when another page follows.
    """
    if field not in GROUP_FIELDS:
        raise ValueError(field)
    matching = traces_for_team(team_id, trace_filter).exclude(**{field: ""})
    ids: dict[str, None] = {}
    newest_first = matching.order_by("-timestamp", "-id")
    after: tuple[datetime, Any] | None = None
    for size in GROUP_PAGES:
        page = newest_first
        if after is not None:
            when, ident = after
            page = page.filter(timestamp__lte=when).filter(Q(timestamp__lt=when) | Q(id__lt=ident))
        # The values alone: turning 20,000 timestamps into datetimes was most of /users' CPU time.
        # The page's last row, the next page's cursor, is read by itself when another page is needed.
        values = list(page.values_list(field, flat=True)[:size])
        for value in values:
            ids.setdefault(value)
            if len(ids) >= limit:
                break
        if len(ids) >= limit or len(values) < size:
            break
        after = page.values_list("timestamp", "id")[size - 1]
    if not ids:
        return []
    llm = Q(kind__in=CALL_KINDS)  # a run's structural spans are listed, never counted as calls
    # Counting a column of the index (timestamp, never null), not id: users' totals then come from the
    # covering index `trace_user_totals` alone.
    return list(
        matching.filter(**{f"{field}__in": list(ids)})
        .values(field)
        .annotate(
            calls=Count("timestamp", filter=llm),
            tokens=Sum("total_tokens"),
            cost=Sum("cost"),
            unpriced=Count("timestamp", filter=Q(unpriced=True) & llm),
            errors=Count("timestamp", filter=~Q(status=Status.SUCCESS) & llm),
            first_seen=Min("timestamp"),
            last_seen=Max("timestamp"),
        )
        .order_by("-last_seen", field)
    )


def session_calls(*, team_id: int, session_id: str, limit: int) -> list[Trace]:
    """A session's calls in time order (with prompts and replies), at most ``limit``."""
    qs = Trace.objects.filter(team_id=team_id, session_id=session_id)
    return list(qs.order_by("timestamp", "id")[:limit])
