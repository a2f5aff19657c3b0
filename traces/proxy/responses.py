"""Reading an upstream's answer for the trace: decoding, JSON or SSE, streamed messages rebuilt
block by block, usage and errors in each API's shape (OpenAI chat, completions, embeddings and
responses; Anthropic messages). Runs in the writer thread, never on the hot path."""

from __future__ import annotations

import re
import zlib
from typing import Any

import orjson

from .sse import parse_events

PARSE_LIMIT = 4 * 1024 * 1024  # bodies above this are not parsed whole (GIL time); model and usage by regex
TAIL_LIMIT = 256 * 1024  # of a streamed body, the end kept for usage (and searched for it in a big one)
_USAGE_RE = re.compile(rb'"usage"\s*:\s*(\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})')
_MODEL_RE = re.compile(rb'"model"\s*:\s*"([^"\\]{1,200})"')


class ResponseReading:
    """What the writer learns from the upstream's answer."""

    __slots__ = ("model", "usage", "output", "error_type", "error_message")

    def __init__(self) -> None:
        self.model: Any = None
        self.usage: dict[str, int] | None = None
        self.output: Any = None
        self.error_type = ""
        self.error_message = ""


def _usage(value: Any) -> dict[str, int] | None:
    """The trace's usage fields (prompt, completion and their parts: traces/usage.py) from an OpenAI
    (chat, completions, embeddings, responses) or Anthropic usage object."""
    if not isinstance(value, dict):
        return None
    prompt = value.get("prompt_tokens", value.get("input_tokens"))
    completion = value.get("completion_tokens", value.get("output_tokens"))
    if prompt is None and completion is None:
        return None
    try:
        # Anthropic counts cache reads and writes apart from input_tokens; OpenAI includes them.
        cache_read = int(value.get("cache_read_input_tokens") or 0)
        cache_write = int(value.get("cache_creation_input_tokens") or 0)
        usage = {
            "prompt_tokens": int(prompt or 0) + cache_read + cache_write,
            "completion_tokens": int(completion or 0),
        }
        prompt_details = value.get("prompt_tokens_details", value.get("input_tokens_details"))
        completion_details = value.get("completion_tokens_details", value.get("output_tokens_details"))
        parts = {
            "cached_tokens": cache_read + _part(prompt_details, "cached_tokens"),
            "cache_write_tokens": cache_write,
            "input_audio_tokens": _part(prompt_details, "audio_tokens"),
            "input_image_tokens": _part(prompt_details, "image_tokens"),
            "reasoning_tokens": _part(completion_details, "reasoning_tokens"),
            "output_audio_tokens": _part(completion_details, "audio_tokens"),
            "output_image_tokens": _part(completion_details, "image_tokens"),
        }
    except (TypeError, ValueError):
        return None
    usage.update({k: v for k, v in parts.items() if v > 0})
    return usage


def _part(details: Any, key: str) -> int:
    """One count of a ``*_tokens_details`` object; 0 when absent (or null, as some providers send)."""
    if not isinstance(details, dict):
        return 0
    return int(details.get(key) or 0)


def _decoded(body: bytes, encoding: bytes) -> bytes | None:
    if not encoding or encoding == b"identity":
        return body
    if encoding in (b"gzip", b"x-gzip", b"deflate"):
        try:
            # wbits 47: gzip or zlib header, detected; capped so a compression bomb cannot blow up memory.
            return zlib.decompressobj(47).decompress(body, PARSE_LIMIT + 1)
        except zlib.error:
            try:
                return zlib.decompressobj(-15).decompress(body, PARSE_LIMIT + 1)
            except zlib.error:
                return None
    return None  # an encoding we did not ask the upstream for


def read_stream(endpoint: str, head: bytes, tail: bytes, truncated: bool, size: int, result: ResponseReading) -> None:
    """A streamed answer (its first and last bytes: see capture.StreamBody) into ``result``."""
    events = list(parse_events(head))
    if tail:
        events.extend(parse_events(tail))
    _read_stream(endpoint, events, result)
    if truncated and result.output is not None:
        result.output = {"truncated": True, "bytes": size, "partial": result.output}


def read_whole(endpoint: str, status_code: int, body: bytes, encoding: bytes, result: ResponseReading) -> None:
    """A whole answer, as the upstream encoded it, into ``result``: the error of a 4xx/5xx, else the
    model, usage and output of ``endpoint``'s shape."""
    decoded = _decoded(body, encoding)
    if decoded is None:
        return
    body = decoded
    if len(body) > PARSE_LIMIT:
        _read_by_pattern(body, result)
        return
    try:
        data = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        if status_code >= 400:
            result.error_message = body[:2000].decode("utf-8", "replace")
        return
    if status_code >= 400:
        result.error_type, result.error_message = _error_of(data)
        return
    if isinstance(data, dict):
        _read_json(endpoint, data, result)


def _read_by_pattern(body: bytes, result: ResponseReading) -> None:
    """Model and usage of a body too big to parse whole (a large embeddings batch): they sit at its ends."""
    model = _MODEL_RE.search(body[-TAIL_LIMIT:]) or _MODEL_RE.search(body[:TAIL_LIMIT])
    if model:
        result.model = model.group(1).decode()
    usage = _USAGE_RE.search(body[-TAIL_LIMIT:])
    if usage:
        try:
            result.usage = _usage(orjson.loads(usage.group(1)))
        except orjson.JSONDecodeError:
            pass
    result.output = {"truncated": True, "bytes": len(body)}


def _error_of(data: Any) -> tuple[str, str]:
    """(type, message) from an OpenAI-style ``{"error": {...}}``, Anthropic's, or a FastAPI ``detail``."""
    if not isinstance(data, dict):
        return "", ""
    error = data.get("error")
    if isinstance(error, dict):
        kind = error.get("type") or error.get("code") or ""
        return str(kind), str(error.get("message") or "")
    if isinstance(error, str):
        return "", error
    if "detail" in data:
        return "", str(data["detail"])
    return "", ""


def _read_json(endpoint: str, data: dict[str, Any], result: ResponseReading) -> None:
    result.model = data.get("model")
    result.usage = _usage(data.get("usage"))
    if endpoint == "chat":
        messages = [c.get("message") for c in data.get("choices") or [] if isinstance(c, dict)]
        result.output = messages[0] if len(messages) == 1 else messages
    elif endpoint == "completions":
        texts = [c.get("text") for c in data.get("choices") or [] if isinstance(c, dict)]
        result.output = texts[0] if len(texts) == 1 else texts
    elif endpoint == "embeddings":
        vectors = [d.get("embedding") for d in data.get("data") or [] if isinstance(d, dict)]
        first = vectors[0] if vectors else None
        result.output = {"embeddings": len(vectors), "dimensions": len(first) if isinstance(first, list) else None}
    elif endpoint == "responses":
        result.output = data.get("output")
        if data.get("status") == "failed" and isinstance(data.get("error"), dict):
            result.error_type, result.error_message = _error_of(data)
    elif endpoint == "messages":
        result.output = {"role": data.get("role", "assistant"), "content": data.get("content")}
    else:
        result.output = data


def _read_stream(endpoint: str, events: list[tuple[str, bytes]], result: ResponseReading) -> None:
    if endpoint == "messages":
        _AnthropicStream(result).read(events)
    elif endpoint == "responses":
        _ResponsesStream(result).read(events)
    else:
        _ChatStream(result, endpoint).read(events)


def _json_events(events: list[tuple[str, bytes]]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for name, data in events:
        if data == b"[DONE]":
            continue
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out.append((name, value))
    return out


class _ChatStream:
    """Chat completions (and legacy completions) chunks → the assistant message(s), usage, model."""

    def __init__(self, result: ResponseReading, endpoint: str) -> None:
        self.result = result
        self.endpoint = endpoint
        self.choices: dict[int, dict[str, Any]] = {}

    def read(self, events: list[tuple[str, bytes]]) -> None:
        for _, chunk in _json_events(events):
            if "error" in chunk and not chunk.get("choices"):
                self.result.error_type, self.result.error_message = _error_of(chunk)
                continue
            self.result.model = chunk.get("model") or self.result.model
            groq = chunk.get("x_groq")
            usage = _usage(chunk.get("usage")) or _usage(groq.get("usage") if isinstance(groq, dict) else None)
            if usage is not None:
                self.result.usage = usage
            for choice in chunk.get("choices") or []:
                if isinstance(choice, dict):
                    self._add(choice)
        outputs = [self._message(state) for _, state in sorted(self.choices.items())]
        if outputs:
            self.result.output = outputs[0] if len(outputs) == 1 else outputs

    def _add(self, choice: dict[str, Any]) -> None:
        state = self.choices.setdefault(choice.get("index") or 0, {"role": "assistant", "content": [], "tools": {}})
        if self.endpoint == "completions":
            state["content"].append(choice.get("text") or "")
            return
        delta = choice.get("delta") or {}
        if delta.get("role"):
            state["role"] = delta["role"]
        if delta.get("content"):
            state["content"].append(delta["content"])
        if delta.get("refusal"):
            state["refusal"] = state.get("refusal", "") + delta["refusal"]
        for call in delta.get("tool_calls") or []:
            tool = state["tools"].setdefault(
                call.get("index") or 0, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            )
            tool["id"] = call.get("id") or tool["id"]
            tool["type"] = call.get("type") or tool["type"]
            function = call.get("function") or {}
            tool["function"]["name"] += function.get("name") or ""
            tool["function"]["arguments"] += function.get("arguments") or ""

    def _message(self, state: dict[str, Any]) -> Any:
        text = "".join(state["content"])
        if self.endpoint == "completions":
            return text
        message: dict[str, Any] = {"role": state["role"], "content": text or None}
        if "refusal" in state:
            message["refusal"] = state["refusal"]
        if state["tools"]:
            message["tool_calls"] = [tool for _, tool in sorted(state["tools"].items())]
        return message


class _ResponsesStream:
    """Responses API events: the final response object carries output and usage."""

    def __init__(self, result: ResponseReading) -> None:
        self.result = result

    def read(self, events: list[tuple[str, bytes]]) -> None:
        text: list[str] = []
        for name, event in _json_events(events):
            kind = event.get("type") or name
            response = event.get("response")
            if isinstance(response, dict):
                self.result.model = response.get("model") or self.result.model
                usage = _usage(response.get("usage"))
                if usage is not None:
                    self.result.usage = usage
                if response.get("output"):
                    self.result.output = response["output"]
                if kind == "response.failed":
                    self.result.error_type, self.result.error_message = _error_of(response)
                    self.result.error_type = self.result.error_type or "response_failed"
            elif kind == "response.output_text.delta":
                text.append(str(event.get("delta") or ""))
            elif kind == "error":
                self.result.error_type = str(event.get("code") or "error")
                self.result.error_message = str(event.get("message") or "")
        if self.result.output is None and text:
            self.result.output = "".join(text)


class _AnthropicStream:
    """Messages API events: usage in message_start and message_delta, content rebuilt block by block."""

    def __init__(self, result: ResponseReading) -> None:
        self.result = result

    def read(self, events: list[tuple[str, bytes]]) -> None:
        blocks: dict[int, dict[str, Any]] = {}
        partial_json: dict[int, list[str]] = {}
        usage: dict[str, Any] = {}
        role = "assistant"
        for name, event in _json_events(events):
            kind = event.get("type") or name
            if kind == "message_start":
                message = event.get("message") or {}
                self.result.model = message.get("model")
                role = message.get("role") or role
                usage.update(message.get("usage") or {})
            elif kind == "content_block_start":
                blocks[event.get("index") or 0] = dict(event.get("content_block") or {})
            elif kind == "content_block_delta":
                index = event.get("index") or 0
                block = blocks.setdefault(index, {"type": "text", "text": ""})
                delta = event.get("delta") or {}
                if delta.get("type") == "text_delta":
                    block["text"] = block.get("text", "") + (delta.get("text") or "")
                elif delta.get("type") == "input_json_delta":
                    partial_json.setdefault(index, []).append(delta.get("partial_json") or "")
                elif delta.get("type") == "thinking_delta":
                    block["thinking"] = block.get("thinking", "") + (delta.get("thinking") or "")
            elif kind == "message_delta":
                # Cumulative counts: later values replace earlier ones.
                usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            elif kind == "error":
                self.result.error_type, self.result.error_message = _error_of(event)
        for index, parts in partial_json.items():
            try:
                blocks[index]["input"] = orjson.loads("".join(parts) or "{}")
            except orjson.JSONDecodeError:
                blocks[index]["input"] = "".join(parts)
        self.result.usage = _usage(usage)
        if blocks:
            self.result.output = {"role": role, "content": [block for _, block in sorted(blocks.items())]}
