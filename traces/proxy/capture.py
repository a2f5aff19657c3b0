"""What the hot path records about one call (`Capture`), and how the writer turns it into a trace.

The hot path only collects references: the request bytes, the upstream's raw response bytes and
headers, timings. Decompressing, parsing JSON and SSE, rebuilding streamed messages and reading
usage all happen here, in the writer thread, so they never delay a response.
"""

from __future__ import annotations

import re
import zlib
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from accounts.principals import KeyPrincipal

from .sse import parse_events
from .upstreams import ResolvedUpstream

PARSE_LIMIT = 4 * 1024 * 1024  # bodies above this are not parsed whole (GIL time); model and usage by regex
HEAD_LIMIT = 2 * 1024 * 1024  # of a streamed body, the start kept for the output...
TAIL_LIMIT = 256 * 1024  # ...and the end kept for usage
PREVIEW_CHARS = 4096
# Metadata keys the proxy writes itself; a client may not send them (X-Service-Metadata).
SERVER_METADATA_KEYS = frozenset({"proxy", "rate_limit"})
RATE_LIMIT_PREFIXES = (b"x-ratelimit-", b"anthropic-ratelimit-", b"retry-after", b"x-ms-ratelimit-")
_USAGE_RE = re.compile(rb'"usage"\s*:\s*(\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})')
_MODEL_RE = re.compile(rb'"model"\s*:\s*"([^"\\]{1,200})"')


class StreamBody:
    """A streamed response body as it went by: the first `HEAD_LIMIT` bytes and the last `TAIL_LIMIT`."""

    __slots__ = ("head", "head_size", "tail", "tail_size", "size")

    def __init__(self) -> None:
        self.head: list[bytes] = []
        self.head_size = 0
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.size = 0

    def append(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.head_size < HEAD_LIMIT:
            self.head.append(chunk)
            self.head_size += len(chunk)
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size - len(self.tail[0]) >= TAIL_LIMIT:
            self.tail_size -= len(self.tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.size > self.head_size + self.tail_size

    def parts(self) -> tuple[bytes, bytes]:
        """(head, tail); the tail starts at an event boundary when bytes were dropped before it."""
        tail = b"".join(self.tail)
        if self.truncated:
            cut = tail.find(b"\n\n")
            tail = tail[cut + 2 :] if cut >= 0 else b""
        return b"".join(self.head), tail


class Capture:
    """One proxied call, filled in by the hot path as it goes (plain attributes, no work)."""

    __slots__ = (
        "trace_id",
        "principal",
        "target",
        "method",
        "path",
        "started",
        "request_body",
        "request_json",
        "request_type",
        "tags",
        "metadata",
        "session_id",
        "user_id",
        "environment",
        "usage_injected",
        "status_code",
        "response_headers",
        "response_body",
        "latency_ms",
        "ttft_ms",
        "error_type",
        "error_message",
    )

    def __init__(
        self, trace_id: str, principal: KeyPrincipal, target: ResolvedUpstream, method: str, path: str
    ) -> None:
        self.trace_id = trace_id
        self.principal = principal
        self.target = target
        self.method = method
        self.path = path
        self.started = 0.0  # wall clock (time.time())
        self.request_body = b""
        self.request_json: Any = None  # set when the hot path had to parse the body anyway
        self.request_type = b""
        self.tags: list[str] = []
        self.metadata: dict[str, Any] = {}
        self.session_id = ""
        self.user_id = ""
        self.environment = ""
        self.usage_injected = False
        self.status_code = 0
        self.response_headers: Sequence[tuple[bytes, bytes]] = ()
        self.response_body: bytes | StreamBody = b""
        self.latency_ms: float | None = None
        self.ttft_ms: float | None = None
        self.error_type = ""  # set by the proxy itself: upstream_unreachable, upstream_timeout, client_disconnected
        self.error_message = ""


def endpoint_of(path: str, kind: str) -> str:
    """Which API a proxied path belongs to: chat, completions, embeddings, responses, messages or other."""
    path = path.rstrip("/")
    if kind == "anthropic" or path.endswith("v1/messages"):
        return "messages" if path.endswith("messages") else "other"
    for suffix, name in (
        ("chat/completions", "chat"),
        ("completions", "completions"),
        ("embeddings", "embeddings"),
        ("responses", "responses"),
    ):
        if path == suffix or path.endswith("/" + suffix):
            return name
    return "other"


def build_trace(c: Capture, *, max_body: int, max_metadata_keys: int) -> dict[str, Any]:
    """The trace dict `traces_ingest` takes, from what the hot path recorded."""
    endpoint = endpoint_of(c.path, c.target.kind)
    request = c.request_json if c.request_json is not None else _request_json(c)
    model = request.get("model") if isinstance(request, dict) else None
    headers = {name.lower(): value for name, value in c.response_headers}
    result = _Result()
    if c.status_code and not c.error_type or c.response_body:
        _read_response(c, endpoint, headers, result)
    if result.model and isinstance(result.model, str):
        model = result.model
    if not model and c.target.kind == "azure":
        match = re.search(r"deployments/([^/]+)/", c.path)
        model = match.group(1) if match else None

    trace: dict[str, Any] = {
        "id": c.trace_id,
        "model": model if isinstance(model, str) and model.strip() else "unknown",
        "timestamp": datetime.fromtimestamp(c.started, tz=UTC).isoformat(),
        "latency_ms": c.latency_ms,
        "time_to_first_token_ms": c.ttft_ms,
        "input": _bounded(request, c.request_body, max_body) if request is not None else _opaque(c),
        "output": _bounded(result.output, None, max_body),
        "tags": c.tags,
        "session_id": c.session_id or None,
        "user_id": c.user_id or None,
        "environment": c.environment or None,
    }
    if c.target.provider:
        trace["provider"] = c.target.provider
    if result.usage is not None:
        trace["prompt_tokens"], trace["completion_tokens"] = result.usage
    elif endpoint == "other" or not c.status_code or c.status_code >= 400:
        # No LLM work was billed: zero, rather than an estimate from the bodies. (A stream cut short
        # without usage is estimated by the pipeline, and flagged so.)
        trace["prompt_tokens"] = trace["completion_tokens"] = 0

    error_type = c.error_type or result.error_type
    error_message = c.error_message or result.error_message
    if c.status_code == 429:
        trace["status"] = "rate_limited"
    elif error_type or c.status_code >= 400:
        trace["status"] = "error"
    else:
        trace["status"] = "success"
    if trace["status"] != "success":
        trace["error"] = {"type": (error_type or f"http_{c.status_code}")[:200], "message": error_message}

    # The server's own keys always win and always fit: app.py refuses a client's X-Service-Metadata
    # naming them and bounds its size to leave them room; this holds even without that check.
    room = max_metadata_keys - len(SERVER_METADATA_KEYS)
    metadata = dict([(k, v) for k, v in c.metadata.items() if k not in SERVER_METADATA_KEYS][:room])
    if c.status_code == 429:
        metadata["rate_limit"] = _rate_limit_headers(c.response_headers)
    metadata["proxy"] = {
        "upstream": c.target.name,
        "method": c.method,
        "path": "/" + c.path,
        "status_code": c.status_code or None,
        "stream": isinstance(c.response_body, StreamBody),
        **({"usage_injected": True} if c.usage_injected else {}),
    }
    trace["metadata"] = metadata
    return trace


class _Result:
    __slots__ = ("model", "usage", "output", "error_type", "error_message")

    def __init__(self) -> None:
        self.model: Any = None
        self.usage: tuple[int, int] | None = None
        self.output: Any = None
        self.error_type = ""
        self.error_message = ""


def _request_json(c: Capture) -> Any:
    body = c.request_body
    if not body or len(body) > PARSE_LIMIT or body.lstrip()[:1] not in (b"{", b"["):
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _opaque(c: Capture) -> dict[str, Any] | None:
    """A non-JSON request (multipart audio, files): described, not stored."""
    if not c.request_body:
        return None
    return {"content_type": c.request_type.decode("latin-1"), "bytes": len(c.request_body)}


def _bounded(value: Any, raw: bytes | None, limit: int) -> Any:
    """``value``, or a truncated preview when its JSON is bigger than ``limit`` bytes."""
    if value is None:
        return None
    blob = raw if raw is not None else orjson.dumps(value, default=str)
    if len(blob) <= limit:
        return value
    return {"truncated": True, "bytes": len(blob), "preview": blob[:PREVIEW_CHARS].decode("utf-8", "replace")}


def _rate_limit_headers(headers: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    return {
        name.decode("latin-1").lower(): value.decode("latin-1")
        for name, value in headers
        if name.lower().startswith(RATE_LIMIT_PREFIXES)
    }


def _usage(value: Any) -> tuple[int, int] | None:
    """(prompt, completion) from an OpenAI (chat, completions, embeddings, responses) or Anthropic usage object."""
    if not isinstance(value, dict):
        return None
    prompt = value.get("prompt_tokens", value.get("input_tokens"))
    completion = value.get("completion_tokens", value.get("output_tokens"))
    if prompt is None and completion is None:
        return None
    # Anthropic counts cache reads and writes apart from input_tokens; OpenAI includes them.
    extra = (value.get("cache_creation_input_tokens") or 0) + (value.get("cache_read_input_tokens") or 0)
    try:
        return int(prompt or 0) + int(extra), int(completion or 0)
    except (TypeError, ValueError):
        return None


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


def _read_response(c: Capture, endpoint: str, headers: dict[bytes, bytes], result: _Result) -> None:
    if isinstance(c.response_body, StreamBody):
        head, tail = c.response_body.parts()
        events = list(parse_events(head))
        if tail:
            events.extend(parse_events(tail))
        _read_stream(endpoint, events, result)
        if c.response_body.truncated and result.output is not None:
            result.output = {"truncated": True, "bytes": c.response_body.size, "partial": result.output}
        return
    body = _decoded(c.response_body, headers.get(b"content-encoding", b"").strip().lower())
    if body is None:
        return
    if len(body) > PARSE_LIMIT:
        _read_by_pattern(body, result)
        return
    try:
        data = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        if c.status_code >= 400:
            result.error_message = body[:2000].decode("utf-8", "replace")
        return
    if c.status_code >= 400:
        result.error_type, result.error_message = _error_of(data)
        return
    if isinstance(data, dict):
        _read_json(endpoint, data, result)


def _read_by_pattern(body: bytes, result: _Result) -> None:
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


def _read_json(endpoint: str, data: dict[str, Any], result: _Result) -> None:
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


def _read_stream(endpoint: str, events: list[tuple[str, bytes]], result: _Result) -> None:
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

    def __init__(self, result: _Result, endpoint: str) -> None:
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

    def __init__(self, result: _Result) -> None:
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

    def __init__(self, result: _Result) -> None:
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
