"""``config.transform``: an ordered list of operations on a trace as an exporter is about to send it
(docs/destinations/index.md, "Payload transformation").

    {"op": "drop", "path": "input"}
    {"op": "truncate", "path": "output", "max_chars": 2000}
    {"op": "rename", "path": "metadata.customer", "to": "metadata.account"}
    {"op": "set", "path": "metadata.source", "value": "tracerelay"}
    {"op": "hash", "path": "user_id"}

A path is dot-separated: its first part is a field of the trace (`ROOTS`), the rest walk into JSON
objects by key and lists by index; ``*`` stands for every key of an object (every item of a list).
A path that names nothing in a trace leaves that trace as it was. `parse_transform` checks a list
on save (the error names the operation); `Transform.apply` runs on a plain dict of the trace.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from integrations.exporters.calls import to_json

OPS = ("drop", "truncate", "rename", "set", "hash")
# The trace fields a path may start at: JSON values, and text fields.
JSON_ROOTS = ("input", "output", "metadata")
TEXT_ROOTS = (
    "user_id",
    "session_id",
    "environment",
    "service_name",
    "model",
    "provider",
    "error_message",
    "error_type",
)
ROOTS = (*JSON_ROOTS, *TEXT_ROOTS, "tags")
MAX_OPS = 50
MAX_PATH = 300
MAX_DEPTH = 16
MAX_SET_VALUE = 10_000  # characters of the value as JSON
SEGMENT = re.compile(r"^[^.\s]{1,100}$")
WILDCARD = "*"


class TransformError(ValueError):
    """A transform that cannot be saved; the message names the operation (``operation 2 (rename): …``)."""


@dataclass(frozen=True, slots=True)
class Operation:
    op: str
    path: tuple[str, ...]
    to: tuple[str, ...] = ()
    max_chars: int = 0
    value: Any = None


def _path(text: Any, what: str, *, wildcards: bool = True) -> tuple[str, ...]:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{what} must be a dot-separated path such as metadata.customer")
    text = text.strip()
    if len(text) > MAX_PATH:
        raise ValueError(f"{what} must be at most {MAX_PATH} characters")
    parts = tuple(text.split("."))
    if len(parts) > MAX_DEPTH or not all(SEGMENT.match(p) for p in parts):
        raise ValueError(f"{what} {text!r} is not a path: dot-separated keys, no spaces or empty parts")
    if parts[0] not in ROOTS:
        raise ValueError(f"{what} {text!r} must start with one of {', '.join(ROOTS)}")
    if parts[0] not in JSON_ROOTS and len(parts) > 1 and parts[0] != "tags":
        raise ValueError(f"{what} {text!r}: {parts[0]} is text, it has no keys")
    if not wildcards and WILDCARD in parts:
        raise ValueError(f"{what} must not contain *")
    return parts


def _operation(raw: Any) -> Operation:
    if not isinstance(raw, Mapping):
        raise ValueError('must be an object such as {"op": "drop", "path": "input"}')
    op = raw.get("op")
    if op not in OPS:
        raise ValueError(f"op must be one of {', '.join(OPS)}")
    allowed = {"op", "path"} | {"truncate": {"max_chars"}, "rename": {"to"}, "set": {"value"}}.get(op, set())
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise ValueError(f"unknown key {', '.join(unknown)} for {op}; it takes {', '.join(sorted(allowed))}")
    path = _path(raw.get("path"), "path", wildcards=op != "rename")
    if op == "truncate":
        limit = raw.get("max_chars")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1_000_000:
            raise ValueError("max_chars must be a whole number from 1 to 1000000")
        return Operation(op, path, max_chars=limit)
    if op == "rename":
        to = _path(raw.get("to"), "to", wildcards=False)
        if len(path) < 2 or len(to) < 2 or path[0] not in JSON_ROOTS or to[0] not in JSON_ROOTS:
            raise ValueError(f"rename moves a key inside {', '.join(JSON_ROOTS)}: path and to need a key there")
        if to[: len(path)] == path:
            raise ValueError("to must not be inside path")
        return Operation(op, path, to=to)
    if op == "set":
        if "value" not in raw:
            raise ValueError("set needs a value")
        value = raw["value"]
        if path[0] in TEXT_ROOTS and not isinstance(value, str):
            raise ValueError(f"{path[0]} is text: value must be a string")
        if path[0] == "tags" and (len(path) > 1 or not isinstance(value, list)):
            raise ValueError("set on tags takes the whole list: path tags, value a list of strings")
        if path[0] == "tags" and not all(isinstance(t, str) and t.strip() for t in value):
            raise ValueError("tags must be non-empty strings")
        if WILDCARD in path[:-1] or path[-1] == WILDCARD:
            raise ValueError("set must name one place: no * in its path")
        if len(to_json(value)) > MAX_SET_VALUE:
            raise ValueError(f"value must be at most {MAX_SET_VALUE} characters as JSON")
        return Operation(op, path, value=value)
    if op == "drop" and path == ("tags",):
        return Operation(op, path)
    return Operation(op, path)


def parse_transform(raw: Any) -> tuple[Operation, ...]:
    """A stored or submitted list → operations; `TransformError` naming the first bad one."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise TransformError("must be a list of operations")
    if len(raw) > MAX_OPS:
        raise TransformError(f"at most {MAX_OPS} operations")
    out = []
    for number, item in enumerate(raw, 1):
        name = item.get("op") if isinstance(item, Mapping) and isinstance(item.get("op"), str) else "?"
        try:
            out.append(_operation(item))
        except ValueError as exc:
            raise TransformError(f"operation {number} ({name}): {exc}") from None
    return tuple(out)


def operation_json(operation: Operation) -> dict[str, Any]:
    """An operation as it is stored and shown (the API's shape)."""
    out: dict[str, Any] = {"op": operation.op, "path": ".".join(operation.path)}
    if operation.op == "truncate":
        out["max_chars"] = operation.max_chars
    elif operation.op == "rename":
        out["to"] = ".".join(operation.to)
    elif operation.op == "set":
        out["value"] = operation.value
    return out


# --- applying ---------------------------------------------------------------------------------------


def _places(container: Any, parts: tuple[str, ...]) -> Iterator[tuple[Any, Any]]:
    """(parent, key) of every place ``parts`` names under ``container`` that exists."""
    head, rest = parts[0], parts[1:]
    if isinstance(container, dict):
        keys: list[Any] = list(container) if head == WILDCARD else ([head] if head in container else [])
    elif isinstance(container, list):
        if head == WILDCARD:
            keys = list(range(len(container)))
        else:
            keys = [int(head)] if head.isdigit() and int(head) < len(container) else []
    else:
        return
    for key in keys:
        if rest:
            yield from _places(container[key], rest)
        else:
            yield container, key


def _truncated(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = to_json(value)  # an object or list becomes its JSON text, cut
    return value if len(text) <= limit else text[:limit]


def _hashed(key: bytes, value: Any) -> Any:
    if value is None or value == "":
        return value
    text = value if isinstance(value, str) else to_json(value)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class Transform:
    """Parsed operations, applied in order to a trace as a dict of its fields (`ROOTS`)."""

    operations: tuple[Operation, ...]

    def __bool__(self) -> bool:
        return bool(self.operations)

    def nested_roots(self) -> set[str]:
        """The fields an operation changes inside (not replaced whole): they must be copied first."""
        out = {op.path[0] for op in self.operations if len(op.path) > 1 or op.op == "rename"}
        return out | {op.to[0] for op in self.operations if op.to}

    def roots(self) -> set[str]:
        return {op.path[0] for op in self.operations} | {op.to[0] for op in self.operations if op.to}

    def apply(self, trace: dict[str, Any], *, hash_key: bytes) -> dict[str, Any]:
        """``trace`` changed in place (the caller gives a copy of what the operations touch)."""
        for operation in self.operations:
            _APPLY[operation.op](trace, operation, hash_key)
        return trace


def _value_change(change: Callable[[Any, Operation, bytes], Any]) -> Callable[[dict[str, Any], Operation, bytes], None]:
    def run(trace: dict[str, Any], operation: Operation, key: bytes) -> None:
        for parent, name in list(_places(trace, operation.path)):
            parent[name] = change(parent[name], operation, key)

    return run


EMPTY: dict[str, Any] = {"input": None, "output": None, "metadata": {}, "tags": []}


def _drop(trace: dict[str, Any], operation: Operation, key: bytes) -> None:
    if len(operation.path) == 1:  # a whole field: empty, the way a trace without it is
        root = operation.path[0]
        trace[root] = copy.copy(EMPTY.get(root, ""))
        return
    places = list(_places(trace, operation.path))
    # List items from the last one: deleting one shifts the indexes after it.
    for parent, name in sorted(places, key=lambda place: -place[1] if isinstance(place[1], int) else 0):
        del parent[name]


def _rename(trace: dict[str, Any], operation: Operation, key: bytes) -> None:
    found = list(_places(trace, operation.path))
    if not found:
        return
    parent, name = found[0]
    value = parent.pop(name)
    _put(trace, operation.to, value)


def _put(trace: dict[str, Any], parts: tuple[str, ...], value: Any) -> None:
    """Set ``value`` at ``parts``, making the objects on the way (a list or text in the way: skipped)."""
    if len(parts) == 1:
        trace[parts[0]] = value
        return
    node = trace.get(parts[0])
    if node is None and parts[0] in JSON_ROOTS:
        node = trace[parts[0]] = {}
    for part in parts[1:-1]:
        if isinstance(node, dict):
            node = node.setdefault(part, {})
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return
    last = parts[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
        node[int(last)] = value


def _set(trace: dict[str, Any], operation: Operation, key: bytes) -> None:
    value = operation.value
    _put(trace, operation.path, tuple(value) if operation.path == ("tags",) else copy.deepcopy(value))


_APPLY: dict[str, Callable[[dict[str, Any], Operation, bytes], None]] = {
    "drop": _drop,
    "truncate": _value_change(lambda value, op, key: _truncated(value, op.max_chars)),
    "rename": _rename,
    "set": _set,
    "hash": _value_change(lambda value, op, key: _hashed(key, value)),
}
