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
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from .detection import CREDIT_CARD, EMAIL, IBAN, PHONE, US_SSN, CustomPattern, Finding, scan

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
_CLEAN: tuple[str | None, tuple[str, ...]] = (None, ())  # a scanned string with nothing found


def spell(path: Path) -> str:
    """``metadata.user.email``, ``metadata.tags[1]``: a path as `PolicyResult.dropped` names it."""
    if isinstance(path, str):
        return path
    parent, sep, key = path
    return f"{spell(parent)}.{key}" if sep == "." else f"{spell(parent)}[{key}]"


class _Walk:
    """The pass over the traces of one batch: scans strings, counts kinds per trace, and rewrites or
    drops what the mode says.

    It runs on every trace ingested under a policy (bench/pii_ingest.py), so the common cases
    are tested first and by exact type (a dict, a list, a string, a number), and paths are built
    only for what is dropped. Each distinct string is scanned once per batch: ``seen`` maps it to
    what the mode made of it (None: unchanged) and the kinds found in it, so a system prompt, a
    model or service name or a metadata value repeated in every trace of a batch costs one dict
    look-up after the first (the same policy and mode give the same result for the same text)."""

    _DROPPED: Any = object()

    def __init__(self, policy: CompiledPolicy, mode: str) -> None:
        self.policy = policy
        self.mode = mode
        self.kinds: dict[str, int] = {}
        self.dropped: list[str] = []
        self.min_len = MIN_BUILTIN_LEN if not policy.custom else 0  # custom patterns must see every string
        self.seen: dict[str, tuple[Any, tuple[str, ...]]] = {}

    def _scanned(self, value: str) -> tuple[Any, tuple[str, ...]]:
        findings = scan(value, kinds=self.policy.kinds, custom=self.policy.custom)
        if not findings:
            return _CLEAN
        kinds = tuple(f.kind for f in findings)
        if self.mode == DROP:
            return self._DROPPED, kinds
        if self.mode == DETECT:
            return None, kinds
        return transform_text(value, findings, self.mode, self.policy.hash_key), kinds

    def text(self, value: str) -> Any:
        if len(value) < self.min_len:
            return value  # shorter than any built-in kind's value (`a@b.co`)
        if type(value) is str:
            hit = self.seen.get(value)
            if hit is None:
                hit = self.seen[value] = self._scanned(value)
        else:
            hit = self._scanned(value)  # a str subclass may define its own equality: not shared
        if hit is _CLEAN:
            return value
        new, kinds = hit
        counts = self.kinds
        for kind in kinds:
            counts[kind] = counts.get(kind, 0) + 1
        return value if new is None else new

    def value(self, value: Any, path: Path, depth: int = 0) -> Any:
        """The JSON value with PII handled; `_DROPPED` when it held PII and the mode is drop."""
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind in _SCALARS:
            return value
        if kind is dict or kind is list:
            is_mapping = kind is dict
        elif isinstance(value, Mapping):
            is_mapping = True
        elif isinstance(value, list | tuple):
            is_mapping = False
        else:
            return self.text(value) if isinstance(value, str) else value  # a str subclass is text too
        if depth >= MAX_DEPTH:
            # Too deep to walk: scanned as its JSON text, and replaced by that text only if it held PII.
            blob = json.dumps(value, ensure_ascii=False, default=str)
            new = self.text(blob)
            return value if new is blob else new
        # Nothing is copied until something changes: most values hold no PII and are returned as they
        # were. A string too short for any kind or seen clean before in the batch is passed over here.
        text, walk, dropped, scalars = self.text, self.value, self._DROPPED, _SCALARS
        seen, min_len = self.seen, self.min_len
        if is_mapping:
            out: dict[str, Any] | None = None
            for i, (k, v) in enumerate(value.items()):
                t = type(v)
                if t is str:
                    if len(v) < min_len or seen.get(v) is _CLEAN:
                        new = v
                    else:
                        new = text(v)
                elif t in scalars:
                    new = v
                else:
                    new = walk(v, (path, ".", k), depth + 1)
                if new is v:
                    if out is not None:
                        out[k] = v
                    continue
                if out is None:
                    out = dict(islice(value.items(), i))
                if new is dropped:
                    self.dropped.append(spell((path, ".", k)))
                else:
                    out[k] = new
            return value if out is None else out
        items: list[Any] | None = None
        for i, v in enumerate(value):
            t = type(v)
            if t is str:
                if len(v) < min_len or seen.get(v) is _CLEAN:
                    new = v
                else:
                    new = text(v)
            elif t in scalars:
                new = v
            else:
                new = walk(v, (path, "[", i), depth + 1)
            if new is v:
                if items is not None:
                    items.append(v)
                continue
            if items is None:
                items = list(value[:i])
            if new is dropped:
                self.dropped.append(spell((path, "[", i)))
            else:
                items.append(new)
        return value if items is None else items


def _whole_field(walk: _Walk, value: Any, path: str) -> Any:
    """Input and output are dropped whole under `drop` (one message with PII makes the rest
    misleading): None when anything in ``value`` held PII."""
    before = len(walk.dropped)
    new = walk.value(value, path)
    if new is _Walk._DROPPED or len(walk.dropped) > before:
        del walk.dropped[before:]
        walk.dropped.append(path)
        return None
    return new


def policy_fields(walk: _Walk, input: Any, output: Any, metadata: Any, error: Any) -> tuple[Any, Any, Any, Any]:
    """A trace's four fields through ``walk``, each returned as it was unless the policy changed it.
    ``error`` is a string or a mapping with a ``message``; ``walk.kinds`` and ``walk.dropped`` then
    hold what this trace had."""
    walk.kinds, walk.dropped = {}, []
    dropped = _Walk._DROPPED
    if walk.mode == DROP:
        input = _whole_field(walk, input, "input") if input is not None else None
        output = _whole_field(walk, output, "output") if output is not None else None
    else:
        input = walk.value(input, "input") if input is not None else None
        output = walk.value(output, "output") if output is not None else None
    if type(metadata) is dict or isinstance(metadata, Mapping):
        metadata = walk.value(metadata, "metadata")
    if error is None:
        pass
    elif isinstance(error, str):
        new = walk.text(error)
        if new is dropped:
            walk.dropped.append("error")
            new = ""
        error = new
    elif isinstance(error, Mapping) and isinstance(error.get("message"), str):
        new = walk.text(error["message"])
        if new is dropped:
            walk.dropped.append("error.message")
            new = ""
        if new is not error["message"]:
            error = {**error, "message": new}
    return input, output, metadata, error


def policy_walk(policy: CompiledPolicy, destination: str | None = None) -> _Walk | None:
    """The walk that applies the stored mode (``destination`` None) or a destination's mode to the
    traces of one batch (`policy_fields`); None when that mode is off or the destination has no entry."""
    mode = policy.mode_for(destination)
    return None if mode is None or mode == OFF else _Walk(policy, mode)


def apply_policy(trace: Mapping[str, Any], policy: CompiledPolicy, *, destination: str | None = None) -> PolicyResult:
    """Apply the policy's stored mode (``destination`` None) or one destination's mode to a trace.

    ``drop`` removes what holds PII, per field: ``input``/``output`` become null as a whole;
    a ``metadata`` entry (at any depth) or list item holding PII is removed; ``error.message``
    becomes ``""`` and the error's type is kept, so the trace still counts as an error.
    A destination without an entry returns the trace unchanged, unscanned, with mode ``"inherit"``:
    it gets what was stored.
    """
    return apply_policy_batch((trace,), policy, destination=destination)[0]


def apply_policy_batch(
    traces: Iterable[Mapping[str, Any]], policy: CompiledPolicy, *, destination: str | None = None
) -> list[PolicyResult]:
    """`apply_policy` on each trace of a batch (a request, a delivery chunk): the same results, but a
    string repeated across the batch is scanned once (`_Walk`)."""
    walk = policy_walk(policy, destination)
    if walk is None:
        mode = OFF if policy.mode_for(destination) == OFF else "inherit"
        return [PolicyResult(trace=dict(trace), mode=mode, kinds={}) for trace in traces]
    results: list[PolicyResult] = []
    for trace in traces:
        out = dict(trace)
        old = (trace.get("input"), trace.get("output"), trace.get("metadata"), trace.get("error"))
        for name, before, after in zip(FIELDS, old, policy_fields(walk, *old), strict=True):
            if after is not before:
                out[name] = after
        results.append(PolicyResult(trace=out, mode=walk.mode, kinds=walk.kinds, dropped=tuple(walk.dropped)))
    return results
