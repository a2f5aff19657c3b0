"""Policies applied to trace records: the one call ingest makes before storage and delivery makes
before each export (`docs/privacy.md`, "Where policies apply").

The records are `traces.records.TraceRecord`s, handled by field name (privacy sits below traces in
the layering, so it does not import it): a changed record is a copy with the changed fields, as
`dataclasses.replace` makes; a record the policy leaves alone is returned as it was, no copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

from .policy import OFF, CompiledPolicy, apply_policy
from .selectors import compiled_policy

R = TypeVar("R")

PII_MODE_KEY = "mode"
PII_KINDS_KEY = "kinds"


_COPIED_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _replaced(record: R, changes: dict[str, Any]) -> R:
    """``dataclasses.replace(record, **changes)``. For a slotted dataclass without ``__post_init__``
    (`TraceRecord`) the fields are copied onto a new instance instead of going through its frozen
    ``__init__``: the same record in under half the time (it runs for every trace a policy changes)."""
    cls = type(record)
    if cls not in _COPIED_FIELDS:
        plain = "__slots__" in vars(cls) and not hasattr(cls, "__post_init__")
        _COPIED_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls)) if plain else None  # type: ignore[arg-type]
    names = _COPIED_FIELDS[cls]
    if names is None:
        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    new = object.__new__(cls)
    put = object.__setattr__
    for name in names:
        put(new, name, getattr(record, name))
    for name, value in changes.items():
        put(new, name, value)
    return new


def _as_trace(record: Any) -> dict[str, Any]:
    error: dict[str, str] | None = None
    if record.error_message:
        error = {"type": record.error_type, "message": record.error_message}
    return {"input": record.input, "output": record.output, "metadata": record.metadata, "error": error}


def apply_to_record(record: R, policy: CompiledPolicy, *, destination: str | None = None) -> tuple[R, dict[str, int]]:
    """``record`` with the stored mode (``destination`` None) or a destination's mode applied, and
    the kinds found (counts, never values). Unchanged fields are shared with the input."""
    result = apply_policy(_as_trace(record), policy, destination=destination)
    if result.mode in ("inherit", OFF):
        return record, {}
    trace = result.trace
    changes: dict[str, Any] = {}
    for name in ("input", "output", "metadata"):
        if trace[name] is not getattr(record, name):
            changes[name] = trace[name] if trace[name] is not None or name != "metadata" else {}
    error = trace["error"]
    if isinstance(error, dict) and error.get("message") != record.error_message:  # type: ignore[attr-defined]
        changes["error_message"] = error["message"]
    return (_replaced(record, changes) if changes else record), result.kinds


def stored_records(team_id: int, records: Sequence[R]) -> tuple[list[R], list[dict[str, Any] | None]]:
    """Before storage: each record with the team's stored mode applied, and what goes in the trace's
    ``pii`` column (None when the mode is off, else ``{"mode", "kinds"}``).

    The policy version is read from the shared cache on every call (``max_age=0``: one cache GET
    per request or batch), so a trace ingested after a policy PUT returned gets the new policy
    whatever process ingests it.
    """
    policy = compiled_policy(team_id, max_age=0)
    if policy.stored == OFF:
        return list(records), [None] * len(records)
    out: list[R] = []
    found: list[dict[str, Any] | None] = []
    for record in records:
        new, kinds = apply_to_record(record, policy)
        out.append(new)
        found.append({PII_MODE_KEY: policy.stored, PII_KINDS_KEY: kinds})
    return out, found


def export_records(team_id: int, destination: str, records: Sequence[R]) -> list[R]:
    """Before export to ``destination`` (an integration name): its entry's mode applied to each
    record; a destination without an entry gets the records as stored."""
    policy = compiled_policy(team_id)
    if policy.mode_for(destination) in (None, OFF):
        return list(records)
    return [apply_to_record(record, policy, destination=destination)[0] for record in records]
