"""What the hot path records about one call (`Capture`), and how the writer turns it into a trace.

The hot path only collects references: the request bytes, the upstream's raw response bytes and
headers, timings. Decompressing, parsing JSON and SSE, rebuilding streamed messages and reading
usage (responses.py) all happen in the writer thread, so they never delay a response.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from accounts.principals import KeyPrincipal

from .responses import PARSE_LIMIT, TAIL_LIMIT, ResponseReading, read_stream, read_whole
from .upstreams import ResolvedUpstream

HEAD_LIMIT = 2 * 1024 * 1024  # of a streamed body, the start kept for the output (the end: TAIL_LIMIT)
PREVIEW_CHARS = 4096
# Metadata keys the proxy writes itself; a client may not send them (X-Service-Metadata).
SERVER_METADATA_KEYS = frozenset({"proxy", "rate_limit"})
RATE_LIMIT_PREFIXES = (b"x-ratelimit-", b"anthropic-ratelimit-", b"retry-after", b"x-ms-ratelimit-")


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
        "run_id",
        "parent_id",
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
        self.run_id = ""  # X-Service-Run-Id: the run the call joins ("": a run of its own)
        self.parent_id = ""  # X-Service-Parent-Id: the span of that run it was made in
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
    asked = model if isinstance(model, str) and model.strip() else None
    result = ResponseReading()
    if c.status_code and not c.error_type or c.response_body:
        if isinstance(c.response_body, StreamBody):
            head, tail = c.response_body.parts()
            read_stream(endpoint, head, tail, c.response_body.truncated, c.response_body.size, result)
        else:
            headers = {name.lower(): value for name, value in c.response_headers}
            encoding = headers.get(b"content-encoding", b"").strip().lower()
            read_whole(endpoint, c.status_code, c.response_body, encoding, result)
    if result.model and isinstance(result.model, str):
        model = result.model
    if not model and c.target.kind == "azure":
        match = re.search(r"deployments/([^/]+)/", c.path)
        model = match.group(1) if match else None

    model = model if isinstance(model, str) and model.strip() else "unknown"
    trace: dict[str, Any] = {
        "id": c.trace_id,
        "kind": "embedding" if endpoint == "embeddings" else "llm",
        "name": _span_name(endpoint, asked or model, c)[:200],
        "model": model,
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
    if c.run_id:
        trace["run_id"] = c.run_id
        if c.parent_id:
            trace["parent_id"] = c.parent_id
    if c.target.provider:
        trace["provider"] = c.target.provider
    if result.usage is not None:
        trace.update(result.usage)
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


# A call's span name, as the GenAI semantic conventions write it: "{operation} {model}".
_OPERATIONS = {"chat": "chat", "messages": "chat", "responses": "chat", "completions": "text_completion",
               "embeddings": "embeddings"}  # fmt: skip


def _span_name(endpoint: str, model: str, c: Capture) -> str:
    operation = _OPERATIONS.get(endpoint)
    return f"{operation} {model}" if operation else f"{c.method} /{c.path}"


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
