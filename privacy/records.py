"""Policies applied to trace records: the one call ingest makes before storage and delivery makes
before each export (`docs/privacy.md`, "Where policies apply").

The records are `traces.records.TraceRecord`s, handled by field name (privacy sits below traces in
the layering, so it does not import it): a changed record is a copy with the changed fields, as
`dataclasses.replace` makes; a record the policy leaves alone is returned as it was, no copy.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .policy import OFF, CompiledPolicy, policy_fields, policy_walk
from .selectors import compiled_policy

R = TypeVar("R")

PII_MODE_KEY = "mode"
PII_KINDS_KEY = "kinds"


# Per record class: its fields' names, one getter of all their values, and each slot's setter.
_Copier = tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]], tuple[Callable[[Any, Any], None], ...]]
_COPIERS: dict[type, _Copier | None] = {}


def _replaced(record: R, changes: dict[str, Any]) -> R:
    """``dataclasses.replace(record, **changes)``. For a slotted dataclass without ``__post_init__``
    (`TraceRecord`) the fields are copied onto a new instance through its slots' setters instead
    of going through its frozen ``__init__``: the same record in a third of the time (it runs for
    every trace a policy changes)."""
    cls = type(record)
    if cls not in _COPIERS:
        _COPIERS[cls] = _copier(cls)
    copier = _COPIERS[cls]
    if copier is None:
        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    names, values, setters = copier
    new = object.__new__(cls)
    for put, value in zip(setters, values(record), strict=True):
        put(new, value)
    for name, value in changes.items():
        object.__setattr__(new, name, value)
    return new


def _copier(cls: type) -> _Copier | None:
    if "__slots__" not in vars(cls) or hasattr(cls, "__post_init__"):
        return None
    names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    slots = [vars(cls).get(name) for name in names]
    if len(names) < 2 or not all(type(slot).__name__ == "member_descriptor" for slot in slots):
        return None  # a field that is no slot of this class (inherited, or a property): the general way
    return names, operator.attrgetter(*names), tuple(slot.__set__ for slot in slots)  # type: ignore[union-attr]


def apply_to_record(record: R, policy: CompiledPolicy, *, destination: str | None = None) -> tuple[R, dict[str, int]]:
    """``record`` with the stored mode (``destination`` None) or a destination's mode applied, and
    the kinds found (counts, never values). Unchanged fields are shared with the input."""
    return apply_to_records((record,), policy, destination=destination)[0]


def apply_to_records(
    records: Sequence[R], policy: CompiledPolicy, *, destination: str | None = None
) -> list[tuple[R, dict[str, int]]]:
    """`apply_to_record` on each record of a batch; a string repeated across the batch is scanned
    once (`policy.policy_walk`)."""
    walk = policy_walk(policy, destination)
    if walk is None:
        return [(record, {}) for record in records]
    out: list[tuple[R, dict[str, int]]] = []
    for record in records:
        old: Any = record
        message = old.error_message or None
        input, output, metadata, error = policy_fields(walk, old.input, old.output, old.metadata, message)
        changes: dict[str, Any] = {}
        if input is not old.input:
            changes["input"] = input
        if output is not old.output:
            changes["output"] = output
        if metadata is not old.metadata:
            changes["metadata"] = metadata
        if error is not message:
            changes["error_message"] = error
        out.append(((_replaced(record, changes) if changes else record), walk.kinds))
    return out


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
    for new, kinds in apply_to_records(records, policy):
        out.append(new)
        found.append({PII_MODE_KEY: policy.stored, PII_KINDS_KEY: kinds})
    return out, found


def export_records(team_id: int, destination: str, records: Sequence[R]) -> list[R]:
    """Before export to ``destination`` (an integration name): its entry's mode applied to each
    record; a destination without an entry gets the records as stored."""
    policy = compiled_policy(team_id)
    if policy.mode_for(destination) in (None, OFF):
        return list(records)
    return [new for new, _kinds in apply_to_records(records, policy, destination=destination)]
