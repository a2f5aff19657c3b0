"""Routing conditions: one compiler for both spellings.

A rule's condition is either an object (``{"model": "gpt-4*", "cost": ">0.05"}``, every key must
hold) or a CEL expression (``model == "gpt-4" && cost > 0.05``). Both compile to a `Condition`
over `TraceRecord.condition_context()`. CEL runs in the Rust interpreter of the
``common-expression-language`` package: no ``eval``, no attribute access, no I/O.

Decisions (docs/routing.md has the user-facing version):

- Numbers are doubles in CEL conditions, as in JSON: every numeric trace field and metadata number
  is handed to CEL as a double and integer literals are read as doubles, so ``cost > 1``,
  ``cost * 1000 > 5`` and ``latency_ms / 1000 > 2.5`` mean what they say. List indexes
  (``tags[0]``) stay integers.
- Identifiers and functions are checked when the rule is saved: an unknown name is an error with
  its column, not a rule that silently never matches.
- At run time an expression that fails (a missing metadata key, a type mismatch on user metadata)
  does not match; the reason says why. CEL's ``&&``/``||`` still short-circuit around errors, so
  ``has(metadata.env) && metadata.env == "prod"`` is the careful spelling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import (
    ALWAYS,
    BOOLEAN_VARIABLES,
    COST_REASONS,
    KINDS,
    NO_COST_REASON,
    NUMERIC_VARIABLES,
    STATUSES,
    STRING_VARIABLES,
    UNPRICED_REASON,
    VARIABLES,
    Always,
    Bindings,
    Broken,
    Condition,
    ConditionError,
    to_cel,
)
from .cel import (
    FUNCTIONS,
    MAX_COMPREHENSION_DEPTH,
    MAX_EVALUATION_SECONDS,
    MAX_EXPRESSION_LENGTH,
    CelCondition,
    Token,
    compile_cel,
    doubles_for_ints,
    runtime_error_message,
    tokenize,
)
from .objects import OBJECT_KEYS, ObjectCondition, compile_object, json_equal

__all__ = [
    "ALWAYS",
    "BOOLEAN_VARIABLES",
    "COST_REASONS",
    "KINDS",
    "NO_COST_REASON",
    "FUNCTIONS",
    "MAX_COMPREHENSION_DEPTH",
    "MAX_EVALUATION_SECONDS",
    "MAX_EXPRESSION_LENGTH",
    "NUMERIC_VARIABLES",
    "OBJECT_KEYS",
    "STATUSES",
    "STRING_VARIABLES",
    "UNPRICED_REASON",
    "VARIABLES",
    "Always",
    "Bindings",
    "Broken",
    "CelCondition",
    "ConditionError",
    "ObjectCondition",
    "Condition",
    "Token",
    "compile_cel",
    "compile_condition",
    "compile_object",
    "doubles_for_ints",
    "json_equal",
    "runtime_error_message",
    "to_cel",
    "tokenize",
]


def compile_condition(cond: str | Mapping[str, Any] | None) -> Condition:
    """Compile either spelling of a condition. None, ``""`` and ``{}`` match every trace."""
    if cond is None:
        return ALWAYS
    if isinstance(cond, str):
        if not cond.strip():
            return ALWAYS
        return compile_cel(cond)
    if isinstance(cond, Mapping):
        if not cond:
            return ALWAYS
        return compile_object(cond)
    raise ConditionError("A condition is an object of keys or a CEL expression string.", None)
