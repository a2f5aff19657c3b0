"""The policy engine: pure functions from (trace, compiled policy) to (transformed trace, kinds found).

No ORM and no I/O, so ingest can call `apply_policy(trace, policy)` before it stores a trace and
delivery can call `apply_policy(trace, policy, destination=name)` before each export. The trace is
never modified in place; the result holds a new dict sharing every field it did not change.

Fields a policy reads: ``input``, ``output``, ``metadata`` (string values, recursively through
lists and objects; keys are left alone) and ``error.message`` (or ``error`` when it is a string).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from .detection import CREDIT_CARD, EMAIL, IBAN, PHONE, US_SSN, CustomPattern, Finding, may_hold_pii, scan

OFF = "off"
DETECT = "detect"
REDACT = "redact"
HASH = "hash"
DROP = "drop"
MODES: tuple[str, ...] = (OFF, DETECT, REDACT, HASH, DROP)

FIELDS: tuple[str, ...] = ("input", "output", "metadata", "error")
MIN_BUILTIN_LEN = 6  # `a@b.co`; an IPv4 address is 7 characters, the other kinds longer
MAX_DEPTH = 64  # deeper JSON is scanned as its JSON text
PSEUDONYM_HEX = 12  # 48 bits: a collision within one team and kind needs ~16 million distinct values
_DIGITS_ONLY = str.maketrans("", "", " -.()/")


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """A team's policy, ready to apply. ``destinations`` maps an integration name to its mode;
    ``kinds`` None means every built-in kind; custom patterns always apply."""

    team_id: int
    version: int = 0
    stored: str = OFF
    destinations: Mapping[str, str] = field(default_factory=dict)
    kinds: frozenset[str] | None = None
    custom: tuple[CustomPattern, ...] = ()
    hash_key: bytes = b""

    def mode_for(self, destination: str | None = None) -> str | None:
        """The mode for storing (``destination`` None) or for one destination; None when the
        destination has no entry and gets the stored trace as it is."""
        if destination is None:
            return self.stored
        return self.destinations.get(destination)


@dataclass(frozen=True, slots=True)
class PolicyResult:
    trace: dict[str, Any]
    mode: str
    kinds: dict[str, int]  # findings per kind: never the values
    dropped: tuple[str, ...] = ()  # paths of fields a `drop` removed or emptied

    @property
    def found(self) -> bool:
        return bool(self.kinds)


def pseudonym(key: bytes, kind: str, value: str) -> str:
    """``[KIND:<12 hex>]``: the same value of the same kind gives the same pseudonym within a team
    (HMAC-SHA256 with the team's key), so traces can still be joined on it; the value cannot be
    recovered without the key. Formatting is ignored: ``+1 415-555-0132`` and ``+14155550132`` agree."""
    if kind == EMAIL:
        value = value.lower()
    elif kind in (PHONE, CREDIT_CARD, US_SSN, IBAN):
        value = value.translate(_DIGITS_ONLY).upper()
    digest = hmac.new(key, f"{kind}:{value}".encode(), hashlib.sha256).hexdigest()
    return f"[{kind}:{digest[:PSEUDONYM_HEX]}]"


def transform_text(text: str, findings: Collection[Finding], mode: str, key: bytes = b"") -> str:
    """``text`` with each finding replaced by ``[KIND]`` (redact) or its pseudonym (hash)."""
    if not findings or mode not in (REDACT, HASH):
        return text
    parts: list[str] = []
    last = 0
    for f in sorted(findings):
        parts.append(text[last : f.start])
        parts.append(f"[{f.kind}]" if mode == REDACT else pseudonym(key, f.kind, text[f.start : f.end]))
        last = f.end
    parts.append(text[last:])
    return "".join(parts)


_SCALARS = frozenset({int, float, bool, type(None)})  # JSON values with nothing to scan
Path = str | tuple[Any, str, Any]  # a field name, or (parent path, "." or "[", key or index)


def spell(path: Path) -> str:
    """``metadata.user.email``, ``metadata.tags[1]``: a path as `PolicyResult.dropped` names it."""
    if isinstance(path, str):
        return path
    parent, sep, key = path
    return f"{spell(parent)}.{key}" if sep == "." else f"{spell(parent)}[{key}]"


class _Walk:
    """One trace's pass: scans strings, counts kinds, and rewrites or drops what the mode says.

    It runs on every trace ingested under a policy (bench/pii_ingest.py), so the common cases
    are tested first and by exact type (a dict, a list, a string, a number), paths are built
    only for what is dropped, and a string the prefilter clears never reaches `scan`."""

    _DROPPED = object()

    def __init__(self, policy: CompiledPolicy, mode: str) -> None:
        self.policy = policy
        self.mode = mode
        self.kinds: dict[str, int] = {}
        self.dropped: list[str] = []
        self.builtin_only = not policy.custom  # custom patterns must see every string

    def text(self, value: str) -> Any:
        if self.builtin_only and (len(value) < MIN_BUILTIN_LEN or not may_hold_pii(value)):
            return value  # shorter than any built-in kind's value (`a@b.co`), or holds none of their characters
        findings = scan(value, kinds=self.policy.kinds, custom=self.policy.custom)
        if not findings:
            return value
        for f in findings:
            self.kinds[f.kind] = self.kinds.get(f.kind, 0) + 1
        if self.mode == DROP:
            return self._DROPPED
        return transform_text(value, findings, self.mode, self.policy.hash_key)

    def value(self, value: Any, path: Path, depth: int = 0) -> Any:
        """The JSON value with PII handled; `_DROPPED` when it held PII and the mode is drop."""
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind in _SCALARS:
            return value
        is_mapping = kind is dict or isinstance(value, Mapping)
        if not is_mapping and not (kind is list or isinstance(value, list | tuple)):
            return self.text(value) if isinstance(value, str) else value  # a str subclass is text too
        if depth >= MAX_DEPTH:
            # Too deep to walk: scanned as its JSON text, and replaced by that text only if it held PII.
            blob = json.dumps(value, ensure_ascii=False, default=str)
            new = self.text(blob)
            return value if new is blob else new
        text, walk, dropped, scalars = self.text, self.value, self._DROPPED, _SCALARS
        changed = False
        if is_mapping:
            out: dict[str, Any] = {}
            for k, v in value.items():
                t = type(v)
                if t is str:
                    new = text(v)
                elif t in scalars:
                    out[k] = v
                    continue
                else:
                    new = walk(v, (path, ".", k), depth + 1)
                if new is dropped:
                    self.dropped.append(spell((path, ".", k)))
                    changed = True
                    continue
                changed = changed or new is not v
                out[k] = new
            return out if changed else value
        items: list[Any] = []
        for i, v in enumerate(value):
            t = type(v)
            if t is str:
                new = text(v)
            elif t in scalars:
                items.append(v)
                continue
            else:
                new = walk(v, (path, "[", i), depth + 1)
            if new is dropped:
                self.dropped.append(spell((path, "[", i)))
                changed = True
                continue
            changed = changed or new is not v
            items.append(new)
        return items if changed else value


def _whole_field(walk: _Walk, value: Any, path: str) -> tuple[Any, bool]:
    """Input and output are dropped whole under `drop` (one message with PII makes the rest
    misleading); returns (new value, dropped?)."""
    before = len(walk.dropped)
    new = walk.value(value, path)
    if new is _Walk._DROPPED or len(walk.dropped) > before:
        del walk.dropped[before:]
        walk.dropped.append(path)
        return None, True
    return new, False


def apply_policy(trace: Mapping[str, Any], policy: CompiledPolicy, *, destination: str | None = None) -> PolicyResult:
    """Apply the policy's stored mode (``destination`` None) or one destination's mode to a trace.

    ``drop`` removes what holds PII, per field: ``input``/``output`` become null as a whole;
    a ``metadata`` entry (at any depth) or list item holding PII is removed; ``error.message``
    becomes ``""`` and the error's type is kept, so the trace still counts as an error.
    A destination without an entry returns the trace unchanged, unscanned, with mode ``"inherit"``:
    it gets what was stored.
    """
    mode = policy.mode_for(destination)
    if mode is None:
        return PolicyResult(trace=dict(trace), mode="inherit", kinds={})
    if mode == OFF:
        return PolicyResult(trace=dict(trace), mode=OFF, kinds={})
    walk = _Walk(policy, mode)
    out = dict(trace)
    for name in ("input", "output"):
        if out.get(name) is not None:
            out[name], _ = _whole_field(walk, out[name], name) if mode == DROP else (walk.value(out[name], name), False)
    metadata = out.get("metadata")
    if isinstance(metadata, Mapping):
        out["metadata"] = walk.value(metadata, "metadata")
    error = out.get("error")
    if isinstance(error, str):
        new = walk.text(error)
        out["error"] = "" if new is _Walk._DROPPED else new
        if new is _Walk._DROPPED:
            walk.dropped.append("error")
    elif isinstance(error, Mapping) and isinstance(error.get("message"), str):
        new = walk.text(error["message"])
        if new is _Walk._DROPPED:
            walk.dropped.append("error.message")
            new = ""
        if new is not error["message"]:
            out["error"] = {**error, "message": new}
    return PolicyResult(trace=out, mode=mode, kinds=walk.kinds, dropped=tuple(walk.dropped))
