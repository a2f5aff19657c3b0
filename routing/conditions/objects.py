"""The object form: keys that must all hold (``{"model": "gpt-4*", "cost": "> 0.05"}``)."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from .base import (
    BOOLEAN_VARIABLES,
    KINDS,
    NUMERIC_VARIABLES,
    STATUSES,
    STRING_VARIABLES,
    Bindings,
    Condition,
    ConditionError,
    missing_cost_reason,
)

_COMPARISON_RE = re.compile(r"^\s*(>=|<=|==|!=|>|<|=)?\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
OBJECT_KEYS = (
    sorted(STRING_VARIABLES - {"id"})
    + sorted(NUMERIC_VARIABLES)
    + sorted(BOOLEAN_VARIABLES)
    + ["tags", "metadata", "metadata.<key>"]
)

Test = Callable[[Mapping[str, Any]], bool]


class ObjectCondition(Condition):
    __slots__ = ("tests",)

    def __init__(self, source: str, tests: tuple[Test, ...], variables: frozenset[str]) -> None:
        super().__init__(source, variables)
        self.tests = tests

    def evaluate(self, ctx: Mapping[str, Any] | Bindings) -> tuple[bool, str | None]:
        values = ctx.ctx if isinstance(ctx, Bindings) else ctx
        for test in self.tests:
            if not test(values):
                if getattr(test, "key", None) == "cost" and values.get("cost") is None:
                    return False, missing_cost_reason(values)
                return False, None
        return True, None


def _strings(key: str, value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) and v for v in items):
        raise ConditionError(f"'{key}' takes a non-empty string or a list of them.", None, key)
    return items


def _string_test(key: str, value: Any) -> Test:
    """Exact match, or prefix match with a trailing ``*``; a list matches any of its items."""
    items = _strings(key, value)
    fold = key == "provider"  # providers are lowercase names
    exact = frozenset(v.lower() if fold else v for v in items if not v.endswith("*"))
    prefixes = tuple(v[:-1].lower() if fold else v[:-1] for v in items if v.endswith("*"))
    if key in ("status", "kind"):
        allowed = STATUSES if key == "status" else KINDS
        bad = [v for v in items if v not in allowed]
        if bad:
            raise ConditionError(f"'{key}' is one of {', '.join(allowed)}; not '{bad[0]}'.", None, key)

    def test(ctx: Mapping[str, Any]) -> bool:
        actual = ctx.get(key) or ""
        if fold:
            actual = actual.lower()
        return actual in exact or (bool(prefixes) and actual.startswith(prefixes))

    return test


def _comparison(key: str, value: Any) -> tuple[Callable[[float, float], bool], float, str]:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConditionError(f'\'{key}\' takes a number or a comparison such as ">0.5" or "<=100".', None, key)
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ConditionError(f"'{key}' must be a finite number.", None, key)
        return _OPERATORS["=="], float(value), "=="
    match = _COMPARISON_RE.match(value)
    if match is None:
        raise ConditionError(
            f"'{key}': cannot read {value!r}; write an operator (>, >=, <, <=, ==, !=) and a number, such as \">0.5\".",
            None,
            key,
        )
    op = match.group(1) or "=="
    return _OPERATORS[op], float(match.group(2)), op


def _number_test(key: str, value: Any) -> Test:
    """A comparison; a list of comparisons must all hold (a range: ``[">=0.01", "<1"]``)."""
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ConditionError(f"'{key}' needs at least one comparison.", None, key)
    checks = tuple(_comparison(key, v)[:2] for v in items)

    def test(ctx: Mapping[str, Any]) -> bool:
        actual = ctx.get(key)
        if actual is None:
            return False
        actual = float(actual)
        return all(op(actual, bound) for op, bound in checks)

    test.key = key  # type: ignore[attr-defined]
    return test


def _bool_test(key: str, value: Any) -> Test:
    if not isinstance(value, bool):
        raise ConditionError(f"'{key}' takes true or false.", None, key)

    def test(ctx: Mapping[str, Any]) -> bool:
        return bool(ctx.get(key)) is value

    return test


def _tags_test(value: Any) -> Test:
    """Every listed tag must be on the trace."""
    wanted = frozenset(_strings("tags", value))

    def test(ctx: Mapping[str, Any]) -> bool:
        return wanted.issubset(ctx.get("tags") or ())

    return test


_MISSING = object()


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true is not 1 and "1" is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float | Decimal) and isinstance(b, int | float | Decimal):
        return float(a) == float(b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _metadata_test(path: str, value: Any) -> Test:
    """``metadata.a.b``: walk nested objects by the dotted path; the value must equal (JSON equality)."""
    parts = path.split(".")
    if not all(parts):
        raise ConditionError(f"'metadata.{path}' is not a valid key path.", None, f"metadata.{path}")

    def test(ctx: Mapping[str, Any]) -> bool:
        current: Any = ctx.get("metadata") or {}
        for part in parts:
            if not isinstance(current, Mapping):
                return False
            current = current.get(part, _MISSING)
            if current is _MISSING:
                return False
        return json_equal(current, value)

    return test


def compile_object(cond: Mapping[str, Any]) -> ObjectCondition:
    tests: list[Test] = []
    variables: set[str] = set()
    for raw_key, value in cond.items():
        key = str(raw_key)
        if key in STRING_VARIABLES and key != "id":
            tests.append(_string_test(key, value))
        elif key in NUMERIC_VARIABLES:
            tests.append(_number_test(key, value))
        elif key in BOOLEAN_VARIABLES:
            tests.append(_bool_test(key, value))
        elif key == "tags":
            tests.append(_tags_test(value))
        elif key == "metadata":
            if not isinstance(value, Mapping) or not value:
                raise ConditionError("'metadata' takes an object of key → value.", None, key)
            tests.extend(_metadata_test(str(k), v) for k, v in value.items())
        elif key.startswith("metadata."):
            tests.append(_metadata_test(key.removeprefix("metadata."), value))
            key = "metadata"
        else:
            hint = difflib.get_close_matches(key, OBJECT_KEYS, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else f". Known keys: {', '.join(OBJECT_KEYS)}"
            raise ConditionError(f"Unknown condition key '{key}'{suggestion}", None, key)
        variables.add(key)
    source = json.dumps(cond, sort_keys=True, separators=(", ", ": "), default=str)
    return ObjectCondition(source, tuple(tests), frozenset(variables))
