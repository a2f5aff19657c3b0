"""Prompts and replies from a span, wherever its instrumentation put them.

In order of preference (the first that has something wins, for input and output separately):

1. `gen_ai.input.messages` / `gen_ai.output.messages` (GenAI semconv ≥ 1.37: JSON messages with
   `parts`), as span attributes or on a `gen_ai.client.inference.operation.details` event;
2. OpenInference `llm.input_messages.N.message.role|content` / `llm.output_messages.N.…`;
3. the older flattened `gen_ai.prompt.N.role|content` / `gen_ai.completion.N.…` (OpenLLMetry);
4. span events: `gen_ai.system|user|assistant|tool.message` and `gen_ai.choice` (GenAI semconv
   ≤ 1.28), `gen_ai.content.prompt` / `gen_ai.content.completion` (semconv 1.26 and OpenLLMetry);
5. OpenInference `input.value` / `output.value`, Traceloop `traceloop.entity.input|output`;
6. plain `gen_ai.prompt` / `gen_ai.completion` strings;
7. a GenAI tool span's `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result`, a retrieval span's
   `gen_ai.retrieval.query.text` / `gen_ai.retrieval.documents`.

Messages come out as the REST API's `{"role", "content"}`; a reply of one message is that message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from .spans import SpanEvent

CONTENT_PREFIXES = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.prompt",
    "gen_ai.completion",
    "llm.input_messages",
    "llm.output_messages",
    "llm.prompts",
    "input.value",
    "output.value",
    "input.mime_type",
    "output.mime_type",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.retrieval.query.text",
    "gen_ai.retrieval.documents",
)
_INDEXED = re.compile(r"(\d+)\.(.+)")
_ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def is_content_key(key: str) -> bool:
    """Attributes that become `input`/`output` and stay out of `metadata`."""
    return key.startswith(CONTENT_PREFIXES)


def prompt_and_reply(attrs: Mapping[str, Any], events: list[SpanEvent]) -> tuple[Any, Any]:
    details = next((e.attributes for e in events if e.name == "gen_ai.client.inference.operation.details"), {})
    prompt = (
        _parts_messages(attrs.get("gen_ai.input.messages"))
        or _parts_messages(details.get("gen_ai.input.messages"))
        or _indexed_messages(attrs, "llm.input_messages.")
        or _indexed_messages(attrs, "gen_ai.prompt.")
        or _event_prompt(events)
        or _value(attrs, "input.value", "input.mime_type")
        or _loose(attrs.get("traceloop.entity.input"))
        or _loose(attrs.get("gen_ai.prompt"))
        or _loose(attrs.get("gen_ai.tool.call.arguments"))
        or attrs.get("gen_ai.retrieval.query.text")
    )
    reply = (
        _parts_messages(attrs.get("gen_ai.output.messages"))
        or _parts_messages(details.get("gen_ai.output.messages"))
        or _indexed_messages(attrs, "llm.output_messages.")
        or _indexed_messages(attrs, "gen_ai.completion.")
        or _event_reply(events)
        or _value(attrs, "output.value", "output.mime_type")
        or _loose(attrs.get("traceloop.entity.output"))
        or _loose(attrs.get("gen_ai.completion"))
        or _loose(attrs.get("gen_ai.tool.call.result"))
        or _loose(attrs.get("gen_ai.retrieval.documents"))
    )
    instructions = _parts_messages(attrs.get("gen_ai.system_instructions"), role="system")
    if instructions and isinstance(prompt, list):
        prompt = [*instructions, *prompt]
    if isinstance(reply, list) and len(reply) == 1:
        reply = reply[0]
    return prompt or None, reply or None


def _loose(value: Any) -> Any:
    """A JSON string as what it encodes, any other string as itself."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _parts_messages(value: Any, role: str | None = None) -> list[dict[str, Any]] | None:
    """GenAI semconv messages (`{"role", "parts": [{"type": "text", "content"}…]}`) → `{"role", "content"}`;
    `gen_ai.system_instructions` is a bare list of parts."""
    value = _loose(value)
    if not isinstance(value, list) or not value:
        return None
    if role is not None and all(isinstance(p, dict) and "type" in p for p in value):
        value = [{"role": role, "parts": value}]
    out: list[dict[str, Any]] = []
    for message in value:
        if not isinstance(message, dict):
            out.append({"role": "user", "content": message})
            continue
        parts = message.get("parts")
        converted: dict[str, Any] = {"role": message.get("role") or "user"}
        if isinstance(parts, list):
            if len(parts) == 1 and isinstance(parts[0], dict) and parts[0].get("type") == "text":
                converted["content"] = parts[0].get("content")  # the usual case, kept cheap
            else:
                texts = [p.get("content") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
                strings = [t for t in texts if isinstance(t, str)]
                converted["content"] = "".join(strings) if len(strings) == len(parts) else parts
        else:
            converted["content"] = message.get("content")
        if message.get("finish_reason"):
            converted["finish_reason"] = message["finish_reason"]
        out.append(converted)
    return out


def _indexed_messages(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    """`<prefix>N.<field>` attributes (OpenInference nests them under `message.`) → messages by N."""
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        match = _INDEXED.fullmatch(key, len(prefix))
        if match is None:
            continue
        field = match.group(2).removeprefix("message.")
        by_index.setdefault(int(match.group(1)), {})[field] = value
    if not by_index:
        return None
    messages = []
    for _, fields in sorted(by_index.items()):
        message: dict[str, Any] = {"role": fields.pop("role", None) or "user", "content": fields.pop("content", None)}
        if message["content"] is None:
            # OpenInference multi-part content: contents.M.message_content.text
            texts = [v for k, v in sorted(fields.items()) if k.endswith("message_content.text")]
            if texts:
                message["content"] = "".join(str(t) for t in texts)
        message.update({k: v for k, v in fields.items() if "message_content." not in k})
        messages.append(message)
    return messages


def _event_prompt(events: list[SpanEvent]) -> Any:
    messages: list[dict[str, Any]] = []
    for event in events:
        if event.name == "gen_ai.content.prompt":
            found = _loose(event.attributes.get("gen_ai.prompt"))
            if found:
                return found
        role = _ROLE_EVENTS.get(event.name)
        if role is not None:
            attrs = event.attributes
            messages.append({"role": attrs.get("role") or role, "content": _loose(attrs.get("content"))})
    return messages or None


def _event_reply(events: list[SpanEvent]) -> Any:
    choices: list[Any] = []
    for event in events:
        if event.name == "gen_ai.content.completion":
            found = _loose(event.attributes.get("gen_ai.completion"))
            if found:
                return found
        elif event.name == "gen_ai.choice":
            attrs = event.attributes
            message = _loose(attrs.get("message"))
            if isinstance(message, dict):
                choice = {"role": message.get("role") or "assistant", "content": message.get("content")}
            else:
                choice = {"role": "assistant", "content": message if message is not None else attrs.get("content")}
            if attrs.get("finish_reason"):
                choice["finish_reason"] = attrs["finish_reason"]
            choices.append(choice)
    return choices or None


def _value(attrs: Mapping[str, Any], key: str, mime_key: str) -> Any:
    value = attrs.get(key)
    if value is None:
        return None
    if isinstance(value, str) and attrs.get(mime_key) == "application/json":
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value
