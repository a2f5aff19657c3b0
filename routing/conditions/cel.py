"""The string form: a CEL expression, checked at compile time (names, depth, worst-case time)."""

from __future__ import annotations

import difflib
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from traces.records import TraceRecord
from traces.usage import DETAIL_FIELDS

from .base import VARIABLES, Bindings, Condition, ConditionError, cel_variables, missing_cost_reason, to_cel

if TYPE_CHECKING:
    import cel

# CEL type names may appear as identifiers: ``type(metadata.n) == double``.
_TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"})
# Functions of the CEL core library that the interpreter implements (checked one by one).
FUNCTIONS: frozenset[str] = frozenset(
    {"size", "contains", "startsWith", "endsWith", "matches", "int", "uint", "double", "string", "bytes"}
    | {"timestamp", "duration", "dyn", "type"}
    | {"getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear"}
    | {"getHours", "getMinutes", "getSeconds", "getMilliseconds"}
)
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
MAX_EXPRESSION_LENGTH = 4096


class CelCondition(Condition):
    __slots__ = ("program", "_names")

    def __init__(self, source: str, program: cel.Program, variables: frozenset[str]) -> None:
        super().__init__(source, variables)
        self.program = program
        self._names = tuple(sorted(variables))

    def evaluate(self, ctx: Mapping[str, Any] | Bindings) -> tuple[bool, str | None]:
        try:
            if isinstance(ctx, Bindings):
                result = self.program.execute(ctx.activation())
            else:
                result = self.program.execute(cel_variables(ctx, self._names))
        except Exception as exc:  # the interpreter raises KeyError, TypeError, RuntimeError, ValueError …
            if "cost" in self.variables and _cost_unknown(ctx):
                return False, missing_cost_reason(ctx.ctx if isinstance(ctx, Bindings) else ctx)
            return False, runtime_error_message(exc)
        if result is True:
            return True, None
        if result is False:
            return False, None
        return False, f"the condition gave {_cel_type_name(result)}, not true or false"


def _cost_unknown(ctx: Mapping[str, Any] | Bindings) -> bool:
    values = ctx.ctx if isinstance(ctx, Bindings) else ctx
    return "cost" in values and values["cost"] is None


def runtime_error_message(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no such key {exc.args[0]!r}" if exc.args else "no such key"
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    text = str(exc).strip() or type(exc).__name__
    first = text.split(". ")[0].rstrip(".")
    if first.startswith("Unsupported operation") or first.startswith("No such overload"):
        hint = "; % needs integers: write int(x) % 2" if "%" in first else ""
        return f"type mismatch ({first[0].lower()}{first[1:]}){hint}"
    return first


def _cel_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return f"a {type(value).__name__}"


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "string", "int", "uint", "float", "ident", "punct"
    text: str
    start: int  # character offset


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<string>(?:[bB]?[rR]|[rR][bB])(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"[^"\n]*"|'[^'\n]*')
      | [bB]?(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<float>\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?)
  | (?P<uint>(?:0[xX][0-9a-fA-F]+|\d+)[uU])
  | (?P<int>0[xX][0-9a-fA-F]+|\d+)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<punct>==|!=|<=|>=|&&|\|\||[-+*/%<>!?:.,()\[\]{}=&|])
    """,
    re.VERBOSE | re.DOTALL,
)


def tokenize(source: str) -> list[Token]:
    """CEL's lexical structure, enough to find identifiers and number literals outside strings.

    Only used on expressions CEL has already parsed; an unknown character becomes a one-letter
    punctuation token so the scan never fails.
    """
    tokens: list[Token] = []
    pos = 0
    while pos < len(source):
        match = _TOKEN_RE.match(source, pos)
        if match is None:
            tokens.append(Token("punct", source[pos], pos))
            pos += 1
            continue
        kind = match.lastgroup or "punct"
        if kind != "ws":
            tokens.append(Token(kind, match.group(), pos))
        pos = match.end()
    return tokens


def _is_index(tokens: Sequence[Token], i: int) -> bool:
    """Is tokens[i] the whole subscript of ``x[i]`` (as opposed to a list literal ``[1]``)?"""
    if i < 2 or i + 1 >= len(tokens):
        return False
    before, opener, after = tokens[i - 2], tokens[i - 1], tokens[i + 1]
    if opener.text != "[" or after.text != "]":
        return False
    return before.kind in ("ident", "string") or before.text in (")", "]")


def _is_modulo_operand(tokens: Sequence[Token], i: int) -> bool:
    """``%`` is defined on integers only in CEL: ``int(total_tokens) % 2`` keeps its 2."""
    return (i > 0 and tokens[i - 1].text == "%") or (i + 1 < len(tokens) and tokens[i + 1].text == "%")


def doubles_for_ints(source: str, tokens: Sequence[Token]) -> str:
    """The expression with each integer literal written as a double (``1`` → ``1.0``)."""
    out: list[str] = []
    last = 0
    for i, tok in enumerate(tokens):
        if tok.kind != "int" or _is_index(tokens, i) or _is_modulo_operand(tokens, i):
            continue
        value = int(tok.text, 16) if tok.text[:2].lower() == "0x" else int(tok.text)
        out.append(source[last : tok.start])
        out.append(repr(float(value)))
        last = tok.start + len(tok.text)
    out.append(source[last:])
    return "".join(out)


def _bound_names(tokens: Sequence[Token]) -> set[str]:
    """Variables bound by comprehension macros: the ``t`` of ``tags.exists(t, t == "x")``."""
    names: set[str] = set()
    for i in range(1, len(tokens) - 3):
        tok = tokens[i]
        if (
            tok.kind == "ident"
            and tok.text in _MACROS
            and tokens[i - 1].text == "."
            and tokens[i + 1].text == "("
            and tokens[i + 2].kind == "ident"
            and tokens[i + 3].text == ","
        ):
            names.add(tokens[i + 2].text)
    return names


MAX_COMPREHENSION_DEPTH = 2
MAX_EVALUATION_SECONDS = 0.02


def _comprehension_depth(tokens: Sequence[Token]) -> tuple[int, int | None]:
    """The deepest nesting of exists/all/map/filter calls, and where the first too-deep one starts.

    Nested comprehensions multiply: four levels over a trace's 50 tags are 6 million steps."""
    depth = 0
    frames: list[int] = []  # paren depth at which each open comprehension's argument list closes
    deepest, where = 0, None
    for i, tok in enumerate(tokens):
        if tok.text == "(":
            depth += 1
            if i >= 2 and tokens[i - 1].kind == "ident" and tokens[i - 1].text in _MACROS and tokens[i - 2].text == ".":
                frames.append(depth)
                if len(frames) > deepest:
                    deepest = len(frames)
                    if deepest > MAX_COMPREHENSION_DEPTH and where is None:
                        where = tokens[i - 1].start
        elif tok.text == ")":
            if frames and frames[-1] == depth:
                frames.pop()
            depth -= 1
    return deepest, where


def _first_use(tokens: Sequence[Token], name: str, *, call: bool) -> int | None:
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or tok.text != name:
            continue
        is_call = i + 1 < len(tokens) and tokens[i + 1].text == "("
        is_member = i > 0 and tokens[i - 1].text == "."
        if call and is_call:
            return tok.start
        if not call and not is_call and not is_member:
            return tok.start
    return None


def _column(source: str, offset: int) -> tuple[int, int]:
    line = source.count("\n", 0, offset) + 1
    col = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, col


def _where(source: str, offset: int) -> str:
    line, col = _column(source, offset)
    return f"column {col}" if line == 1 else f"line {line}, column {col}"


_CEL_ERROR_RE = re.compile(r"<input>:(\d+):(\d+): (.*)")


def _syntax_error(source: str, exc: Exception) -> ConditionError:
    text = str(exc)
    match = _CEL_ERROR_RE.search(text)
    if match is None:
        return ConditionError(f"Syntax error: {text.splitlines()[0]}", None)
    line, col, message = int(match.group(1)), int(match.group(2)), match.group(3).strip()
    lines = source.split("\n")
    offset = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1
    message = message.removeprefix("Syntax error: ")
    friendly = _friendlier(message, source, offset)
    where = f"column {col}" if line == 1 else f"line {line}, column {col}"
    return ConditionError(f"Syntax error at {where}: {friendly}", offset + 1)


def _friendlier(message: str, source: str, offset: int) -> str:
    if "mismatched input '<EOF>'" in message:
        return "the expression ends too early"
    word = re.match(r"(?:mismatched|extraneous) input '([^']*)'", message)
    if word and word.group(1) in ("and", "or", "not", "AND", "OR", "NOT"):
        return f"unexpected '{word.group(1)}' (CEL spells these &&, || and !)"
    if word:
        return f"unexpected '{word.group(1)}'"
    char = re.match(r"token recognition error at: '(.)", message)
    if char:
        if char.group(1) == "=":
            return "unexpected '=' (compare with ==)"
        if char.group(1) in "&|":
            return f"unexpected '{char.group(1)}' (CEL spells these && and ||)"
        return f"unexpected character '{char.group(1)}'"
    return message


_PROBE_CONTEXT: dict[str, Any] = {
    **TraceRecord(trace_id="trc_probe", team_id=0, model="probe-model").condition_context(),
    "latency_ms": 1,
    "total_tokens": 1,
    "prompt_tokens": 1,
    "completion_tokens": 1,
    "time_to_first_token_ms": 1,
    **dict.fromkeys(DETAIL_FIELDS, 1),
    "cost": 1.0,
}


def compile_cel(source: str) -> CelCondition:
    import cel  # (here, not at the top: see routing.conditions.base)

    if len(source) > MAX_EXPRESSION_LENGTH:
        raise ConditionError(f"The condition is longer than {MAX_EXPRESSION_LENGTH} characters.", None)
    try:
        cel.compile(source)  # errors at the user's own columns
    except Exception as exc:
        raise _syntax_error(source, exc) from None
    tokens = tokenize(source)
    rewritten = doubles_for_ints(source, tokens)
    try:
        program = cel.compile(rewritten)
    except Exception as exc:  # pragma: no cover - the rewrite only swaps number spellings
        raise _syntax_error(source, exc) from None

    bound = _bound_names(tokens)
    used = set(program.variables())
    unknown = sorted(used - VARIABLES - _TYPE_NAMES - bound)
    if unknown:
        name = unknown[0]
        offset = _first_use(tokens, name, call=False)
        hint = difflib.get_close_matches(name, sorted(VARIABLES), n=1)
        suggestion = f"; did you mean '{hint[0]}'?" if hint else f". Known names: {', '.join(sorted(VARIABLES))}"
        where = f" at {_where(source, offset)}" if offset is not None else ""
        raise ConditionError(f"Unknown name '{name}'{where}{suggestion}", offset + 1 if offset is not None else None)
    functions = {f for f in program.functions() if f[:1].isalpha()}
    strange = sorted(functions - FUNCTIONS)
    if strange:
        name = strange[0]
        offset = _first_use(tokens, name, call=True)
        hint = difflib.get_close_matches(name, sorted(FUNCTIONS), n=1)
        suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
        where = f" at {_where(source, offset)}" if offset is not None else ""
        raise ConditionError(
            f"Unknown function '{name}'{where}{suggestion}", offset + 1 if offset is not None else None
        )

    depth, offset = _comprehension_depth(tokens)
    if depth > MAX_COMPREHENSION_DEPTH:
        where = f" at {_where(source, offset)}" if offset is not None else ""
        raise ConditionError(
            f"Comprehensions (exists, all, map, filter) nest at most {MAX_COMPREHENSION_DEPTH} deep{where}: "
            "deeper ones are too slow to run on every trace.",
            offset + 1 if offset is not None else None,
        )

    predicate = CelCondition(source, program, frozenset(used & VARIABLES))
    _probe(predicate)
    if depth:
        _time_worst_case(predicate)
    return predicate


_WORST_CASE: dict[str, Any] = {
    **_PROBE_CONTEXT,
    "tags": [f"tag-{i:03d}" for i in range(50)],
    "metadata": {f"key-{i:02d}": f"value-{i:02d}" for i in range(64)},
}


def _time_worst_case(predicate: CelCondition) -> None:
    """A condition with comprehensions runs once on the largest trace the limits allow (50 tags,
    64 metadata keys); one that takes longer than `MAX_EVALUATION_SECONDS` is refused."""
    values = {n: to_cel(_WORST_CASE[n]) for n in predicate.variables}
    best = math.inf
    for _ in range(2):
        start = time.perf_counter()
        try:
            predicate.program.execute(values)
        except Exception:  # errors are for run time to report; only the time matters here
            pass
        best = min(best, time.perf_counter() - start)
        if best <= MAX_EVALUATION_SECONDS:
            return
        if best > 2 * MAX_EVALUATION_SECONDS:
            break  # not a hiccup: no need to spend that time again
    raise ConditionError(
        f"This condition is too slow to run on every trace ({best * 1000:.0f} ms on a trace with 50 tags and 64 "
        f"metadata keys; the limit is {MAX_EVALUATION_SECONDS * 1000:.0f} ms). Simplify its exists/all/map/filter.",
        None,
    )


def _probe(predicate: CelCondition) -> None:
    """Run the expression once against a typical trace to catch what a type checker would:
    a result that is not true/false, or operands that can never fit. Metadata is free-form, so
    errors on an expression that reads it are left for run time (where they mean "no match")."""
    try:
        result = predicate.program.execute({n: to_cel(_PROBE_CONTEXT[n]) for n in predicate.variables})
    except TypeError as exc:
        if "metadata" in predicate.variables:
            return
        hint = ""
        if {"size", "int", "uint"} & set(predicate.program.functions()):
            hint = " Numbers in conditions are doubles but size() and int() give integers: write double(size(tags))."
        message = f"This condition cannot be evaluated: {runtime_error_message(exc)}.{hint}"
        raise ConditionError(message, None) from None
    except Exception:  # missing keys, empty lists, bad arguments: they depend on the trace
        return
    if not isinstance(result, bool):
        raise ConditionError(
            f"A condition must be true or false; this one gives {_cel_type_name(result)}.", None
        ) from None
