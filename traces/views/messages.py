"""A trace's input and output as a conversation for the trace page: system, user and assistant
messages, the tool calls the assistant made and the tools' results, in order.

Read from what clients and the proxy store: OpenAI chat messages (`tool_calls`, `role: "tool"`), a
whole chat or Anthropic Messages request body (`messages`, `system`, content blocks with `tool_use`
and `tool_result`), the Responses API (`input`/`instructions`, items of type `message`,
`function_call`, `function_call_output`), completions (`prompt`), responses (`choices`, a message,
content blocks) and plain strings. Anything else gives no conversation: the page then shows the JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

FOLD_LINES = 12  # a longer message (a system prompt, say) is folded, its first lines shown
FOLD_CHARS = 1500


@dataclass
class ToolCall:
    name: str
    ident: str
    arguments: str  # pretty JSON when it is JSON


@dataclass
class Message:
    role: str  # system, user, assistant, tool (a tool's result)
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_ref: str = ""  # a tool result: the call it answers (its name or id)
    reply: bool = False  # part of the output: the model's answer

    @property
    def label(self) -> str:
        if self.role == "tool":
            return "Tool result"
        return {"system": "System", "developer": "Developer", "user": "User", "assistant": "Assistant"}.get(
            self.role, self.role.capitalize() or "Message"
        )

    @property
    def is_json(self) -> bool:
        return self.text.startswith(("{", "[")) and "\n" in self.text

    @property
    def folded(self) -> bool:
        return self.text.count("\n") + 1 > FOLD_LINES or len(self.text) > FOLD_CHARS

    @property
    def lines(self) -> int:
        return self.text.count("\n") + 1

    @property
    def preview(self) -> str:
        return "\n".join(self.text.splitlines()[:4])[:400]


def conversation(input_value: Any, output_value: Any) -> list[Message]:
    """The messages of the input, then those of the output (marked ``reply``); [] when either side
    is not a shape we read and nothing of the other is either."""
    messages = _input_messages(input_value)
    replies = _output_messages(output_value)
    for m in replies:
        m.reply = True
    names = {call.ident: call.name for m in messages + replies for call in m.tool_calls if call.ident and call.name}
    for m in messages + replies:
        if m.role == "tool" and m.tool_ref in names:
            m.tool_ref = names[m.tool_ref]  # a result says which tool answered, not an opaque call id
    return messages + replies


def _pretty(value: Any) -> str:
    """A JSON value, or a string holding JSON, as indented JSON; other text as it is."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                value = json.loads(stripped)
            except ValueError:
                return value
        else:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                kind = part.get("type", "")
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
                elif kind in ("image", "image_url", "input_image"):
                    parts.append("[image]")
                elif kind in ("input_audio", "audio"):
                    parts.append("[audio]")
                elif kind in ("file", "input_file", "document"):
                    parts.append("[file]")
        return "\n".join(parts)
    return _pretty(content)


def _input_messages(value: Any) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Message("user", value)]
    if isinstance(value, dict):
        out: list[Message] = []
        system = value.get("system", value.get("instructions"))
        if system:
            out.append(Message("system", _text(system)))
        for key in ("messages", "input", "contents"):
            if key in value:
                items = value[key]
                if isinstance(items, str):
                    return [*out, Message("user", items)]
                if isinstance(items, list):
                    return out + _items(items)
        if "prompt" in value:
            prompt = value["prompt"]
            return [*out, Message("user", prompt if isinstance(prompt, str) else _text(prompt))]
        if "role" in value:
            return out + _items([value])
        return out
    if isinstance(value, list):
        return _items(value)
    return []


def _output_messages(value: Any) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Message("assistant", value)]
    if isinstance(value, dict):
        if value.get("truncated") and "partial" in value:
            return _output_messages(value["partial"])
        choices = value.get("choices")
        if isinstance(choices, list):
            out: list[Message] = []
            for choice in choices:
                if isinstance(choice, dict):
                    message = choice.get("message") or choice.get("delta")
                    if isinstance(message, dict):
                        out += _items([{"role": "assistant", **message}])
                    elif isinstance(choice.get("text"), str):
                        out.append(Message("assistant", choice["text"]))
            return out
        if isinstance(value.get("output"), list):  # a whole Responses API response
            return _items(value["output"], default_role="assistant")
        if "content" in value or "tool_calls" in value:
            return _items([{"role": "assistant", **value}])
        return []
    if isinstance(value, list):
        return _items(value, default_role="assistant")
    return []


def _items(items: list[Any], default_role: str = "user") -> list[Message]:
    out: list[Message] = []
    for item in items:
        if isinstance(item, str):
            out.append(Message(default_role, item))
            continue
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":  # Responses API
            call = ToolCall(str(item.get("name", "")), str(item.get("call_id", "")), _pretty(item.get("arguments")))
            if out and out[-1].role == "assistant" and not out[-1].text:
                out[-1].tool_calls.append(call)
            else:
                out.append(Message("assistant", tool_calls=[call]))
            continue
        if kind == "function_call_output":
            out.append(Message("tool", _pretty(item.get("output")), tool_ref=str(item.get("call_id", ""))))
            continue
        if kind == "reasoning":
            continue
        role = str(item.get("role") or default_role)
        content = item.get("content", item.get("parts"))
        if role == "model":  # Gemini
            role = "assistant"
        if role in ("tool", "function"):
            ref = item.get("name") or item.get("tool_call_id") or ""
            out.append(Message("tool", _pretty(_text(content)), tool_ref=str(ref)))
            continue
        message = Message(role, "")
        results: list[Message] = []
        if isinstance(content, list):
            texts = []
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    message.tool_calls.append(
                        ToolCall(str(block.get("name", "")), str(block.get("id", "")), _pretty(block.get("input")))
                    )
                elif isinstance(block, dict) and block.get("type") == "tool_result":
                    results.append(
                        Message(
                            "tool", _pretty(_text(block.get("content"))), tool_ref=str(block.get("tool_use_id", ""))
                        )
                    )
                else:
                    texts.append(block)
            message.text = _text(texts)
        else:
            message.text = _text(content)
        for call in item.get("tool_calls") or ():
            if isinstance(call, dict):
                inner = call.get("function")
                function: dict[str, Any] = inner if isinstance(inner, dict) else call
                message.tool_calls.append(
                    ToolCall(str(function.get("name", "")), str(call.get("id", "")), _pretty(function.get("arguments")))
                )
        legacy = item.get("function_call")
        if isinstance(legacy, dict):
            message.tool_calls.append(ToolCall(str(legacy.get("name", "")), "", _pretty(legacy.get("arguments"))))
        if message.text or message.tool_calls:
            out.append(message)
        out += results
    return out
