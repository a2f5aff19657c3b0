"""A call's prompt and reply as text for the conversation view, from what clients send: OpenAI-style
message lists and responses, Anthropic content blocks, plain strings; anything else as JSON."""

from __future__ import annotations

import json
from typing import Any


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": "…"}, …]
        texts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in value]
        return "\n".join(t for t in texts if t)
    return json.dumps(value, ensure_ascii=False, indent=2)


def prompt_text(value: Any) -> str:
    """The last user message (the turn's prompt), else the whole input."""
    if value is None:
        return ""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, list):
        users = [m for m in value if isinstance(m, dict) and m.get("role") == "user"]
        if users:
            return _content(users[-1].get("content"))
    return _content(value)


def reply_text(value: Any) -> str:
    """The assistant's text: a message, the first choice, content blocks or a string."""
    if value is None:
        return ""
    if isinstance(value, dict):
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            value = choices[0].get("message") or choices[0].get("text") or choices[0]
        if isinstance(value, dict) and "content" in value:
            return _content(value["content"])
    if isinstance(value, list) and value and isinstance(value[-1], dict) and "content" in value[-1]:
        return _content(value[-1]["content"])
    return _content(value)
