"""Reads: the feed page (filtered, cursor-paginated, newest first), one trace, plants.

A trace's deliveries are read by `delivery.selectors.trace_deliveries`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from django.db.models import Q, QuerySet

from config import cursors

from .filters import TraceFilter
from .models import Plant, Trace

FEED_DEFERRED = ("input", "output", "routing")


class CursorError(ValueError):
    pass


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
    *, team_id: int, trace_filter: TraceFilter, limit: int, cursor: str | None = None
) -> tuple[Sequence[Trace], str | None]:
    """One page of the feed, newest first, and the cursor of the next page (None at the end).

    Keyset pagination on (timestamp, id): `timestamp <= t` bounds the index scan, the OR only
    breaks ties, so a deep page costs what the first one does.
    """
    qs = traces_for_team(team_id, trace_filter).defer(*FEED_DEFERRED)
    if cursor:
        when, ident = decode_cursor(cursor)
        qs = qs.filter(timestamp__lte=when).filter(Q(timestamp__lt=when) | Q(id__lt=ident))
    rows = list(qs.order_by("-timestamp", "-id")[: limit + 1])
    if len(rows) > limit:
        return rows[:limit], encode_cursor(rows[limit - 1])
    return rows, None


def trace_get(*, team_id: int, trace_id: str) -> Trace | None:
    return Trace.objects.filter(team_id=team_id, trace_id=trace_id).first()


def plants_for_team(team_id: int, *, limit: int | None = None) -> QuerySet[Plant]:
    qs = Plant.objects.filter(team_id=team_id).order_by("id")
    return qs[:limit] if limit else qs
