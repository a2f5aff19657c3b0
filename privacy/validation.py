"""Checking a policy document (the API's PUT body, later the settings form) before it is stored.

`clean_policy` returns the normalised policy or a map of field path → messages, so the API can
answer problem+json naming each field and the settings page can put each message by its field.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from .detection import BUILTIN_KINDS
from .detection.custom import MAX_PATTERNS, NAME_RULE, NAME_SHAPE, PatternError, compile_pattern
from .models import Mode

TOP_LEVEL = ("stored", "destinations", "kinds", "custom_patterns")
MAX_DESTINATIONS = 200


@dataclass(frozen=True, slots=True)
class CleanPolicy:
    stored_mode: str
    destinations: dict[str, str]
    kinds: list[str] | None  # None: every built-in kind
    custom_patterns: list[dict[str, str]]


def _mode(raw: Any, path: str, errors: dict[str, list[str]]) -> str | None:
    if not isinstance(raw, Mapping):
        errors.setdefault(path, []).append('Must be an object {"mode": ...}.')
        return None
    extra = sorted(str(k) for k in raw if k != "mode")
    if extra:
        errors.setdefault(f"{path}.{extra[0]}", []).append('Unknown field; an entry has only "mode".')
        return None
    mode = raw.get("mode")
    if mode not in Mode.values:
        errors.setdefault(f"{path}.mode", []).append(f"Unknown mode {mode!r}; use one of {', '.join(Mode.values)}.")
        return None
    return str(mode)


def clean_policy(data: Any, *, known_destinations: Collection[str]) -> CleanPolicy | dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if not isinstance(data, Mapping):
        return {"": ["The policy must be a JSON object."]}
    for key in sorted(str(k) for k in data if k not in TOP_LEVEL):
        errors.setdefault(key, []).append(f"Unknown field; a policy has {', '.join(TOP_LEVEL)}.")

    stored = _mode(data.get("stored", {"mode": Mode.OFF}), "stored", errors)

    destinations: dict[str, str] = {}
    raw_destinations = data.get("destinations")
    raw_destinations = {} if raw_destinations is None else raw_destinations
    if not isinstance(raw_destinations, Mapping):
        errors.setdefault("destinations", []).append('Must be an object {"<integration name>": {"mode": ...}}.')
    elif len(raw_destinations) > MAX_DESTINATIONS:
        errors.setdefault("destinations", []).append(f"At most {MAX_DESTINATIONS} destinations.")
    else:
        for name, entry in raw_destinations.items():
            path = f"destinations.{name}"
            if name not in known_destinations:
                known = ", ".join(sorted(known_destinations)) or "none yet"
                errors.setdefault(path, []).append(f"No integration named '{name}' in this team (known: {known}).")
                continue
            mode = _mode(entry, path, errors)
            if mode is not None:
                destinations[str(name)] = mode

    kinds: list[str] | None = None
    raw_kinds = data.get("kinds")
    if raw_kinds is not None:
        if not isinstance(raw_kinds, list) or not all(isinstance(k, str) for k in raw_kinds):
            errors.setdefault("kinds", []).append("Must be a list of kind names.")
        else:
            for i, kind in enumerate(raw_kinds):
                if kind not in BUILTIN_KINDS:
                    errors.setdefault(f"kinds[{i}]", []).append(
                        f"Unknown kind {kind!r}; built-in kinds are {', '.join(BUILTIN_KINDS)} "
                        "(custom patterns always apply)."
                    )
            kinds = [k for k in BUILTIN_KINDS if k in raw_kinds]  # canonical order, no duplicates

    patterns: list[dict[str, str]] = []
    raw_patterns = data.get("custom_patterns")
    raw_patterns = [] if raw_patterns is None else raw_patterns
    if not isinstance(raw_patterns, list):
        errors.setdefault("custom_patterns", []).append('Must be a list of {"name", "regex"} objects.')
    elif len(raw_patterns) > MAX_PATTERNS:
        errors.setdefault("custom_patterns", []).append(f"At most {MAX_PATTERNS} custom patterns.")
    else:
        seen: set[str] = set()
        for i, item in enumerate(raw_patterns):
            path = f"custom_patterns[{i}]"
            if not isinstance(item, Mapping) or set(item) - {"name", "regex"}:
                errors.setdefault(path, []).append('A custom pattern is an object {"name", "regex"}.')
                continue
            name = item.get("name")
            if not isinstance(name, str) or not NAME_SHAPE.fullmatch(name):
                errors.setdefault(f"{path}.name", []).append(f"Pattern name {name!r}: {NAME_RULE}.")
                continue
            if name in BUILTIN_KINDS or name in seen:
                why = "is a built-in kind" if name in BUILTIN_KINDS else "is used twice"
                errors.setdefault(f"{path}.name", []).append(f"Pattern name '{name}' {why}; choose another name.")
                continue
            seen.add(name)
            regex = item.get("regex")
            try:
                compile_pattern(name, regex if isinstance(regex, str) else "", field=f"{path}.regex")
            except PatternError as exc:
                errors.setdefault(exc.field, []).append(exc.message)
                continue
            patterns.append({"name": name, "regex": str(regex)})

    if errors or stored is None:
        return errors
    return CleanPolicy(stored_mode=stored, destinations=destinations, kinds=kinds, custom_patterns=patterns)
