"""Which stored rows can answer a query: a slice of the rollups, or None (count raw traces).

The rollups hold five dimensions together (model, provider, status, environment, service), each
of them alone, the team as a whole, and tags alone. A query whose filters and group-by touch only
those dimensions reads rollups; one that filters by cost, latency, destination, metadata, session or user, groups
by user or destination, or mixes tags with anything else, counts the raw traces (bounded:
TRACERELAY_ANALYTICS_RAW_SCAN_MAX, docs/analytics.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from traces.filters import TraceFilter

from .models import ONE_DIMENSION, Kind

GROUP_BY = ("model", "provider", "status", "environment", "service", "user", "tag", "destination")
# group_by value → the trace column (raw scans); tag and destination are lists
RAW_COLUMN = {
    "model": "model",
    "provider": "provider",
    "status": "status",
    "environment": "environment",
    "service": "service_name",
    "user": "user_id",
    "tag": "tags",
    "destination": "destinations",
}
_DIM_COLUMNS = {"model", "provider", "status", "environment", "service_name"}
_KIND_OF_COLUMN = {column: kind for kind, column in ONE_DIMENSION.items()}


@dataclass(frozen=True)
class Slice:
    kind: int  # folded rows to read
    where: dict[str, Any] = field(default_factory=dict)
    group: str | None = None  # folded column to group by
    # The same slice of the traces not folded yet (analytics.pending): lookups on Trace's columns,
    # and the Trace column to group by ("tags": once under each tag).
    trace_where: dict[str, Any] = field(default_factory=dict)
    trace_group: str | None = None


def raw_reasons(trace_filter: TraceFilter, group_by: str | None) -> list[str]:
    """Why the rollups cannot answer (empty: they can)."""
    reasons = []
    if trace_filter.cost_min is not None or trace_filter.cost_max is not None:
        reasons.append("a cost filter")
    if trace_filter.latency_min is not None or trace_filter.latency_max is not None:
        reasons.append("a latency filter")
    if trace_filter.destinations:
        reasons.append("a destination filter")
    if trace_filter.metadata:
        reasons.append("a metadata filter")
    if trace_filter.session_id or trace_filter.user_id:
        reasons.append("a session or user filter")
    if trace_filter.unpriced is not None or trace_filter.usage_estimated is not None:
        reasons.append("an unpriced or usage_estimated filter")
    if trace_filter.session_id or trace_filter.user_id:  # (the rollups hold neither)
        reasons.append("a session_id or user_id filter")
    if trace_filter.run_id or trace_filter.kinds:
        reasons.append("a run_id or kind filter")
    if trace_filter.scores:  # (the rollups know no scores: counted from the scored traces)
        reasons.append("a score filter")
    if group_by in ("user", "destination"):
        reasons.append(f"group_by={group_by}")
    dims = _dimension_filters(trace_filter)
    if trace_filter.tags and (len(trace_filter.tags) > 1 or dims or group_by is not None):
        reasons.append("a tag filter with other filters, several tags or a group_by")
    if group_by == "tag" and dims:
        reasons.append("group_by=tag with other filters")
    return reasons


def slice_for(trace_filter: TraceFilter, group_by: str | None) -> Slice | None:
    if raw_reasons(trace_filter, group_by):
        return None
    tag = Kind.TAG.value
    if trace_filter.tags:
        return Slice(tag, {"key": trace_filter.tags[0]}, None, {"tags__has_item": trace_filter.tags[0]}, None)
    if group_by == "tag":
        return Slice(tag, {}, "key", {}, "tags")
    dims = _dimension_filters(trace_filter)
    group_column = RAW_COLUMN[group_by] if group_by else None
    columns = set(dims) | ({group_column} if group_column else set())
    # (The DIMS columns are named as the trace columns they count.)
    trace_where = {lookup: value for column in dims for lookup, value in dims[column].items()}
    if not columns:
        return Slice(Kind.ALL.value, {}, None, {}, None)
    if len(columns) == 1 or columns == {"provider", "status"}:
        column = "provider" if "provider" in columns else next(iter(columns))
        where = {lookup.replace(column, "key", 1): value for lookup, value in dims.get(column, {}).items()}
        where.update(dims.get("status", {}) if column == "provider" else {})
        group = None if group_column is None else ("key" if group_column == column else group_column)
        return Slice(_KIND_OF_COLUMN[column], where, group, trace_where, group_column)
    return Slice(Kind.DIMS.value, trace_where, group_column, trace_where, group_column)


def _dimension_filters(f: TraceFilter) -> dict[str, dict[str, Any]]:
    """Column → Django lookups, for the filters the DIMS rows hold."""
    out: dict[str, dict[str, Any]] = {}
    if f.model:
        out["model"] = {"model__startswith": f.model[:-1]} if f.model.endswith("*") else {"model": f.model}
    if f.provider:
        out["provider"] = {"provider": f.provider}
    if f.statuses:
        out["status"] = {"status__in": list(f.statuses)}
    if f.environment:
        out["environment"] = {"environment": f.environment}
    assert set(out) <= _DIM_COLUMNS
    return out
