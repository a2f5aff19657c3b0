"""The trace feed's filters (DESIGN.md, Lists), parsed from query parameters once for the API,
the dashboard feed and analytics. A bad value raises `FilterError` naming the parameter.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from .models import Status

TIME_RANGES = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
STATUS_VALUES = {
    "success": Status.SUCCESS,
    "error": Status.ERROR,
    "failed": Status.ERROR,
    "rate_limited": Status.RATE_LIMITED,
    "rate-limited": Status.RATE_LIMITED,
}
FILTER_PARAMS = (
    "model",
    "provider",
    "status",
    "cost_min",
    "cost_max",
    "latency_min",
    "latency_max",
    "destination",
    "tag",
    "environment",
    "since",
    "until",
    "time_range",
)
MAX_TEXT = 200


class FilterError(ValueError):
    def __init__(self, param: str, message: str) -> None:
        self.param = param
        self.message = message
        super().__init__(f"{param}: {message}")


@dataclass(frozen=True)
class TraceFilter:
    model: str = ""
    provider: str = ""
    statuses: tuple[str, ...] = ()
    cost_min: Decimal | None = None
    cost_max: Decimal | None = None
    latency_min: int | None = None
    latency_max: int | None = None
    destinations: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()
    environment: str = ""
    since: datetime | None = None
    until: datetime | None = None

    def apply(self, qs: QuerySet[Any]) -> QuerySet[Any]:
        if self.model:
            qs = (
                qs.filter(model__startswith=self.model[:-1])
                if self.model.endswith("*")
                else qs.filter(model=self.model)
            )
        if self.provider:
            qs = qs.filter(provider=self.provider)
        if self.statuses:
            qs = qs.filter(status__in=self.statuses)
        if self.cost_min is not None:
            qs = qs.filter(cost__gte=self.cost_min)
        if self.cost_max is not None:
            qs = qs.filter(cost__lte=self.cost_max)
        if self.latency_min is not None:
            qs = qs.filter(latency_ms__gte=self.latency_min)
        if self.latency_max is not None:
            qs = qs.filter(latency_ms__lte=self.latency_max)
        for name in self.destinations:
            qs = qs.filter(destinations__has_item=name)
        for tag in self.tags:
            qs = qs.filter(tags__has_item=tag)
        for key, value in self.metadata:
            qs = _metadata_equals(qs, key, value)
        if self.environment:
            qs = qs.filter(environment=self.environment)
        if self.since is not None:
            qs = qs.filter(timestamp__gte=self.since)
        if self.until is not None:
            qs = qs.filter(timestamp__lt=self.until)
        return qs


def _metadata_equals(qs: QuerySet[Any], key: str, value: str) -> QuerySet[Any]:
    """metadata[key] equals the value given as text, or the same JSON scalar (5, 2.5, true, null)."""
    q = Q(metadata__has_entry=(key, value))
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    if parsed is None or (isinstance(parsed, bool | int | float) and not isinstance(parsed, str)):
        if not (isinstance(parsed, float) and not math.isfinite(parsed)):
            q |= Q(metadata__has_entry=(key, parsed))
    return qs.filter(q)


def parse_trace_filter(params: Mapping[str, Any], *, now: datetime | None = None) -> TraceFilter:
    """From a QueryDict (or any mapping; lists for repeatable `tag` and `destination`)."""
    now = now or timezone.now()
    values: dict[str, Any] = {}
    values["model"] = _text(params, "model")
    values["provider"] = _text(params, "provider").lower()
    values["environment"] = _text(params, "environment")

    status_raw = _text(params, "status")
    if status_raw:
        statuses = []
        for part in status_raw.split(","):
            status = STATUS_VALUES.get(part.strip().lower())
            if status is None:
                raise FilterError("status", f"Unknown status '{part.strip()}': use success, error or rate_limited.")
            statuses.append(str(status))
        values["statuses"] = tuple(dict.fromkeys(statuses))

    values["cost_min"] = _decimal(params, "cost_min")
    values["cost_max"] = _decimal(params, "cost_max")
    if values["cost_min"] is not None and values["cost_max"] is not None and values["cost_min"] > values["cost_max"]:
        raise FilterError("cost_min", "Must not be greater than cost_max.")
    values["latency_min"] = _int(params, "latency_min")
    values["latency_max"] = _int(params, "latency_max")
    if (
        values["latency_min"] is not None
        and values["latency_max"] is not None
        and values["latency_min"] > values["latency_max"]
    ):
        raise FilterError("latency_min", "Must not be greater than latency_max.")

    values["tags"] = _many(params, "tag")
    values["destinations"] = _many(params, "destination")
    metadata = []
    for name in params:
        if isinstance(name, str) and name.startswith("metadata."):
            key = name[len("metadata.") :]
            if not key or len(key) > MAX_TEXT:
                raise FilterError(name, f"Name a metadata key of 1-{MAX_TEXT} characters: metadata.<key>=<value>.")
            metadata.append((key, _text(params, name, allow_empty=True)))
    values["metadata"] = tuple(metadata)

    since = _datetime(params, "since")
    until = _datetime(params, "until")
    time_range = _text(params, "time_range")
    if time_range:
        delta = TIME_RANGES.get(time_range)
        if delta is None:
            raise FilterError("time_range", f"Use one of {', '.join(TIME_RANGES)}.")
        since = max(since, now - delta) if since else now - delta
    if since and until and since >= until:
        raise FilterError("since", "Must be earlier than until.")
    values["since"] = since
    values["until"] = until
    return TraceFilter(**values)


def _raw(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    if isinstance(value, list):
        value = value[-1] if value else None
    return value


def _text(params: Mapping[str, Any], name: str, *, allow_empty: bool = False) -> str:
    value = _raw(params, name)
    if value is None:
        return ""
    value = str(value)
    if len(value) > MAX_TEXT:
        raise FilterError(name, f"Must be at most {MAX_TEXT} characters.")
    if "\x00" in value:
        raise FilterError(name, "Must not contain NUL characters.")
    return value if allow_empty else value.strip()


def _many(params: Mapping[str, Any], name: str) -> tuple[str, ...]:
    getlist = getattr(params, "getlist", None)
    raw = getlist(name) if getlist else params.get(name)
    if raw is None:
        return ()
    items = raw if isinstance(raw, list | tuple) else [raw]
    out = []
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if len(part) > MAX_TEXT:
                raise FilterError(name, f"Must be at most {MAX_TEXT} characters.")
            if "\x00" in part:
                raise FilterError(name, "Must not contain NUL characters.")
            if part:
                out.append(part)
    return tuple(dict.fromkeys(out))


def _decimal(params: Mapping[str, Any], name: str) -> Decimal | None:
    value = _text(params, name)
    if not value:
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise FilterError(name, "Must be a number.")
    if not number.is_finite() or number < 0:
        raise FilterError(name, "Must be a non-negative number.")
    if number > Decimal("99999999"):
        raise FilterError(name, "Must be at most 99999999.")
    return number


def _int(params: Mapping[str, Any], name: str) -> int | None:
    value = _text(params, name)
    if not value:
        return None
    if not value.isascii() or not value.isdigit():
        raise FilterError(name, "Must be a non-negative integer (milliseconds).")
    number = int(value)
    if number > 2_147_483_647:
        raise FilterError(name, "Must be at most 2147483647.")
    return number


def _datetime(params: Mapping[str, Any], name: str) -> datetime | None:
    value = _text(params, name)
    if not value:
        return None
    try:
        # An unencoded "+02:00" arrives as " 02:00": a query string turns "+" into a space.
        parsed = datetime.fromisoformat(value.replace(" ", "+") if "T" in value else value)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise FilterError(name, "Must be an ISO 8601 date-time, e.g. 2025-01-31T12:00:00Z.")
