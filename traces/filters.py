"""The trace feed's filters (DESIGN.md, Lists), parsed from query parameters once for the API,
the dashboard feed and analytics. A bad value raises `FilterError` naming the parameter.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from .kinds import Kind
from .models import Score, Status
from .normalize import parse_datetime

TIME_RANGES = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
CUSTOM_RANGE = "custom"
STATUS_VALUES = {
    "success": Status.SUCCESS,
    "error": Status.ERROR,
    "failed": Status.ERROR,
    "rate_limited": Status.RATE_LIMITED,
}
STATUS_PATTERN = r"^(success|error|failed|rate_limited)(,(success|error|failed|rate_limited))*$"
MAX_INT = 2_147_483_647
MAX_COST = Decimal("99999999")
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
    "session_id",
    "user_id",
    "service_name",
    "since",
    "until",
    "time_range",
    "unpriced",
    "usage_estimated",
    "run_id",
    "kind",
)
MAX_TEXT = 200
KIND_VALUES = tuple(str(k) for k in Kind)
KIND_PATTERN = rf"^({'|'.join(KIND_VALUES)})(,({'|'.join(KIND_VALUES)}))*$"


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
    session_id: str = ""
    user_id: str = ""
    service_name: str = ""
    since: datetime | None = None
    until: datetime | None = None
    unpriced: bool | None = None
    usage_estimated: bool | None = None
    run_id: str = ""
    kinds: tuple[str, ...] = ()
    # `score.<name>=<value>`, `score.<name>.min=<n>`, `score.<name>.max=<n>`: (name, "eq"|"min"|"max", value)
    scores: tuple[tuple[str, str, Any], ...] = ()

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
        if self.session_id:
            qs = qs.filter(session_id=self.session_id)
        if self.user_id:
            qs = qs.filter(user_id=self.user_id)
        if self.service_name:
            qs = qs.filter(service_name=self.service_name)
        if self.since is not None:
            qs = qs.filter(timestamp__gte=self.since)
        if self.until is not None:
            qs = qs.filter(timestamp__lt=self.until)
        if self.unpriced is not None:
            qs = qs.filter(unpriced=self.unpriced)
        if self.usage_estimated is not None:
            qs = qs.filter(usage_estimated=self.usage_estimated)
        if self.run_id:
            qs = qs.filter(run_id=self.run_id)
        if self.kinds:
            qs = qs.filter(kind__in=self.kinds)
        for name, op, value in self.scores:
            qs = qs.filter(Exists(_score_match(name, op, value)))
        return qs


def _score_match(name: str, op: str, value: Any) -> QuerySet[Any]:
    """The trace has a score ``name`` equal to ``value`` (the same number, boolean or category), or
    whose number (a boolean counts 1/0) is at least (``min``) or at most (``max``) ``value``."""
    scores = Score.objects.filter(trace=OuterRef("pk"), name=name)
    if op == "min":
        return scores.filter(number__gte=value)
    if op == "max":
        return scores.filter(number__lte=value)
    if isinstance(value, bool):
        return scores.filter(data_type="boolean", value=value)
    if isinstance(value, float):
        return scores.filter(data_type="numeric", number=value)
    return scores.filter(data_type="categorical", value=value)


def _score_filters(lists: dict[str, list[str]]) -> tuple[tuple[str, str, Any], ...]:
    out: list[tuple[str, str, Any]] = []
    for param in lists:
        if not param.startswith("score."):
            continue
        name, op = param[len("score.") :], "eq"
        for suffix in (".min", ".max"):
            if name.endswith(suffix):
                name, op = name[: -len(suffix)], suffix[1:]
        if not name or len(name) > 200 or not all(c.isalnum() or c in "_.:-" for c in name):
            raise FilterError(param, "Name a score: score.<name>=<value>, score.<name>.min=<n>, score.<name>.max=<n>.")
        raw = _text(lists, param, strip=True)
        if op != "eq" or raw.lower() not in ("true", "false"):
            try:
                number = float(raw)
            except ValueError:
                number = math.nan
            if op != "eq" and not math.isfinite(number):
                raise FilterError(param, "Must be a number.")
            value: Any = number if math.isfinite(number) else raw
        else:
            value = raw.lower() == "true"
        if value == "":
            raise FilterError(param, "Give a value: a number, true/false or a category.")
        out.append((name, op, value))
    return tuple(out)


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


def parse_trace_filter(
    params: Mapping[str, Any], *, now: datetime | None = None, blank_is_absent: bool = False
) -> TraceFilter:
    """From a QueryDict (or any mapping of name → value or list of values).

    The API is strict: `cost_min=` is an error. A dashboard form sends its empty fields, so it
    passes ``blank_is_absent=True``.
    """
    now = now or timezone.now()
    lists = _lists(params)
    if blank_is_absent:
        lists = {k: [v for v in vs if v != ""] for k, vs in lists.items()}
        lists = {k: vs for k, vs in lists.items() if vs}
    values: dict[str, Any] = {}
    values["model"] = _text(lists, "model")
    values["provider"] = _text(lists, "provider").lower()
    values["environment"] = _text(lists, "environment")
    values["session_id"] = _text(lists, "session_id")
    values["user_id"] = _text(lists, "user_id")
    values["service_name"] = _text(lists, "service_name")

    values["run_id"] = _text(lists, "run_id", strip=False)
    if len(values["run_id"]) > 128:
        raise FilterError("run_id", "Must be at most 128 characters.")
    kinds = _many(lists, "kind")
    if "kind" in lists and not kinds:
        raise FilterError("kind", f"Name a kind: {', '.join(KIND_VALUES)} (several separated by commas).")
    for kind in kinds:
        if kind not in KIND_VALUES:
            raise FilterError("kind", f"Unknown kind '{kind[:50]}': use {', '.join(KIND_VALUES)}.")
    values["kinds"] = kinds

    status_raw = _one(lists, "status")
    if status_raw is not None:
        statuses = []
        for part in status_raw.split(","):
            status = STATUS_VALUES.get(part)
            if status is None:
                raise FilterError("status", f"Unknown status '{part[:50]}': use success, error or rate_limited.")
            statuses.append(str(status))
        values["statuses"] = tuple(dict.fromkeys(statuses))

    values["cost_min"] = _decimal(lists, "cost_min")
    values["cost_max"] = _decimal(lists, "cost_max")
    if values["cost_min"] is not None and values["cost_max"] is not None and values["cost_min"] > values["cost_max"]:
        raise FilterError("cost_min", "Must not be greater than cost_max.")
    values["latency_min"] = _int(lists, "latency_min")
    values["latency_max"] = _int(lists, "latency_max")
    if (
        values["latency_min"] is not None
        and values["latency_max"] is not None
        and values["latency_min"] > values["latency_max"]
    ):
        raise FilterError("latency_min", "Must not be greater than latency_max.")

    values["tags"] = _many(lists, "tag")
    values["destinations"] = _many(lists, "destination")
    metadata = []
    for name in lists:
        if name.startswith("metadata."):
            key = name[len("metadata.") :]
            if not key or len(key) > MAX_TEXT or "\x00" in key:
                raise FilterError(
                    name, f"Name a metadata key of 1-{MAX_TEXT} characters, no NUL: metadata.<key>=<value>."
                )
            metadata.append((key, _text(lists, name, strip=False)))
    values["metadata"] = tuple(metadata)
    values["scores"] = _score_filters(lists)

    since = _datetime(lists, "since")
    until = _datetime(lists, "until")
    time_range = _one(lists, "time_range")
    if time_range is not None and time_range != CUSTOM_RANGE:  # "custom": since/until say it
        delta = TIME_RANGES.get(time_range)
        if delta is None:
            raise FilterError("time_range", f"Use one of {', '.join(TIME_RANGES)} or {CUSTOM_RANGE}.")
        since = max(since, now - delta) if since else now - delta
    if since and until and since >= until:
        raise FilterError("since", "Must be earlier than until.")
    values["since"] = since
    values["until"] = until
    values["unpriced"] = _bool(lists, "unpriced")
    values["usage_estimated"] = _bool(lists, "usage_estimated")
    return TraceFilter(**values)


def _lists(params: Mapping[str, Any]) -> dict[str, list[str]]:
    if hasattr(params, "lists"):
        return {str(k): [str(v) for v in vs] for k, vs in params.lists()}
    out: dict[str, list[str]] = {}
    for key, value in params.items():
        out[str(key)] = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
    return out


def _one(lists: dict[str, list[str]], name: str) -> str | None:
    """The parameter's (last) value, None when absent; refuses over-long values and NUL characters."""
    values = lists.get(name)
    if not values:
        return None
    value = values[-1]
    if len(value) > MAX_TEXT:
        raise FilterError(name, f"Must be at most {MAX_TEXT} characters.")
    if "\x00" in value:
        raise FilterError(name, "Must not contain NUL characters.")
    return value


def _text(lists: dict[str, list[str]], name: str, *, strip: bool = True) -> str:
    value = _one(lists, name)
    if value is None:
        return ""
    return value.strip() if strip else value


def _many(lists: dict[str, list[str]], name: str) -> tuple[str, ...]:
    out = []
    for item in lists.get(name, ()):
        for part in item.split(","):
            part = part.strip()
            if len(part) > MAX_TEXT:
                raise FilterError(name, f"Must be at most {MAX_TEXT} characters.")
            if "\x00" in part:
                raise FilterError(name, "Must not contain NUL characters.")
            if part:
                out.append(part)
    return tuple(dict.fromkeys(out))


def _bool(lists: dict[str, list[str]], name: str) -> bool | None:
    value = _one(lists, name)
    if value is None:
        return None
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise FilterError(name, "Use true or false.")


def _decimal(lists: dict[str, list[str]], name: str) -> Decimal | None:
    value = _one(lists, name)
    if value is None:
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise FilterError(name, "Must be a number.")
    if not number.is_finite() or number < 0:
        raise FilterError(name, "Must be a non-negative number.")
    if number > MAX_COST:
        raise FilterError(name, f"Must be at most {MAX_COST}.")
    return number


def _int(lists: dict[str, list[str]], name: str) -> int | None:
    value = _one(lists, name)
    if value is None:
        return None
    if not value.isascii() or not value.isdigit():
        raise FilterError(name, "Must be a non-negative integer (milliseconds).")
    number = int(value)
    if number > MAX_INT:
        raise FilterError(name, f"Must be at most {MAX_INT}.")
    return number


def _datetime(lists: dict[str, list[str]], name: str) -> datetime | None:
    value = _one(lists, name)
    if value is None:
        return None
    parsed = parse_datetime(value)
    if parsed is None:
        raise FilterError(name, "Must be an ISO 8601 date-time, e.g. 2025-01-31T12:00:00Z.")
    return parsed
