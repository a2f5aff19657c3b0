"""One JSON encoder for hot paths: orjson, falling back to the standard library for what orjson
refuses. Postgres jsonb keeps numbers exactly, so a trace sent with ``-3.9e48`` reads back as a
Python int beyond 64 bits, which orjson cannot encode; deep nesting is the other case."""

from __future__ import annotations

import json
from typing import Any

import orjson
from django.core.serializers.json import DjangoJSONEncoder


def dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, cls=DjangoJSONEncoder, separators=(",", ":")).encode()


def iso(value: Any) -> str | None:
    """A datetime as the API writes it: ISO 8601 with ``Z`` for UTC; None stays None."""
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def shown(value: Any) -> str:
    """A JSON value (a metadata value) as text for people: a string as it is, anything else as JSON
    (``true``, ``null``, ``2.5``, ``{"name": "tracerelay"}``), never Python's repr (``{'name': …}``)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, cls=DjangoJSONEncoder)
    except (TypeError, ValueError):  # not JSON at all (never stored, but say something readable)
        return str(value)
