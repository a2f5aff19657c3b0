"""google-genai (`from google import genai`): generate_content (streamed or not) and embed_content,
on `client.models` and `client.aio.models`.

One trace per public call: with automatic function calling a call may make several requests, and
they are one trace, as the application made one call.
"""

from __future__ import annotations

from typing import Any

from .._records import Call
from ._common import first_time, get, jsonable
from ._wrap import Target, install_targets, uninstall_targets

PROVIDER = "google"


def _usage(usage: Any) -> dict[str, Any]:
    """Gemini counts thinking apart from the reply (`thoughts_token_count`): both are billed as output."""
    if usage is None:
        return {}
    prompt = get(usage, "prompt_token_count")
    reply = get(usage, "candidates_token_count")
    thoughts = get(usage, "thoughts_token_count")
    if prompt is None and reply is None:
        return {}
    tool_prompt = get(usage, "tool_use_prompt_token_count") or 0
    return {
        "prompt_tokens": int(prompt or 0) + int(tool_prompt),
        "completion_tokens": int(reply or 0) + int(thoughts or 0),
    }


def _has_text(response: Any) -> bool:
    for candidate in get(response, "candidates") or ():
        for part in get(get(candidate, "content"), "parts") or ():
            if get(part, "text") or get(part, "function_call"):
                return True
    return False


def build_generate(call: Call) -> dict[str, Any]:
    responses = [r for _, r in call.chunks] if call.chunks is not None else [call.result]
    model = None
    usage = None
    outputs: dict[int, dict[str, Any]] = {}
    for response in responses:
        model = get(response, "model_version") or model
        usage = get(response, "usage_metadata") or usage
        for position, candidate in enumerate(get(response, "candidates") or ()):
            index = get(candidate, "index")
            out = outputs.setdefault(index if isinstance(index, int) else position, {"role": "model", "content": ""})
            content = get(candidate, "content")
            out["role"] = get(content, "role") or out["role"]
            for part in get(content, "parts") or ():
                if get(part, "text") and not get(part, "thought"):
                    out["content"] += get(part, "text")
                elif get(part, "function_call") is not None:
                    out.setdefault("function_calls", []).append(jsonable(get(part, "function_call")))
            finish = get(candidate, "finish_reason")
            if finish is not None:
                out["finish_reason"] = str(get(finish, "value", finish))
    ordered = [v for _, v in sorted(outputs.items())]
    fields: dict[str, Any] = {"output": (ordered[0] if len(ordered) == 1 else ordered) or None, **_usage(usage)}
    if model:
        fields["model"] = model
    if call.chunks is not None:
        fields["_first"] = first_time(call.chunks, _has_text)
    return fields


def build_embed(call: Call) -> dict[str, Any]:
    embeddings = get(call.result, "embeddings")
    if embeddings is None:
        return {}
    first = get(embeddings[0], "values") if embeddings else None
    # The Gemini API reports no token counts for embeddings: the server estimates them (and says so).
    return {"output": {"embeddings": len(embeddings), "dimensions": len(first) if isinstance(first, list) else None}}


# (module, class, method, endpoint, build, async, streams)
TARGETS: list[Target] = [
    ("google.genai.models", "Models", "generate_content", "generate_content", build_generate, False, False),
    ("google.genai.models", "Models", "generate_content_stream", "generate_content", build_generate, False, True),
    ("google.genai.models", "Models", "embed_content", "embeddings", build_embed, False, False),
    ("google.genai.models", "AsyncModels", "generate_content", "generate_content", build_generate, True, False),
    ("google.genai.models", "AsyncModels", "generate_content_stream", "generate_content", build_generate, True, True),
    ("google.genai.models", "AsyncModels", "embed_content", "embeddings", build_embed, True, False),
]


def install() -> list[str]:
    # The streams are plain (async) generators: the wrapper hands back its own around them.
    return install_targets(PROVIDER, TARGETS, stream_attr=None)


def uninstall() -> None:
    uninstall_targets(TARGETS)
