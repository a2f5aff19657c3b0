"""mistralai (v2+, `mistralai.client`): chat complete/stream and embeddings, sync and async."""

from __future__ import annotations

from typing import Any

from .._records import Call
from ._common import get, usage_fields
from ._wrap import Target, install_targets, uninstall_targets
from .openai import _chat_stream, build_chat

PROVIDER = "mistral"


def build_mistral_chat(call: Call) -> dict[str, Any]:
    if call.chunks is not None:  # CompletionEvent(data=CompletionChunk): the OpenAI chunk shape inside
        return _chat_stream([(when, get(event, "data")) for when, event in call.chunks])
    return build_chat(call)


def build_mistral_embeddings(call: Call) -> dict[str, Any]:
    data = get(call.result, "data")
    if data is None:
        return {}
    first = get(data[0], "embedding") if data else None
    return {
        "model": get(call.result, "model"),
        "output": {"embeddings": len(data), "dimensions": len(first) if isinstance(first, list) else None},
        **(usage_fields(get(call.result, "usage")) or {"prompt_tokens": 0}),
        "completion_tokens": 0,
    }


# (module, class, method, endpoint, build, async, streams)
TARGETS: list[Target] = [
    ("mistralai.client.chat", "Chat", "complete", "chat", build_mistral_chat, False, False),
    ("mistralai.client.chat", "Chat", "complete_async", "chat", build_mistral_chat, True, False),
    ("mistralai.client.chat", "Chat", "stream", "chat", build_mistral_chat, False, True),
    ("mistralai.client.chat", "Chat", "stream_async", "chat", build_mistral_chat, True, True),
    ("mistralai.client.embeddings", "Embeddings", "create", "embeddings", build_mistral_embeddings, False, False),
    ("mistralai.client.embeddings", "Embeddings", "create_async", "embeddings", build_mistral_embeddings, True, False),
]


def install() -> list[str]:
    return install_targets(PROVIDER, TARGETS, stream_attr="generator")


def uninstall() -> None:
    uninstall_targets(TARGETS)
