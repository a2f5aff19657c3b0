"""A span's ancestors, read for destinations that must name them all (LangSmith's ``dotted_order``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from .models import Trace
from .records import TraceRecord

MAX_DEPTH = 256  # a run deeper than this is cut here (and a parent cycle cannot loop)


@dataclass(frozen=True, slots=True)
class Ancestor:
    trace_id: str
    timestamp: datetime


def ancestors(team_id: int, spans: Sequence[TraceRecord]) -> dict[str, tuple[Ancestor, ...] | None]:
    """Per span with a parent (by trace id): its stored ancestors, root first, or None when one of
    them has not arrived yet. One query per level of the tree, for all the spans at once."""
    known: dict[str, tuple[str, datetime]] = {}  # trace id → (parent id, timestamp), of this team's runs
    runs = {s.run for s in spans}
    wanted = {s.parent_id for s in spans if s.parent_id}
    for _ in range(MAX_DEPTH):
        wanted -= known.keys()
        if not wanted:
            break
        rows = Trace.objects.filter(team_id=team_id, run_id__in=runs, trace_id__in=wanted)
        found = rows.values_list("trace_id", "parent_id", "timestamp")
        for trace_id, parent_id, timestamp in found:
            known[trace_id] = (parent_id, timestamp)
        wanted = {parent for parent, _ in (known[t] for t in wanted if t in known) if parent}
    out: dict[str, tuple[Ancestor, ...] | None] = {}
    for span in spans:
        if not span.parent_id:
            continue
        chain: list[Ancestor] = []
        current = span.parent_id
        while current and len(chain) < MAX_DEPTH:
            if current not in known:
                chain = []
                break
            parent, timestamp = known[current]
            chain.append(Ancestor(current, timestamp))
            current = parent
        out[span.trace_id] = tuple(reversed(chain)) if chain else None
    return out
