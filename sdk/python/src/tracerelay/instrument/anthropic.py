"""anthropic: messages, sync and async, streamed (`stream=True`) and not."""

from __future__ import annotations

import importlib
from typing import Any

from .._records import Call
from ._common import first_time, get, jsonable, usage_fields
from ._wrap import async_method, patch, sync_method, unpatch

PROVIDER = "anthropic"
MODULE = "anthropic.resources.messages.messages"


def build_messages(call: Call) -> dict[str, Any]:
    if call.chunks is not None:
        return _stream(call.chunks)
    result = call.result
    if get(result, "content") is None:
        return {}
    output = {"role": get(result, "role", "assistant"), "content": jsonable(get(result, "content"))}
    if get(result, "stop_reason"):
        output["stop_reason"] = get(result, "stop_reason")
    return {"model": get(result, "model"), "output": output, **usage_fields(get(result, "usage"))}


def _stream(chunks: list[tuple[float, Any]]) -> dict[str, Any]:
    model = None
    usage: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    stop_reason = None
    for _, event in chunks:
        kind = get(event, "type")
        if kind == "message_start":
            message = get(event, "message")
            model = get(message, "model")
            usage.update({k: v for k, v in (jsonable(get(message, "usage")) or {}).items() if v is not None})
        elif kind == "content_block_start":
            blocks[get(event, "index", 0)] = jsonable(get(event, "content_block")) or {}
        elif kind == "content_block_delta":
            block = blocks.setdefault(get(event, "index", 0), {"type": "text", "text": ""})
            delta = get(event, "delta")
            for field, key in (("text", "text"), ("partial_json", "input_json"), ("thinking", "thinking")):
                if get(delta, field):
                    block[key] = block.get(key, "") + get(delta, field)
        elif kind == "message_delta":
            stop_reason = get(get(event, "delta"), "stop_reason") or stop_reason
            usage.update({k: v for k, v in (jsonable(get(event, "usage")) or {}).items() if v is not None})
    content = []
    for _, block in sorted(blocks.items()):
        if "input_json" in block:  # a tool call's arguments arrive as JSON text in pieces
            block["input"] = block.pop("input_json")
        content.append(block)
    output: dict[str, Any] = {"role": "assistant", "content": content}
    if stop_reason:
        output["stop_reason"] = stop_reason
    return {
        "model": model,
        "output": output,
        "_first": first_time(chunks, lambda e: get(e, "type") == "content_block_delta"),
        **usage_fields(usage or None),
    }


def install() -> list[str]:
    try:
        module = importlib.import_module(MODULE)
    except ImportError:
        return []
    done = []
    for class_name, factory in (("Messages", sync_method), ("AsyncMessages", async_method)):
        owner = getattr(module, class_name, None)
        if owner is not None and patch(owner, "create", factory(PROVIDER, "messages", build_messages)):
            done.append(f"{class_name}.create")
    return done


def uninstall() -> None:
    try:
        module = importlib.import_module(MODULE)
    except ImportError:
        return
    for class_name in ("Messages", "AsyncMessages"):
        owner = getattr(module, class_name, None)
        if owner is not None:
            unpatch(owner, "create")
