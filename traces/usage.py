"""The usage of a call in full (docs/pricing.md): the token counts a trace carries beyond prompt and
completion, what each is a part of, and how they read into genai-prices' ``Usage``.

``prompt_tokens`` is the whole prompt, cached and uncached, text, audio and image (OpenAI's
convention; Anthropic's ``input_tokens`` leave cache reads and writes out, so they are added back where
Anthropic usage is read). ``completion_tokens`` is the whole completion, reasoning included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

# Parts of the prompt, and of the completion: each at most its whole, and cache reads plus writes too.
PROMPT_DETAILS = ("cached_tokens", "cache_write_tokens", "input_audio_tokens", "input_image_tokens")
COMPLETION_DETAILS = ("reasoning_tokens", "output_audio_tokens", "output_image_tokens")
DETAIL_FIELDS = PROMPT_DETAILS + COMPLETION_DETAILS
# Our field → genai-prices' usage key.
GENAI_KEYS = {
    "cached_tokens": "cache_read_tokens",
    "cache_write_tokens": "cache_write_tokens",
    "input_audio_tokens": "input_audio_tokens",
    "input_image_tokens": "input_image_tokens",
    "reasoning_tokens": "output_reasoning_tokens",
    "output_audio_tokens": "output_audio_tokens",
    "output_image_tokens": "output_image_tokens",
}


@dataclass(frozen=True, slots=True)
class TokenDetails:
    """The detail counts of one call; all zero for plain input/output usage (the pricing fast path)."""

    cached_tokens: int = 0
    cache_write_tokens: int = 0
    input_audio_tokens: int = 0
    input_image_tokens: int = 0
    reasoning_tokens: int = 0
    output_audio_tokens: int = 0
    output_image_tokens: int = 0

    def __bool__(self) -> bool:
        return any(getattr(self, name) for name in DETAIL_FIELDS)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def of(cls, source: Any) -> TokenDetails:
        """From a row or record (attributes) or a mapping; missing counts are 0."""
        if isinstance(source, Mapping):
            return cls(**{name: int(source.get(name) or 0) for name in DETAIL_FIELDS})
        return cls(**{name: int(getattr(source, name, 0) or 0) for name in DETAIL_FIELDS})

    def genai_usage(self, prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
        """genai-prices' ``Usage`` keyword arguments. Cache reads of audio or image prompts are not
        reported apart by any provider we read; the library needs them named when both overlap, so
        they are given as 0 (the cached tokens count as text)."""
        usage = {"input_tokens": prompt_tokens, "output_tokens": completion_tokens}
        for name, key in GENAI_KEYS.items():
            value = getattr(self, name)
            if value:
                usage[key] = value
        if self.cached_tokens and self.input_audio_tokens:
            usage["cache_audio_read_tokens"] = 0
        if self.cached_tokens and self.input_image_tokens:
            usage["cache_image_read_tokens"] = 0
        return usage


NO_DETAILS = TokenDetails()


def details_error(details: Mapping[str, int], prompt_tokens: int, completion_tokens: int) -> tuple[str, str] | None:
    """(field, message) when the parts do not fit their whole, else None."""
    for name in PROMPT_DETAILS:
        if details.get(name, 0) > prompt_tokens:
            return name, f"{name} ({details[name]}) is more than prompt_tokens ({prompt_tokens})."
    cache = details.get("cached_tokens", 0) + details.get("cache_write_tokens", 0)
    if cache > prompt_tokens:
        return (
            "cache_write_tokens",
            f"cached_tokens + cache_write_tokens ({cache}) is more than prompt_tokens ({prompt_tokens}).",
        )
    for name in COMPLETION_DETAILS:
        if details.get(name, 0) > completion_tokens:
            return name, f"{name} ({details[name]}) is more than completion_tokens ({completion_tokens})."
    return None
