"""A span's input and output as a conversation for the run page: messages with their role, text, the
tool calls an assistant made and the tool results that answer them (matched by the call's id).

Read from what clients send: OpenAI chat messages (`tool_calls`, `role: "tool"` with
`tool_call_id`) and responses (`choices[0].message`), OpenAI Responses items (`function_call`,
`function_call_output`), Anthropic messages and content blocks (`tool_use`, `tool_result`, a
`system` beside `messages`). Anything else is not a conversation (None): the page shows it as JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

ROLES = {"system", "developer", "user", "assistant", "tool", "function", "model"}
IMAGES = ("image_url", "image", "input_image")  # shown as "[image]"


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, pretty when it parses


@dataclass
class Message:
    role: str
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""  # a tool result: the call it answers
    tool_name: str = ""  # that call's name, when the conversation has it
    side: str = "input"  # "input" or "output"


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") in IMAGES:
                parts.append("[image]")
        return "\n".join(p for p in parts if p)
    return _pretty(value)


def _message(raw: dict[str, Any], side: str) -> list[Message]:
    """One message dict as one or more messages (Anthropic packs tool results into a user turn)."""
    kind = raw.get("type")
    if kind == "function_call":  # OpenAI Responses
        call = ToolCall(
            str(raw.get("call_id") or raw.get("id") or ""), str(raw.get("name") or ""), _pretty(raw.get("arguments"))
        )
        return [Message("assistant", tool_calls=[call], side=side)]
    if kind == "function_call_output":
        return [Message("tool", _text(raw.get("output")), tool_call_id=str(raw.get("call_id") or ""), side=side)]
    role = str(raw.get("role") or ("assistant" if side == "output" else ""))
    if role not in ROLES:
        return []
    content = raw.get("content")
    message = Message(role, side=side)
    out = [message]
    if isinstance(content, list):
        texts = []
        for block in content:
            if not isinstance(block, dict):
                texts.append(str(block))
            elif block.get("type") == "tool_use":
                message.tool_calls.append(
                    ToolCall(str(block.get("id") or ""), str(block.get("name") or ""), _pretty(block.get("input")))
                )
            elif block.get("type") == "tool_result":
                result = _text(block.get("content"))
                out.append(Message("tool", result, tool_call_id=str(block.get("tool_use_id") or ""), side=side))
            elif isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif block.get("type") in IMAGES:
                texts.append("[image]")
        message.text = "\n".join(t for t in texts if t)
    else:
        message.text = _text(content)
    for call in raw.get("tool_calls") or ():
        if isinstance(call, dict):
            function = call.get("function")
            fn: dict[str, Any] = function if isinstance(function, dict) else {}
            message.tool_calls.append(
                ToolCall(
                    str(call.get("id") or ""),
                    str(fn.get("name") or call.get("name") or ""),
                    _pretty(fn.get("arguments", call.get("arguments"))),
                )
            )
    if role in ("tool", "function"):
        message.role = "tool"
        message.tool_call_id = str(raw.get("tool_call_id") or "")
        message.tool_name = str(raw.get("name") or "")
    if not message.text and not message.tool_calls and not message.tool_call_id:
        out.remove(message)
    return out


def _messages(value: Any, side: str) -> list[Message] | None:
    if isinstance(value, str):
        return [Message("user" if side == "input" else "assistant", value, side=side)]
    items: list[Any]
    system: Any = None
    if isinstance(value, dict):
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            first = choices[0].get("message") or {"role": "assistant", "content": choices[0].get("text")}
            items = [first]
        elif isinstance(value.get("messages"), list):
            items, system = value["messages"], value.get("system")
        elif isinstance(value.get("output"), list):  # OpenAI Responses
            items = value["output"]
        elif isinstance(value.get("input"), list):
            items = value["input"]
        elif "role" in value or value.get("type") in ("function_call", "function_call_output"):
            items = [value]
        else:
            return None
    elif isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        items = value
    else:
        return None
    out = []
    if system:
        out.append(Message("system", _text(system), side=side))
    for item in items:
        if not isinstance(item, dict):
            return None
        if item.get("type") == "message" and "role" not in item:
            item = {**item, "role": "assistant"}
        out += _message(item, side)
    return out or None


def conversation(input_value: Any, output_value: Any) -> list[Message] | None:
    """The input's messages then the output's, tool results named after their calls; None when
    either side is something other than a conversation (or both are empty)."""
    inputs = _messages(input_value, "input") if input_value is not None else []
    outputs = _messages(output_value, "output") if output_value is not None else []
    if inputs is None or outputs is None or not (inputs or outputs):
        return None
    messages = inputs + outputs
    names = {call.id: call.name for m in messages for call in m.tool_calls if call.id}
    for m in messages:
        if m.tool_call_id and not m.tool_name:
            m.tool_name = names.get(m.tool_call_id, "")
    return messages
