"""`Call`: one trace seen the way every exporter maps it (ids, times, messages, tags, metadata).

Traces arrive with free-form ``input`` / ``output``: an OpenAI chat request or a bare message
list, an OpenAI or Anthropic response, a plain string, or any JSON. Here they become a list of
`Message` (role, text, tool calls, finish reason) that each destination's format is built from;
the raw JSON is kept too, for destinations that take any JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import orjson

from traces.records import TraceRecord

from . import ids
from .base import Target, Unencodable

# Request keys that are model parameters (OpenAI and Anthropic spellings).
PARAMETER_KEYS = (
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "top_p",
    "top_k",
    "frequency_penalty",
    "presence_penalty",
    "stop",
    "seed",
    "n",
    "stream",
    "response_format",
    "reasoning_effort",
)

# Our provider names → OpenTelemetry GenAI `gen_ai.provider.name` values (semconv registry).
GENAI_PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "azure": "azure.ai.openai",
    "azure_openai": "azure.ai.openai",
    "azure-openai": "azure.ai.openai",
    "bedrock": "aws.bedrock",
    "aws": "aws.bedrock",
    "aws-bedrock": "aws.bedrock",
    "google": "gcp.gemini",
    "gemini": "gcp.gemini",
    "google-gla": "gcp.gemini",
    "vertex": "gcp.vertex_ai",
    "vertex_ai": "gcp.vertex_ai",
    "google-vertex": "gcp.vertex_ai",
    "mistral": "mistral_ai",
    "mistralai": "mistral_ai",
    "groq": "groq",
    "deepseek": "deepseek",
    "perplexity": "perplexity",
    "xai": "x_ai",
    "x-ai": "x_ai",
    "grok": "x_ai",
    "cohere": "cohere",
    "ibm": "ibm.watsonx.ai",
    "watsonx": "ibm.watsonx.ai",
}


def genai_provider(provider: str) -> str:
    key = (provider or "").strip().lower()
    return GENAI_PROVIDERS.get(key, key or "unknown")


def to_json(value: Any) -> str:
    """Compact JSON for attributes and bodies; anything odd (Decimal, sets) becomes a string."""
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:  # integers past 64 bits, deep nesting: the slow, lenient path
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as providers send it


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    finish_reason: str = ""

    def as_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": t.id, "type": "function", "function": {"name": t.name, "arguments": t.arguments}}
                for t in self.tool_calls
            ]
        if self.tool_call_id:
            out["tool_call_id"] = self.tool_call_id
        return out


def _text(content: Any) -> str:
    """Message content → text: strings as is, OpenAI/Anthropic content parts joined, else JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, Mapping) and part.get("type") in ("tool_use", "tool_result"):
                continue  # carried as tool calls / tool messages
            else:
                texts.append(to_json(part))
        return "\n".join(texts)
    return to_json(content)


def _tool_calls(message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping):
            function = call.get("function")
            fn: Mapping[str, Any] = function if isinstance(function, Mapping) else call
            args = fn.get("arguments", "")
            calls.append(
                ToolCall(
                    id=str(call.get("id", "")),
                    name=str(fn.get("name", "")),
                    arguments=args if isinstance(args, str) else to_json(args),
                )
            )
    content = message.get("content")
    if isinstance(content, list):  # Anthropic tool_use blocks
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "tool_use":
                arguments = to_json(part.get("input", {}))
                calls.append(ToolCall(id=str(part.get("id", "")), name=str(part.get("name", "")), arguments=arguments))
    return tuple(calls)


def _message(value: Any, default_role: str, finish_reason: str = "") -> Message:
    if isinstance(value, Mapping) and ("role" in value or "content" in value):
        return Message(
            role=str(value.get("role") or default_role),
            content=_text(value.get("content")),
            tool_calls=_tool_calls(value),
            tool_call_id=str(value.get("tool_call_id") or ""),
            finish_reason=finish_reason,
        )
    return Message(role=default_role, content=_text(value), finish_reason=finish_reason)


def input_messages(value: Any) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Message(role="user", content=value)]
    if isinstance(value, list):
        return [_message(m, "user") for m in value]
    if isinstance(value, Mapping):
        out: list[Message] = []
        system = value.get("system")  # Anthropic puts the system prompt beside the messages
        if system:
            out.append(Message(role="system", content=_text(system)))
        if isinstance(value.get("messages"), list):
            out.extend(_message(m, "user") for m in value["messages"])
            return out
        if "prompt" in value:
            prompt = value["prompt"]
            out.append(Message(role="user", content=_text(prompt if not isinstance(prompt, list) else prompt[0])))
            return out
        if "input" in value:  # OpenAI Responses API / embeddings
            return out + input_messages(value["input"])
        if "role" in value or "content" in value:
            return out + [_message(value, "user")]
        return out + [Message(role="user", content=to_json(dict(value)))]
    return [Message(role="user", content=to_json(value))]


def output_messages(value: Any) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Message(role="assistant", content=value, finish_reason="stop")]
    if isinstance(value, list):
        return [_message(m, "assistant") for m in value]
    if isinstance(value, Mapping):
        if isinstance(value.get("choices"), list):  # OpenAI chat / completions response
            out = []
            for choice in value["choices"]:
                if not isinstance(choice, Mapping):
                    continue
                reason = str(choice.get("finish_reason") or "")
                if isinstance(choice.get("message"), Mapping):
                    out.append(_message(choice["message"], "assistant", reason))
                elif "text" in choice:
                    out.append(Message(role="assistant", content=_text(choice["text"]), finish_reason=reason))
            return out
        if value.get("type") == "message" or "stop_reason" in value:  # Anthropic Messages response
            return [_message(value, "assistant", str(value.get("stop_reason") or ""))]
        if "role" in value or "content" in value:
            return [_message(value, "assistant", str(value.get("finish_reason") or ""))]
        if isinstance(value.get("output_text"), str):  # OpenAI Responses API convenience field
            return [Message(role="assistant", content=value["output_text"])]
        return [Message(role="assistant", content=to_json(dict(value)))]
    return [Message(role="assistant", content=to_json(value))]


def request_parameters(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    return {k: value[k] for k in PARAMETER_KEYS if k in value and value[k] is not None}


# A structural span's ``gen_ai.operation.name`` (GenAI semantic conventions): only agents and tools
# have one; other kinds carry none.
STRUCTURAL_OPERATIONS = {"agent": "invoke_agent", "tool": "execute_tool"}


def operation_name(record: TraceRecord) -> str:
    """``gen_ai.operation.name``: embeddings for embedding models, text_completion for a bare
    prompt, else chat (what nearly every traced call is); ``invoke_agent`` and ``execute_tool`` for
    agent and tool spans, "" for other structural spans."""
    if not record.is_call:
        return STRUCTURAL_OPERATIONS.get(record.kind, "")
    if record.kind == "embedding" or "embed" in record.model.lower():
        return "embeddings"
    if isinstance(record.input, Mapping) and "prompt" in record.input and "messages" not in record.input:
        return "text_completion"
    return "chat"


def mapped_metadata(metadata: Mapping[str, Any], mapping: Mapping[str, str | None]) -> dict[str, Any]:
    """Apply an integration's metadata mapping: a key mapped to a name is renamed, a key mapped
    to null (or "") is dropped, other keys pass through unchanged."""
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if key in mapping:
            new = mapping[key]
            if not new:
                continue
            out[new] = value
        else:
            out.setdefault(key, value)
    return out


def _utc(moment: datetime | None) -> datetime:
    if moment is None:
        return datetime.now(UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Call:
    """A trace prepared for export: computed once, read by every format."""

    record: TraceRecord
    otel_trace_id: bytes  # the run's: every span of a run shares it
    otel_span_id: bytes
    otel_parent_span_id: bytes  # b"" for a root
    run_id: UUID  # this span's UUID (LangSmith run id, Helicone request id)
    start: datetime
    end: datetime
    operation: str
    inputs: list[Message]
    outputs: list[Message]
    parameters: dict[str, Any]
    tags: tuple[str, ...]
    metadata: dict[str, Any]
    cost: float | None
    finish_reasons: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, record: TraceRecord, target: Target) -> Call:
        start = _utc(record.timestamp)
        try:
            end = start + timedelta(milliseconds=record.latency_ms or 0)
        except OverflowError:
            raise Unencodable(
                f"its end time ({start.isoformat()} + latency_ms {record.latency_ms}) is past year 9999"
            ) from None
        outputs = output_messages(record.output)
        return cls(
            record=record,
            otel_trace_id=ids.otel_trace_id(record.team_id, record.run),
            otel_span_id=ids.otel_span_id(record.team_id, record.trace_id),
            otel_parent_span_id=ids.otel_span_id(record.team_id, record.parent_id) if record.parent_id else b"",
            run_id=ids.run_uuid(record.team_id, record.trace_id),
            start=start,
            end=end,
            operation=operation_name(record),
            inputs=input_messages(record.input),
            outputs=outputs,
            parameters=request_parameters(record.input),
            tags=tuple(dict.fromkeys([*record.tags, *target.tags])),
            metadata=mapped_metadata(record.metadata, target.metadata_mapping),
            cost=float(record.cost) if record.cost is not None else None,
            finish_reasons=[m.finish_reason for m in outputs if m.finish_reason],
        )

    @property
    def is_call(self) -> bool:
        return self.record.is_call

    @property
    def name(self) -> str:
        """A call's GenAI span name, ``{operation} {model}``; a structural span's own name (its kind
        when it has none)."""
        if not self.record.is_call:
            return self.record.name or self.record.kind
        return f"{self.operation} {self.record.model}"

    @property
    def first_token_at(self) -> datetime | None:
        ttft = self.record.time_to_first_token_ms
        return self.start + timedelta(milliseconds=ttft) if ttft is not None else None

    @property
    def error_type(self) -> str:
        r = self.record
        if not r.is_error:
            return ""
        return r.error_type or ("rate_limited" if r.status == "rate_limited" else "error")

    @property
    def error_message(self) -> str:
        r = self.record
        if not r.is_error:
            return ""
        return r.error_message or ("rate limited by the provider" if r.status == "rate_limited" else "call failed")

    @property
    def http_status(self) -> int:
        """The upstream HTTP status we believe the call had: 429 when rate limited, the error type
        when it is a status code (the proxy records e.g. "500"), else 500 for errors, 200 for success."""
        r = self.record
        if r.status == "rate_limited":
            return 429
        if not r.is_error:
            return 200
        return int(r.error_type) if r.error_type.isdigit() and 400 <= int(r.error_type) <= 599 else 500

    def start_ns(self) -> int:
        return unix_ns(self.start)

    def end_ns(self) -> int:
        return unix_ns(self.end)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def unix_ns(moment: datetime) -> int:
    """Exact nanoseconds since the epoch (float timestamps lose the microseconds)."""
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000


def iso(moment: datetime) -> str:
    """ISO 8601 UTC with microseconds and a Z (Langfuse wants at least milliseconds). Not strftime:
    its ``%Y`` drops the leading zeros of a year before 1000 on Linux."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def since_1970_ns(moment: datetime, wire: str) -> int:
    """`unix_ns` for formats whose times are unsigned nanoseconds since 1970 (OTLP, Datadog)."""
    ns = unix_ns(moment)
    if ns < 0:
        raise Unencodable(f"it starts at {iso(moment)}, before 1970-01-01, and {wire} times count from 1970")
    return ns
