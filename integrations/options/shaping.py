"""The trace an integration's settings make of a trace, before its exporter encodes it: the one step
every exporter goes through (the delivery engine calls it after the PII policy).

1. ``environments``: a trace of another environment is not sent there (`Shaping.refusal`);
2. ``environment_map``: the environment renamed to the destination's name for it;
3. ``send_user_id`` / ``send_session_id`` false: those ids emptied;
4. ``transform``: its operations, in order (`transform.Transform`).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import orjson
from django.conf import settings

from traces.records import TraceRecord

from .transform import ROOTS, Transform, parse_transform


@lru_cache(maxsize=1024)
def transform_hash_key(team_id: int) -> bytes:
    """The key of the ``hash`` operation: one per team (the same value hashes alike at every
    destination of the team), derived from the server's SECRET_KEY so a database dump alone cannot
    recompute it."""
    return hmac.new(settings.SECRET_KEY.encode(), f"tracerelay-transform:{team_id}".encode(), hashlib.sha256).digest()


@dataclass(frozen=True)
class Shaping:
    environments: frozenset[str] = frozenset()
    environment_map: Mapping[str, str] = field(default_factory=dict)
    send_user_id: bool = True
    send_session_id: bool = True
    transform: Transform = Transform(())

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> Shaping:
        """From an integration's cleaned config (a `Target`'s)."""
        return cls(
            environments=frozenset(config.get("environments") or ()),
            environment_map=dict(config.get("environment_map") or {}),
            send_user_id=config.get("send_user_id") is not False,
            send_session_id=config.get("send_session_id") is not False,
            transform=Transform(parse_transform(config.get("transform"))),
        )

    def refusal(self, record: TraceRecord) -> str | None:
        """Why this trace is not for this integration (None: it is)."""
        if not self.environments or record.environment in self.environments:
            return None
        shown = repr(record.environment) if record.environment else "no environment"
        allowed = ", ".join(sorted(self.environments))
        return f"environment: {shown} is not among this integration's environments ({allowed})"

    def shape(self, record: TraceRecord) -> TraceRecord:
        """The record as this integration sends it; the record itself when nothing changes."""
        changes: dict[str, Any] = {}
        mapped = self.environment_map.get(record.environment)
        if mapped is not None:
            changes["environment"] = mapped
        if not self.send_user_id and record.user_id:
            changes["user_id"] = ""
        if not self.send_session_id and record.session_id:
            changes["session_id"] = ""
        if self.transform:
            # Only the fields an operation changes inside are copied (the record's own values are
            # shared with every destination); a whole field replaced needs no copy.
            nested = self.transform.nested_roots()
            view = {
                root: _copied(value) if root in nested else value
                for root in self.transform.roots() & set(ROOTS)
                for value in [changes.get(root, getattr(record, root))]
            }
            if "tags" in view:
                view["tags"] = list(view["tags"])
            self.transform.apply(view, hash_key=transform_hash_key(record.team_id))
            changes.update(_fields_back(view))
        return dataclasses.replace(record, **changes) if changes else record


def _copied(value: Any) -> Any:
    """A deep copy of a JSON value (orjson's round trip: several times cheaper than deepcopy)."""
    if not isinstance(value, (dict, list, tuple)):
        return value
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return copy.deepcopy(value)


def _fields_back(view: dict[str, Any]) -> dict[str, Any]:
    """The transformed dict → record fields of the right types (text fields stay text)."""
    out: dict[str, Any] = {}
    for name, value in view.items():
        if name == "tags":
            out[name] = tuple(str(t) for t in (value or ()) if t is not None)
        elif name == "metadata":
            out[name] = value if isinstance(value, dict) else {}
        elif name in ("input", "output"):
            out[name] = value
        else:
            out[name] = value if isinstance(value, str) else ("" if value is None else str(value))
    return out
