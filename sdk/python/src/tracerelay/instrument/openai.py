"""openai: chat completions, responses and embeddings, sync and async, streamed and not."""

from __future__ import annotations

import importlib
from typing import Any

from .. import _state
from .._jsonable import is_omitted
from .._records import Call
from ._common import first_time, get, jsonable, one_or_many, usage_fields
from ._wrap import async_method, patch, sync_method, unpatch

PROVIDER = "openai"


def _inject_usage(call: Call, kwargs: dict[str, Any]) -> None:
    """Ask for usage on a stream the caller did not ask about; the extra last chunk is kept from the app."""
    client = _state.client
    if call.stream and client is not None and client.config.inject_stream_usage:
        options = kwargs.get("stream_options")
        if options is None or is_omitted(options):
            kwargs["stream_options"] = {"include_usage": True}
            call.usage_injected = True


def _usage_only(chunk: Any) -> bool:
    return not chunk.choices and chunk.usage is not None


def build_chat(call: Call) -> dict[str, Any]:
    if call.chunks is not None:
        return _chat_stream(call.chunks)
    result = call.result
    choices = get(result, "choices")
    if choices is None:
        return {}
    return {
        "model": get(result, "model"),
        "output": one_or_many([jsonable(get(c, "message")) for c in choices]),
        **usage_fields(get(result, "usage")),
    }


def _chat_stream(chunks: list[tuple[float, Any]]) -> dict[str, Any]:
    model = None
    usage = None
    messages: dict[int, dict[str, Any]] = {}
    for _, chunk in chunks:
        model = get(chunk, "model") or model
        usage = get(chunk, "usage") or usage
        for choice in get(chunk, "choices") or ():
            message = messages.setdefault(get(choice, "index", 0), {"role": "assistant", "content": ""})
            delta = get(choice, "delta")
            if get(delta, "role"):
                message["role"] = get(delta, "role")
            if get(delta, "content"):
                message["content"] += get(delta, "content")
            for call in get(delta, "tool_calls") or ():
                calls = message.setdefault("tool_calls", {})
                entry = calls.setdefault(get(call, "index", 0), {"id": None, "type": "function", "function": {}})
                entry["id"] = get(call, "id") or entry["id"]
                function = get(call, "function")
                if get(function, "name"):
                    entry["function"]["name"] = get(function, "name")
                if get(function, "arguments"):
                    entry["function"]["arguments"] = entry["function"].get("arguments", "") + get(function, "arguments")
            if get(choice, "finish_reason"):
                message["finish_reason"] = get(choice, "finish_reason")
    outputs = []
    for _, message in sorted(messages.items()):
        if "tool_calls" in message:
            message["tool_calls"] = [v for _, v in sorted(message["tool_calls"].items())]
        outputs.append(message)
    return {
        "model": model,
        "output": one_or_many(outputs) if outputs else None,
        "_first": first_time(chunks, _has_delta),
        **usage_fields(usage),
    }


def _has_delta(chunk: Any) -> bool:
    for choice in get(chunk, "choices") or ():
        delta = get(choice, "delta")
        if get(delta, "content") or get(delta, "tool_calls") or get(delta, "refusal"):
            return True
    return False


def build_responses(call: Call) -> dict[str, Any]:
    if call.chunks is not None:
        final = None
        text = []
        for _, event in call.chunks:
            kind = get(event, "type", "")
            if kind in ("response.completed", "response.incomplete", "response.failed"):
                final = get(event, "response")
            elif kind == "response.output_text.delta":
                text.append(get(event, "delta") or "")
        first = first_time(call.chunks, lambda e: str(get(e, "type", "")).endswith(".delta"))
        if final is None:
            return {"output": "".join(text) or None, "_first": first}
        return {**_response_fields(final), "_first": first}
    return _response_fields(call.result)


def _response_fields(response: Any) -> dict[str, Any]:
    if get(response, "output") is None:
        return {}
    fields = {"model": get(response, "model"), "output": jsonable(get(response, "output"))}
    return {**fields, **usage_fields(get(response, "usage"))}


def build_embeddings(call: Call) -> dict[str, Any]:
    data = get(call.result, "data")
    if data is None:
        return {}
    first = get(data[0], "embedding") if data else None
    usage = get(call.result, "usage")
    return {
        "model": get(call.result, "model"),
        "output": {"embeddings": len(data), "dimensions": len(first) if isinstance(first, list) else None},
        "prompt_tokens": get(usage, "prompt_tokens") or 0,
        "completion_tokens": 0,
    }


TARGETS = [
    # module, class, endpoint, build, is_async: their `create` (streamed or not)
    ("openai.resources.chat.completions.completions", "Completions", "chat", build_chat, False),
    ("openai.resources.chat.completions.completions", "AsyncCompletions", "chat", build_chat, True),
    ("openai.resources.responses.responses", "Responses", "responses", build_responses, False),
    ("openai.resources.responses.responses", "AsyncResponses", "responses", build_responses, True),
    ("openai.resources.embeddings", "Embeddings", "embeddings", build_embeddings, False),
    ("openai.resources.embeddings", "AsyncEmbeddings", "embeddings", build_embeddings, True),
]
# The structured-output helpers post on their own (not through `create`): `parse` is wrapped too. The
# streaming helpers (`chat.completions.stream`, `responses.stream`) call `create(stream=True)`, so
# they are traced through it, once.
PARSE_TARGETS = [(m, c, e, b, a) for m, c, e, b, a in TARGETS if e != "embeddings"]


def install() -> list[str]:
    done = []
    for module_name, class_name, endpoint, build, is_async in TARGETS:
        try:
            owner = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        chat = endpoint == "chat"
        factory = async_method if is_async else sync_method
        make = factory(
            PROVIDER,
            endpoint,
            build,
            prepare=_inject_usage if chat else None,
            skip=_usage_only if chat else None,
            streams="stream" if endpoint != "embeddings" else False,
        )
        if patch(owner, "create", make):
            done.append(f"{class_name}.create")
        if (module_name, class_name, endpoint, build, is_async) in PARSE_TARGETS:
            if patch(owner, "parse", factory(PROVIDER, endpoint, build, streams=False)):
                done.append(f"{class_name}.parse")
    return done


def uninstall() -> None:
    for module_name, class_name, *_ in TARGETS:
        try:
            owner = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        unpatch(owner, "create")
        unpatch(owner, "parse")
