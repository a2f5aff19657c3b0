"""A team's own patterns (an employee id, a ticket number, a customer code), compiled with RE2.

RE2 matches in time linear in the text whatever the pattern, so a pattern like ``(a+)+$`` cannot
stall ingest; the price is that it refuses backreferences and lookaround, which we report as a
validation error naming the pattern. Patterns are also bounded in length, count and compiled size,
and one that matches the empty string is refused (it would "find" PII between every character).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from .kinds import BUILTIN_KINDS

MAX_PATTERNS = 20
MAX_PATTERN_LENGTH = 500
MAX_PROGRAM_MEMORY = 1 << 20  # bytes RE2 may use to compile one pattern
NAME_SHAPE = re.compile(r"[A-Z][A-Z0-9_]{0,39}")
NAME_RULE = "use 1-40 upper-case letters, digits and underscores, starting with a letter"

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = MAX_PROGRAM_MEMORY


class PatternError(ValueError):
    """A custom pattern refused: ``field`` says where (``custom_patterns[2].regex``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class CustomPattern:
    name: str
    regex: str
    compiled: Any  # re2._Regexp: the bindings ship no type information

    def finditer(self, text: str) -> Iterable[tuple[int, int]]:
        for match in self.compiled.finditer(text):
            start, end = match.span()
            if end > start:
                yield start, end


def compile_pattern(name: str, regex: str, *, field: str = "regex") -> CustomPattern:
    if not isinstance(regex, str) or not regex:
        raise PatternError(field, f"Pattern '{name}': the regex is empty.")
    if len(regex) > MAX_PATTERN_LENGTH:
        raise PatternError(field, f"Pattern '{name}': the regex is longer than {MAX_PATTERN_LENGTH} characters.")
    try:
        compiled = re2.compile(regex, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        if "invalid perl operator" in reason or ("invalid escape sequence" in reason and "\\" in regex):
            reason += " (backreferences and lookaround are refused: they can make matching take exponential time)"
        raise PatternError(field, f"Pattern '{name}': invalid regex: {reason}.") from None
    if compiled.search("") is not None:
        raise PatternError(field, f"Pattern '{name}': the regex matches the empty string.")
    return CustomPattern(name=name, regex=regex, compiled=compiled)


def compile_patterns(patterns: Sequence[Mapping[str, Any]]) -> tuple[CustomPattern, ...]:
    """Validate and compile ``[{"name", "regex"}]``; the first problem raises `PatternError`."""
    if len(patterns) > MAX_PATTERNS:
        raise PatternError("custom_patterns", f"At most {MAX_PATTERNS} custom patterns.")
    seen: set[str] = set()
    compiled: list[CustomPattern] = []
    for i, item in enumerate(patterns):
        where = f"custom_patterns[{i}]"
        name = item.get("name")
        if not isinstance(name, str) or not NAME_SHAPE.fullmatch(name):
            raise PatternError(
                f"{where}.name",
                f"Pattern name {name!r}: {NAME_RULE}.",
            )
        if name in BUILTIN_KINDS:
            raise PatternError(f"{where}.name", f"Pattern name '{name}' is a built-in kind; choose another name.")
        if name in seen:
            raise PatternError(f"{where}.name", f"Pattern name '{name}' is used twice.")
        seen.add(name)
        compiled.append(compile_pattern(name, item.get("regex"), field=f"{where}.regex"))  # type: ignore[arg-type]
    return tuple(compiled)
