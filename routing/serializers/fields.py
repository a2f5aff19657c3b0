"""Building blocks of the routing serializers: strict fields, the condition and destination fields
(with their OpenAPI shapes), and the checks every document shares (unknown fields, NUL characters)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.fields import StrictCharField, StrictFloatField

from ..conditions import ConditionError, compile_condition
from ..destinations import MAX_TAG_LENGTH, MAX_TAGS, DestinationChecker

MAX_RULES = 200
MAX_DESTINATIONS = 20
MAX_SAMPLING_RULES = 100
MAX_TEST_TRACES = 100
PRIORITY_RANGE = 1_000_000
# ---------------------------------------------------------------------------------------------
# Strict JSON fields: DRF would read "0.5" as a number and "yes" as true.


def tags_field(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=MAX_TAG_LENGTH), max_length=MAX_TAGS, default=list, help_text=help_text
    )


def sample_rate_field(help_text: str, **kwargs: Any) -> StrictFloatField:
    return StrictFloatField(min_value=0.0, max_value=1.0, help_text=help_text, **kwargs)


CONDITION_SCHEMA = {
    "oneOf": [
        {"type": "string", "description": 'A CEL expression: `model == "gpt-4" && cost > 0.05`.'},
        {
            "type": "object",
            "additionalProperties": True,
            "description": 'Every key must hold: `{"model": "gpt-4*", "cost": ">0.05", "error": true, '
            '"metadata.env": "prod"}`.',
        },
    ],
    "nullable": True,
}
DESTINATION_OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {
            "type": "string",
            "description": "An integration's name, or a platform (`langfuse`, `webhook` …) meaning the team's first "
            "enabled integration of it. Give `name` or `platform`.",
        },
        "platform": {"type": "string", "description": "The spec's spelling of a platform destination."},
        "sample_rate": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "default": 1.0,
            "description": "Fraction of matching traces sent here.",
        },
        "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags added to traces sent here."},
        "url": {
            "type": "string",
            "format": "uri",
            "description": "Webhook destinations only: an ad-hoc webhook to this URL (name `webhook` or "
            "`custom-webhook`), sent with no integration's headers, signing secret or default tags. A webhook "
            "integration named with another URL is refused: it sends only to its own. Passes the URL guard.",
        },
        "fallback": {
            "type": "array",
            "items": {"type": "object", "description": "A destination of the same shape (no sample_rate)."},
            "description": "Tried in order when delivery here fails for good.",
        },
    },
}
DESTINATION_SCHEMA = {
    "oneOf": [
        {"type": "string", "description": "An integration name or platform (`langfuse`)."},
        DESTINATION_OBJECT_SCHEMA,
    ]
}


@extend_schema_field(CONDITION_SCHEMA)
class ConditionField(serializers.JSONField):
    """A condition in either spelling; compiled (and its errors placed) in the rule's validate()."""


@extend_schema_field(DESTINATION_SCHEMA)
class DestinationInputField(serializers.JSONField):
    """A destination name or object; checked in the rule's validate(), where the path is known."""


# ---------------------------------------------------------------------------------------------
# Destinations


class DestinationOutSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Integration name or canonical platform.")
    sample_rate = serializers.FloatField()
    tags = serializers.ListField(child=serializers.CharField())
    url = serializers.URLField(required=False)
    fallback = serializers.ListField(child=serializers.DictField(), help_text="Destinations of the same shape.")


def destination_checker(context: Mapping[str, Any]) -> DestinationChecker:
    checker = context.get("destination_checker")
    if checker is None:
        raise RuntimeError("the serializer needs a 'destination_checker' in its context")
    return checker


def nul_paths(data: Any, prefix: str = "") -> list[str]:
    """Where the JSON holds a NUL character (Postgres text and jsonb cannot store one)."""
    found: list[str] = []
    if isinstance(data, str):
        if "\x00" in data:
            found.append(prefix)
    elif isinstance(data, Mapping):
        for key, value in data.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if "\x00" in str(key):
                found.append(path)
            found.extend(nul_paths(value, path))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found.extend(nul_paths(value, f"{prefix}[{i}]"))
    return found


def refuse_nul(data: Any) -> None:
    paths = nul_paths(data)
    if paths:
        raise serializers.ValidationError({path: ["Must not contain NUL characters."] for path in paths})


def echoed_field() -> serializers.JSONField:
    """An output-only field of what GET returns, declared on the request shape so that a client may
    send back what it read: accepted whatever its value, and ignored."""
    return serializers.JSONField(
        required=False, allow_null=True, help_text="Output only: what GET returned may be sent back; ignored."
    )


def refuse_unknown(data: Any, fields: Mapping[str, Any], what: str) -> None:
    """Unknown fields are refused (the serializer says ``closed = True``: its request schema states
    ``additionalProperties: false``)."""
    if not isinstance(data, Mapping):
        return
    unknown = [str(k) for k in data if k not in fields]
    if unknown:
        known = sorted(fields)
        raise serializers.ValidationError(
            {
                k: [
                    f"Unknown field of {what}."
                    + (f" Did you mean '{m[0]}'?" if (m := difflib.get_close_matches(k, known, n=1)) else "")
                ]
                for k in unknown
            }
        )


def condition_value(attrs: Mapping[str, Any], errors: dict[str, list[str]]) -> tuple[str, Any]:
    """(key used, condition) for a rule: `condition` and `conditions` both take either spelling."""
    given = [k for k in ("conditions", "condition") if attrs.get(k) not in (None, "", {})]
    if len(given) == 2:
        errors.setdefault("condition", []).append("Give 'condition' or 'conditions', not both.")
        return "condition", None
    key = given[0] if given else "condition"
    return key, attrs.get(key)


def compile_or_collect(value: Any, key: str, errors: dict[str, list[str]]) -> None:
    try:
        compile_condition(value)
    except ConditionError as exc:
        errors.setdefault(f"{key}.{exc.path}" if exc.path else key, []).append(exc.message)
