"""Reading provider objects on the worker thread: attribute or key, whichever the object has."""

from __future__ import annotations

from typing import Any

from .._jsonable import jsonable


def get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def usage_fields(usage: Any) -> dict[str, Any]:
    """prompt/completion tokens from an OpenAI, Anthropic or Mistral usage object (as the proxy reads them)."""
    if usage is None:
        return {}
    prompt = get(usage, "prompt_tokens", get(usage, "input_tokens"))
    completion = get(usage, "completion_tokens", get(usage, "output_tokens"))
    if prompt is None and completion is None:
        return {}
    try:
        # Anthropic counts cache reads and writes apart from input_tokens; OpenAI includes them.
        cache_read = int(get(usage, "cache_read_input_tokens") or 0)
        cache_write = int(get(usage, "cache_creation_input_tokens") or 0)
        fields = {
            "prompt_tokens": int(prompt or 0) + cache_read + cache_write,
            "completion_tokens": int(completion or 0),
        }
        # The parts the server prices at their own rates (cached, cache-write, reasoning, audio).
        prompt_details = get(usage, "prompt_tokens_details", get(usage, "input_tokens_details"))
        completion_details = get(usage, "completion_tokens_details", get(usage, "output_tokens_details"))
        parts = {
            "cached_tokens": cache_read + int(get(prompt_details, "cached_tokens") or 0),
            "cache_write_tokens": cache_write,
            "input_audio_tokens": int(get(prompt_details, "audio_tokens") or 0),
            "reasoning_tokens": int(get(completion_details, "reasoning_tokens") or 0),
            "output_audio_tokens": int(get(completion_details, "audio_tokens") or 0),
        }
    except (TypeError, ValueError):
        return {}
    fields.update({name: value for name, value in parts.items() if value > 0})
    return fields


def first_time(chunks: list[tuple[float, Any]], has_content: Any) -> float | None:
    """When the first item carrying content came (time to first token), else the first item at all."""
    for when, item in chunks:
        try:
            if has_content(item):
                return when
        except Exception:
            break
    return chunks[0][0] if chunks else None


def one_or_many(values: list[Any]) -> Any:
    return values[0] if len(values) == 1 else values


__all__ = ["get", "usage_fields", "first_time", "one_or_many", "jsonable"]
