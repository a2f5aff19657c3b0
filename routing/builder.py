"""The dashboard's condition builder: rows of (field, operator, value) ↔ a condition.

"Match all" rows become the object form (every key must hold), exactly what the API takes;
"match any" rows become a CEL expression joined by ``||`` (the object form has no "any"). Either
result is compiled by the one compiler (`routing.conditions`) when the rule is validated; this
module only spells conditions, it never decides what matches.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from traces.usage import DETAIL_FIELDS

from .conditions import BOOLEAN_VARIABLES, NUMERIC_VARIABLES, STRING_VARIABLES

STRING_FIELDS = (
    "model",
    "kind",
    "name",
    "provider",
    "status",
    "environment",
    "service_name",
    "source",
    "session_id",
    "user_id",
    "error_type",
    "error_message",
    "run_id",
    "parent_id",
)
NUMBER_FIELDS: tuple[str, ...] = ("cost", "latency_ms", "total_tokens", "prompt_tokens", "completion_tokens")
NUMBER_FIELDS += (*DETAIL_FIELDS, "time_to_first_token_ms")
BOOLEAN_FIELDS = ("error", "unpriced", "usage_estimated")
FIELDS = (*STRING_FIELDS, *NUMBER_FIELDS, *BOOLEAN_FIELDS, "tags", "metadata")
assert set(STRING_FIELDS) <= STRING_VARIABLES and set(NUMBER_FIELDS) == NUMERIC_VARIABLES
assert set(BOOLEAN_FIELDS) == BOOLEAN_VARIABLES

# operator → (label, CEL/object spelling)
OPERATORS: dict[str, str] = {
    "eq": "is",
    "prefix": "starts with",
    "in": "is one of",
    "gt": ">",
    "gte": "≥",
    "lt": "<",
    "lte": "≤",
    "ne": "≠",
    "true": "is true",
    "false": "is false",
    "all": "has all of",
    "equals": "equals",
}
_SYMBOL = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<=", "eq": "==", "ne": "!="}
_FROM_SYMBOL = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte", "==": "eq", "=": "eq", "!=": "ne"}
_NUMBER_RE = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")
_COMPARISON_RE = re.compile(r"^\s*(>=|<=|==|!=|>|<|=)?\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CEL_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for"})
_CEL_RESERVED |= {"function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}


def kind_of(name: str) -> str:
    if name in NUMBER_FIELDS:
        return "number"
    if name in BOOLEAN_FIELDS:
        return "boolean"
    if name in ("tags", "metadata"):
        return name
    return "string"


OPERATORS_FOR: dict[str, tuple[str, ...]] = {
    "string": ("eq", "prefix", "in"),
    "number": ("gt", "gte", "lt", "lte", "eq", "ne"),
    "boolean": ("true", "false"),
    "tags": ("all",),
    "metadata": ("equals",),
}


@dataclass
class Row:
    """One builder row as the form holds it (strings), with its own errors."""

    field: str = ""
    op: str = ""
    value: str = ""
    key: str = ""  # metadata.<key>
    errors: list[str] = dataclass_field(default_factory=list)

    @property
    def blank(self) -> bool:
        return not self.field

    @property
    def kind(self) -> str:
        return kind_of(self.field)

    @property
    def object_key(self) -> str:
        return f"metadata.{self.key.strip()}" if self.field == "metadata" else self.field


class BuilderError(ValueError):
    """Rows that do not make a condition; the messages are on the rows (and ``general``)."""

    def __init__(self, general: list[str]) -> None:
        super().__init__("; ".join(general) or "invalid rows")
        self.general = general


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _json_value(text: str) -> Any:
    """A metadata value: JSON when it reads as JSON (``2``, ``true``, ``"2"``), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _check_row(row: Row) -> None:
    if row.field not in FIELDS:
        row.errors.append(f"Unknown field '{row.field}'.")
        return
    if row.op not in OPERATORS_FOR[row.kind]:
        allowed = ", ".join(OPERATORS[o] for o in OPERATORS_FOR[row.kind])
        row.errors.append(f"'{OPERATORS.get(row.op, row.op)}' does not apply to {row.field}; use {allowed}.")
        return
    if row.field == "metadata" and not row.key.strip():
        row.errors.append("Name the metadata key.")
    if row.kind == "boolean":
        return
    if not row.value.strip():
        row.errors.append("Give a value.")
    elif row.kind == "number" and not _NUMBER_RE.match(row.value.strip()):
        row.errors.append(f"'{row.value.strip()}' is not a number.")


def rows_to_condition(rows: list[Row], match: str) -> dict[str, Any] | str | None:
    """The rows as a condition: an object (``match="all"``), a CEL string (``"any"``), or None
    when every row is blank (every trace). Raises `BuilderError` with messages on the rows."""
    used = [row for row in rows if not row.blank]
    for row in used:
        _check_row(row)
    if any(row.errors for row in used):
        raise BuilderError([])
    if not used:
        return None
    if match == "any":
        return " || ".join(_row_cel(row) for row in used) if len(used) > 1 else _row_cel(used[0])
    condition: dict[str, Any] = {}
    for row in used:
        key, value = row.object_key, _row_object_value(row)
        if key in condition:
            if row.kind == "number":
                before = condition[key] if isinstance(condition[key], list) else [condition[key]]
                condition[key] = [*before, value]
                continue
            if row.kind == "tags":
                condition[key] = list(dict.fromkeys([*condition[key], *value]))
                continue
            row.errors.append(
                f"{key} is already in another row; with “all” a field appears once (use “is one of” for alternatives)."
            )
            continue
        condition[key] = value
    if any(row.errors for row in used):
        raise BuilderError([])
    return condition


def _row_object_value(row: Row) -> Any:
    value = row.value.strip()
    if row.kind == "string":
        if row.op == "prefix":
            return value + "*"
        if row.op == "in":
            return _items(value)
        return value
    if row.kind == "number":
        return f"{_SYMBOL[row.op]}{value}"
    if row.kind == "boolean":
        return row.op == "true"
    if row.kind == "tags":
        return _items(value)
    return _json_value(row.value)


def _cel_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _row_cel(row: Row) -> str:
    value = row.value.strip()
    name = row.field
    if row.kind == "string":
        if name == "provider":  # providers are stored lowercase; the object form folds case
            value = value.lower()
        if row.op == "prefix":
            return f"{name}.startsWith({_cel_string(value)})"
        if row.op == "in":
            exact = [v for v in _items(value) if not v.endswith("*")]
            prefixes = [v[:-1] for v in _items(value) if v.endswith("*")]
            parts = [f"{name} in [{', '.join(_cel_string(v) for v in exact)}]"] if exact else []
            parts += [f"{name}.startsWith({_cel_string(p)})" for p in prefixes]
            return parts[0] if len(parts) == 1 else "(" + " || ".join(parts) + ")"
        return f"{name} == {_cel_string(value)}"
    if row.kind == "number":
        return f"{name} {_SYMBOL[row.op]} {value}"
    if row.kind == "boolean":
        return name if row.op == "true" else f"!{name}"
    if row.kind == "tags":
        tags = [f"{_cel_string(t)} in tags" for t in _items(value)]
        return tags[0] if len(tags) == 1 else "(" + " && ".join(tags) + ")"
    path = "metadata" + "".join(
        f".{part}" if _IDENT_RE.match(part) and part not in _CEL_RESERVED else f"[{_cel_string(part)}]"
        for part in row.key.strip().split(".")
    )
    return f"{path} == {json.dumps(_json_value(row.value), ensure_ascii=False)}"


def condition_to_rows(condition: Mapping[str, Any]) -> list[Row] | None:
    """An object condition as builder rows; None when the builder cannot show it faithfully (a
    shape only the API writes, such as a nested metadata object): the page then edits it as JSON."""
    rows: list[Row] = []
    for key, value in condition.items():
        if key == "metadata" and isinstance(value, Mapping):
            rows.extend(Row("metadata", "equals", _shown(v), str(k)) for k, v in value.items())
        elif key.startswith("metadata."):
            rows.append(Row("metadata", "equals", _shown(value), key.removeprefix("metadata.")))
        elif key in BOOLEAN_FIELDS and isinstance(value, bool):
            rows.append(Row(key, "true" if value else "false"))
        elif key == "tags":
            items = value if isinstance(value, list) else [value]
            rows.append(Row("tags", "all", ", ".join(str(i) for i in items)))
        elif key in NUMBER_FIELDS:
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, bool) or not isinstance(item, int | float | str):
                    return None
                match = _COMPARISON_RE.match(str(item))
                if match is None:
                    return None
                rows.append(Row(key, _FROM_SYMBOL[match.group(1) or "=="], match.group(2)))
        elif key in STRING_FIELDS:
            if isinstance(value, list):
                if any(not isinstance(v, str) or "," in v for v in value):
                    return None
                rows.append(Row(key, "in", ", ".join(value)))
            elif isinstance(value, str) and value.endswith("*") and len(value) > 1:
                rows.append(Row(key, "prefix", value[:-1]))
            elif isinstance(value, str):
                rows.append(Row(key, "eq", value))
            else:
                return None
        else:
            return None
    if rows_round_trip(rows) != _flat(condition):
        return None
    return rows


def _flat(condition: Mapping[str, Any]) -> dict[str, Any]:
    """``{"metadata": {"env": "prod"}}`` as ``{"metadata.env": "prod"}``: the same test (both split
    the key on dots), in the spelling the builder writes."""
    out: dict[str, Any] = {}
    for key, value in condition.items():
        if key == "metadata" and isinstance(value, Mapping):
            out.update({f"metadata.{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


def rows_round_trip(rows: list[Row]) -> Any:
    try:
        return rows_to_condition([Row(r.field, r.op, r.value, r.key) for r in rows], "all")
    except BuilderError:
        return None


def _shown(value: Any) -> str:
    """A metadata value as the builder's text box shows it (`_json_value` reads it back the same):
    plain text for a string that does not read as JSON, else JSON."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, ensure_ascii=False)
