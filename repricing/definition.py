"""What a re-pricing job asks for, checked once for the API and the dashboard form: `parse_job`
returns a `JobSpec` or raises `JobError` with errors per field."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from config.fields import has_control_characters
from traces.normalize import parse_datetime

FIELDS = frozenset({"since", "until", "model", "redeliver"})
MAX_RANGE = timedelta(days=400)  # a year and a month: the longest retention a plan has, and then some
MAX_MODEL = 200


class JobError(ValueError):
    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__(errors)


@dataclass(frozen=True)
class JobSpec:
    since: datetime
    until: datetime
    model: str = ""  # exact, or a prefix ending in "*"; "" for every model
    redeliver: bool = False


def parse_job(data: Mapping[str, Any], *, now: datetime) -> JobSpec:
    errors: dict[str, list[str]] = {}
    for name in sorted(set(data) - FIELDS):
        errors[name[:100]] = ["Unknown field."]
    times: dict[str, datetime] = {}
    for name in ("since", "until"):
        value = data.get(name)
        if value is None:
            errors[name] = ["Required: an ISO 8601 time (2026-01-01T00:00:00Z)."]
        elif not isinstance(value, str):
            errors[name] = ["Must be an ISO 8601 time as a string."]
        else:
            parsed = parse_datetime(value) if len(value) <= 64 else None
            if parsed is None:
                errors[name] = [f"Not an ISO 8601 time: '{value[:64]}'."]
            else:
                times[name] = parsed
    since, until = times.get("since"), times.get("until")
    if since is not None and until is not None:
        if since >= until:
            errors["until"] = ["Must be after since."]
        elif until - since > MAX_RANGE:
            errors["until"] = [f"The range may span at most {MAX_RANGE.days} days; run one job per part."]
    if since is not None and since > now:
        errors.setdefault("since", ["Must not be in the future: no trace is stored there yet."])
    model = data.get("model")
    if model is None:
        model = ""
    elif not isinstance(model, str):
        errors["model"] = ["Must be a string: a model name, or a prefix ending in * (gpt-4o*)."]
        model = ""
    else:
        model = model.strip()
        if len(model) > MAX_MODEL:
            errors["model"] = [f"Must be at most {MAX_MODEL} characters."]
        elif has_control_characters(model):
            errors["model"] = ["Must not contain control characters."]
        elif "*" in model[:-1] or model == "*":
            errors["model"] = ["Only a trailing * is allowed (gpt-4o*); leave model out for every model."]
    redeliver = data.get("redeliver", False)
    if not isinstance(redeliver, bool):
        errors["redeliver"] = ["Must be true or false."]
    if errors:
        raise JobError(errors)
    assert since is not None and until is not None
    return JobSpec(since=since, until=until, model=model, redeliver=redeliver)
