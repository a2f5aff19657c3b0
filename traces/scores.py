"""Scores and feedback on traces (docs/scores.md): the input's checks, its JSON, and reading them.

`POST /api/v1/traces/{id}/scores` takes ``{"name", "value", "comment"?, "source"?}``; the value's
JSON type decides ``data_type``: a number is numeric, a boolean boolean, a string categorical.
Writing one (and routing it) is `pipeline.scores.score_create`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet

from config.jsoncodec import iso
from config.problems import InvalidInput

from .models import Score, ScoreType, Trace
from .records import ScoreRecord

NAME_MAX = 200
VALUE_MAX = 200  # a category's length
COMMENT_MAX = 10_000
SOURCE_MAX = 64
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]+$")  # usable as `score.<name>` in a query string
FIELDS = ("name", "value", "comment", "source")


@dataclass(frozen=True, slots=True)
class ScoreInput:
    name: str
    value: Any
    data_type: str
    number: float | None
    comment: str
    source: str


def score_data_type(value: Any) -> str:
    if isinstance(value, bool):
        return ScoreType.BOOLEAN
    if isinstance(value, (int, float)):
        return ScoreType.NUMERIC
    return ScoreType.CATEGORICAL


def parse_score(body: Any, *, default_source: str = "api") -> ScoreInput:
    """The score in ``body``, or `InvalidInput` naming each bad field."""
    if not isinstance(body, Mapping):
        raise InvalidInput({"non_field_errors": ['Send a JSON object: {"name", "value", "comment"?, "source"?}.']})
    errors: dict[str, list[str]] = {}
    for key in body:
        if key not in FIELDS:
            errors[str(key)[:100]] = [f"Unknown field. Known: {', '.join(FIELDS)}."]
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        errors["name"] = ["Required: a non-empty string."]
    elif len(name) > NAME_MAX or not NAME_PATTERN.match(name):
        errors["name"] = [f"At most {NAME_MAX} letters, digits, '_', '.', ':' or '-'."]
    if "value" not in body:
        errors["value"] = ["Required: a number, a boolean or a string (a category)."]
    value = body.get("value")
    number: float | None = None
    if isinstance(value, bool):
        number = 1.0 if value else 0.0
    elif isinstance(value, (int, float)):
        if not math.isfinite(float(value)) or abs(value) > 1e15:
            errors["value"] = ["A number must be finite and at most 1e15 in size."]
        else:
            number = float(value)
    elif isinstance(value, str):
        if not value.strip() or len(value) > VALUE_MAX:
            errors["value"] = [f"A category must be 1 to {VALUE_MAX} characters."]
    elif "value" in body:
        errors["value"] = ["Must be a number, a boolean or a string (a category); not null, a list or an object."]
    comment = body.get("comment")
    if comment is None:
        comment = ""
    elif not isinstance(comment, str) or len(comment) > COMMENT_MAX:
        errors["comment"] = [f"A string of at most {COMMENT_MAX} characters."]
    source = body.get("source")
    if source is None:
        source = default_source
    elif not isinstance(source, str) or not source.strip() or len(source) > SOURCE_MAX:
        errors["source"] = [f"A non-empty string of at most {SOURCE_MAX} characters (api, human, eval, ...)."]
    for field, text in (("name", name), ("comment", comment), ("source", source), ("value", value)):
        if isinstance(text, str) and "\x00" in text:
            errors[field] = ["Must not contain NUL characters."]
    if errors:
        raise InvalidInput(errors)
    assert isinstance(name, str) and isinstance(comment, str) and isinstance(source, str)
    return ScoreInput(name, value, score_data_type(value), number, comment, source.strip())


def score_json(score: Score, trace_id: str) -> dict[str, Any]:
    return {
        "id": str(score.pk),
        "trace_id": trace_id,
        "name": score.name,
        "value": score.value,
        "data_type": score.data_type,
        "comment": score.comment,
        "source": score.source,
        "created_at": iso(score.created_at),
    }


def scores_of(trace: Trace) -> QuerySet[Score]:
    return Score.objects.filter(trace=trace).order_by("created_at", "id")


def scores_of_run(team_id: int, run_id: str) -> QuerySet[Score]:
    return (
        Score.objects.filter(team_id=team_id, trace__team_id=team_id, trace__run_id=run_id)
        .select_related("trace")
        .order_by("created_at", "id")
    )


def score_names(team_id: int, *, numeric: bool = False, limit: int = 200) -> list[str]:
    """The team's score names, sorted (the feed's score filter; ``numeric``: only those with a number,
    numeric or boolean, for averages). Down the (team, name, created_at) index."""
    qs = Score.objects.filter(team_id=team_id)
    if numeric:
        qs = qs.filter(number__isnull=False)
    return list(qs.order_by("name").values_list("name", flat=True).distinct()[:limit])


def score_record(score: Score, trace: Any, name: str) -> ScoreRecord:
    """``trace``: the Trace or a row with its trace_id, run_id, timestamp, latency_ms and kind."""
    start = trace.timestamp
    end = None
    if start is not None and trace.latency_ms is not None:
        end = start + timedelta(milliseconds=trace.latency_ms)
    return ScoreRecord(
        score_id=str(score.pk),
        team_id=score.team_id,
        trace_id=trace.trace_id,
        run_id=trace.run_id or trace.trace_id,
        name=name,
        value=score.value,
        data_type=score.data_type,
        comment=score.comment,
        source=score.source,
        created_at=score.created_at,
        trace_timestamp=start,
        trace_end=end,
        trace_kind=getattr(trace, "kind", "") or "",
    )
