"""Provider objects (pydantic models, SDK sentinels, bytes) → plain JSON values, on the worker thread."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 32


def jsonable(value: Any, depth: int = 0) -> Any:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if depth > MAX_DEPTH:
        return repr(value)[:200]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items() if not is_omitted(v)}
    if isinstance(value, list | tuple):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, bytes | bytearray):
        return {"bytes": len(value), "base64": base64.b64encode(bytes(value[:256])).decode()}
    dump = getattr(value, "model_dump", None)  # pydantic v2 (openai, anthropic, mistralai)
    if callable(dump):
        try:
            return jsonable(dump(mode="json", exclude_none=True), depth + 1)
        except Exception:
            pass
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        try:
            return jsonable(to_dict(), depth + 1)
        except Exception:
            pass
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {k: jsonable(v, depth + 1) for k, v in vars(value).items() if not k.startswith("_")}
    return repr(value)[:1000]


def is_omitted(value: Any) -> bool:
    """The SDKs' "not given" sentinels (openai's NotGiven/Omit, anthropic's, mistralai's UNSET)."""
    name = type(value).__name__
    return name in ("NotGiven", "Omit", "Unset", "UnsetType")


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def without_omitted(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if not is_omitted(v) and not k.startswith("extra_") and k != "timeout"}
