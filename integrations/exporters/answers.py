"""The webhook's ``config.response_validation``: when a 2xx answer still counts as a failure.

    {"status": [200, 202], "json_path": "errors", "body_must_contain": "\\"ok\\":true"}

* ``status``: the 2xx codes that count as accepted (another 2xx is a failure);
* ``json_path``: a dot-separated path in the answer's JSON that must be absent or empty (null,
  false, "", [] or {}); a body that is not JSON fails it too;
* ``body_must_contain``: text the body must contain.

Without ``response_validation``, a 2xx whose body is a JSON object with a non-empty ``errors`` is a
failure too (`DEFAULT_CHECKS`, applied only to JSON bodies): a receiver that says it failed is
believed. A failed check is retried like a 5xx, then dead-lettered, with the answer as the reason. When the
value at ``json_path`` is a list of objects each naming a trace of the batch (``id`` or
``trace_id``), only those traces are refused, each with its own entry as the reason; the others
are delivered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

SNIPPET = 300
DEFAULT_CHECKS = {"json_path": "errors"}


@dataclass(frozen=True)
class Verdict:
    """A 2xx answer checked: ``problem`` is None when it counts as accepted. ``items``: trace id →
    the destination's entry for it, when the errors name traces (only those are refused)."""

    problem: str | None = None
    items: Mapping[str, str] = field(default_factory=dict)


def _walk(body: Any, path: str) -> Any:
    node = body
    for part in path.split("."):
        if isinstance(node, Mapping):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text[:SNIPPET] + ("…" if len(text) > SNIPPET else "")


def _named_items(errors: Any, trace_ids: set[str]) -> dict[str, str]:
    """Errors that each name one trace of the batch (``id`` or ``trace_id``): trace id → the entry."""
    if not isinstance(errors, list) or not errors:
        return {}
    out: dict[str, str] = {}
    for entry in errors:
        named = entry.get("trace_id", entry.get("id")) if isinstance(entry, Mapping) else None
        if not isinstance(named, str) or named not in trace_ids:
            return {}  # one error that names no trace of ours: the whole answer fails
        out[named] = _short(entry)
    return out


def check_answer(response: httpx.Response, checks: Mapping[str, Any] | None, trace_ids: set[str]) -> Verdict:
    """A 2xx ``response`` against the checks (None: `DEFAULT_CHECKS`, on a JSON body only)."""
    if not checks:
        try:
            body = json.loads(response.content or b"null")
        except ValueError:
            return Verdict()
        if not isinstance(body, Mapping) or not body.get("errors"):
            return Verdict()
        checks = DEFAULT_CHECKS
    status = checks.get("status")
    if status and response.status_code not in status:
        return Verdict(f"answered HTTP {response.status_code}, not one of {', '.join(map(str, status))}")
    try:
        text = response.text
    except Exception:  # undecodable body
        text = ""
    needle = checks.get("body_must_contain")
    if needle and needle not in text:
        return Verdict(f"answered without {needle!r} in its body: {_short(text) or '(empty body)'}")
    path = checks.get("json_path")
    if path:
        try:
            body = json.loads(text)
        except ValueError:
            return Verdict(f"answered a body that is not JSON, so {path} cannot be checked: {_short(text)}")
        found = _walk(body, path)
        if found not in (None, False, "", [], {}):
            items = _named_items(found, trace_ids)
            return Verdict(f"answered HTTP {response.status_code} with {path}: {_short(found)}", items)
    return Verdict()
