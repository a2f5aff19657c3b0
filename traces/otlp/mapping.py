"""One OTLP span → one trace item (the REST API's JSON shape): a span of its run (docs/otlp.md, docs/runs.md).

Every span is kept: `run_id` is the OpenTelemetry trace id, `parent_id` the parent span's item id,
`name` the span's name, and `kind` comes from the span's GenAI, OpenInference or Traceloop kind
(`span_kind`; a span of no known kind is `other`). Only `llm` and `embedding` spans carry a model's
usage; a wrapper's (an agent, a tool, a workflow that names a model) stays in its metadata, so the
run's cost counts each call once.

The item then takes the same path as any REST trace (`normalize_trace`: validation, limits,
pricing), so a span breaking a rule (a token count that is not an integer, a trace over 1 MiB) is
refused there with the REST API's message and counted in `partial_success`.

Which attribute feeds which field, for the three conventions, is the table in docs/otlp.md; the
names were checked against the instrumentations' source (opentelemetry-semantic-conventions,
opentelemetry-instrumentation-openai-v2, openinference-semantic-conventions,
opentelemetry-semantic-conventions-ai).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from traces.kinds import CALL_KINDS
from traces.normalize import MAX_METADATA_KEY_LENGTH, TEXT_LIMITS

from .messages import is_content_key, prompt_and_reply
from .spans import STATUS_ERROR, PlainSpan

ID_PREFIX = "otel-"
MAX_NAME = 200  # characters of the span's name kept as the trace's `name` (the column's length)

MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "llm.response.model_name",
              "llm.request.model_name")  # fmt: skip
PROVIDER_KEYS = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
PROMPT_TOKEN_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt",
                     "llm.usage.prompt_tokens")  # fmt: skip
COMPLETION_TOKEN_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                         "llm.token_count.completion", "llm.usage.completion_tokens")  # fmt: skip
# Parts of the prompt and completion (traces/usage.py): OpenTelemetry's gen_ai semantic conventions
# (current and earlier spellings, OpenLLMetry's), then OpenInference's.
DETAIL_KEYS = {
    "cached_tokens": ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                      "llm.token_count.prompt_details.cache_read"),
    "cache_write_tokens": ("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens",
                           "llm.token_count.prompt_details.cache_write"),
    "input_audio_tokens": ("gen_ai.usage.audio.input_tokens", "gen_ai.usage.input_audio_tokens",
                           "llm.token_count.prompt_details.audio"),
    "input_image_tokens": ("gen_ai.usage.image.input_tokens", "gen_ai.usage.input_image_tokens",
                           "llm.token_count.prompt_details.image"),
    "reasoning_tokens": ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens",
                         "llm.usage.reasoning_tokens", "llm.token_count.completion_details.reasoning"),
    "output_audio_tokens": ("gen_ai.usage.audio.output_tokens", "gen_ai.usage.output_audio_tokens",
                            "llm.token_count.completion_details.audio"),
    "output_image_tokens": ("gen_ai.usage.image.output_tokens", "gen_ai.usage.output_image_tokens",
                            "llm.token_count.completion_details.image"),
}  # fmt: skip
TOTAL_TOKEN_KEYS = ("llm.token_count.total", "llm.usage.total_tokens", "gen_ai.usage.total_tokens")
SESSION_KEYS = ("session.id", "gen_ai.conversation.id", "traceloop.association.properties.session_id")
USER_KEYS = ("user.id", "enduser.id", "traceloop.association.properties.user_id", "gen_ai.user", "llm.user")
ENVIRONMENT_KEYS = ("deployment.environment.name", "deployment.environment")

# A span's kind, by convention (first match wins, in this order; docs/otlp.md, "Span kinds"). Checked
# against the conventions' sources: `gen_ai.operation.name`'s well-known values in
# semantic-conventions-genai's registry, `OpenInferenceSpanKindValues` in
# openinference-semantic-conventions, `TraceloopSpanKindValues` and `LLMRequestTypeValues` in
# opentelemetry-semantic-conventions-ai. Values not listed fall through to the next convention.
GENAI_KINDS = {
    "chat": "llm", "text_completion": "llm", "generate_content": "llm", "embeddings": "embedding",
    "invoke_agent": "agent", "create_agent": "agent", "execute_tool": "tool", "invoke_workflow": "workflow",
    "retrieval": "retrieval", "search_memory": "retrieval", "plan": "chain",
}  # fmt: skip
OPENINFERENCE_KINDS = {
    "LLM": "llm", "EMBEDDING": "embedding", "CHAIN": "chain", "TOOL": "tool", "AGENT": "agent",
    "RETRIEVER": "retrieval", "RERANKER": "retrieval", "GUARDRAIL": "guardrail", "EVALUATOR": "other",
    "UNKNOWN": "other",
}  # fmt: skip
TRACELOOP_KINDS = {"workflow": "workflow", "task": "chain", "agent": "agent", "tool": "tool", "unknown": "other"}
# OpenLLMetry marks its LLM call spans with the request type instead of a span kind.
TRACELOOP_REQUEST_TYPES = {"chat": "llm", "completion": "llm", "embedding": "embedding", "rerank": "retrieval"}
UNKNOWN_MODEL = "unknown"  # a call that names no model: stored, unpriced (as the proxy does)
USAGE_KEYS = frozenset({"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt",
                        "llm.usage.prompt_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                        "llm.token_count.completion", "llm.usage.completion_tokens", "llm.token_count.total",
                        "llm.usage.total_tokens", "gen_ai.usage.total_tokens"})  # fmt: skip

# Semantic-convention provider names → the pricing tables' provider ids.
PROVIDERS = {
    "azure.ai.openai": "azure", "az.ai.openai": "azure", "azure.ai.inference": "azure",
    "az.ai.inference": "azure", "azure_openai": "azure", "gcp.gemini": "google",
    "gcp.vertex_ai": "google", "gcp.gen_ai": "google", "gemini": "google", "vertex_ai": "google",
    "vertexai": "google", "google_genai": "google", "aws.bedrock": "aws", "bedrock": "aws",
    "mistral_ai": "mistral", "mistralai": "mistral", "x_ai": "x-ai", "xai": "x-ai",
    "ibm.watsonx.ai": "ibm", "cohere": "cohere", "deepseek": "deepseek", "groq": "groq",
    "perplexity": "perplexity",
}  # fmt: skip
# Attributes that became fields of the trace: not repeated in its metadata. (A structural span's
# usage did not become its token counts: it stays in its metadata, `STRUCTURAL_MAPPED_KEYS`.)
MAPPED_KEYS = frozenset(
    {*MODEL_KEYS, *PROVIDER_KEYS, *PROMPT_TOKEN_KEYS, *COMPLETION_TOKEN_KEYS, *TOTAL_TOKEN_KEYS, *SESSION_KEYS,
     *(key for keys in DETAIL_KEYS.values() for key in keys),
     *USER_KEYS, *ENVIRONMENT_KEYS, "error.type", "tag.tags", "gen_ai.response.time_to_first_chunk"}
)  # fmt: skip
STRUCTURAL_MAPPED_KEYS = MAPPED_KEYS - USAGE_KEYS - {key for keys in DETAIL_KEYS.values() for key in keys}
RATE_LIMIT_MARKERS = ("429", "ratelimit", "rate_limit", "too_many_requests", "toomanyrequests")
MAX_METADATA_STRING = 2000  # characters of one attribute value kept in metadata
# Keys of our own: otel.trace_id, span_id, parent_span_id, span_name, scope, dropped_attributes, and
# gen_ai.request.model when the response names another model.
OTEL_METADATA = 7


def trace_id_for(trace_id: str, span_id: str) -> str:
    """The stored trace's id: the same span sent twice is the same trace (stored once)."""
    return f"{ID_PREFIX}{trace_id}-{span_id}"


def span_kind(attrs: Mapping[str, Any]) -> str:
    """The span's kind: its GenAI operation, else its OpenInference or Traceloop span kind, else its
    OpenLLMetry request type; a span of none of those is an `llm` call when it names a model, else `other`."""
    operation = attrs.get("gen_ai.operation.name")
    if isinstance(operation, str) and operation.lower() in GENAI_KINDS:
        return GENAI_KINDS[operation.lower()]
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str) and kind.upper() in OPENINFERENCE_KINDS:
        return OPENINFERENCE_KINDS[kind.upper()]
    kind = attrs.get("traceloop.span.kind")
    if isinstance(kind, str) and kind.lower() in TRACELOOP_KINDS:
        return TRACELOOP_KINDS[kind.lower()]
    kind = attrs.get("llm.request.type")
    if isinstance(kind, str) and kind.lower() in TRACELOOP_REQUEST_TYPES:
        return TRACELOOP_REQUEST_TYPES[kind.lower()]
    return "llm" if any(attrs.get(k) for k in MODEL_KEYS) else "other"


def parent_item_id(span: PlainSpan) -> str | None:
    """The item id of the span's parent (stored or still to come), None for a root."""
    return trace_id_for(span.trace_id, span.parent_span_id) if span.parent_span_id else None


class SpanRefused(Exception):
    """A span that cannot become a trace whatever its attributes say (bad ids)."""


def span_to_item(span: PlainSpan, kind: str | None = None) -> dict[str, Any]:
    """The span as a trace item; ``kind`` overrides `span_kind` (a call that wraps other calls of its
    request is stored as a structural span: `services.otlp_export`)."""
    attrs = span.attributes
    if not span.trace_id or not span.span_id:
        raise SpanRefused("traceId must be 16 bytes and spanId 8 bytes, not all zero.")
    kind = kind or span_kind(attrs)
    is_call = kind in CALL_KINDS
    item: dict[str, Any] = {
        "id": trace_id_for(span.trace_id, span.span_id),
        "run_id": span.trace_id,
        "parent_id": parent_item_id(span),
        "kind": kind,
        "name": span.name[:MAX_NAME],
    }
    model = _first(attrs, MODEL_KEYS)
    if model is not None:
        item["model"] = model if isinstance(model, str) else str(model)
    elif is_call:
        item["model"] = UNKNOWN_MODEL
    provider = _first(attrs, PROVIDER_KEYS)
    if isinstance(provider, str) and provider:
        item["provider"] = PROVIDERS.get(provider.lower(), provider.lower())[:64]

    if is_call:  # a wrapper's usage is its calls' again: in its metadata, never counted twice
        _usage(attrs, item)
        _details(attrs, item)

    if span.start_unix_nano:
        # fixed64 nanoseconds end in the year 2554: always a valid datetime
        item["timestamp"] = datetime.fromtimestamp(span.start_unix_nano / 1e9, tz=UTC).isoformat()
        if span.end_unix_nano:
            item["latency_ms"] = (span.end_unix_nano - span.start_unix_nano) / 1e6
    ttft = _ttft_ms(span)
    if ttft is not None:
        item["time_to_first_token_ms"] = ttft

    _status(span, item)
    _context(span, item)
    item["input"], item["output"] = prompt_and_reply(attrs, span.events)
    tags = attrs.get("tag.tags")  # OpenInference
    if isinstance(tags, list):
        item["tags"] = [t[:200] for t in tags if isinstance(t, str) and t.strip()][: settings.TRACE_MAX_TAGS]
    item["metadata"] = metadata = _metadata(span, MAPPED_KEYS if is_call else STRUCTURAL_MAPPED_KEYS)
    requested = attrs.get("gen_ai.request.model")
    if requested and requested != item.get("model"):
        metadata["gen_ai.request.model"] = _bounded(requested)  # asked for one model, answered by another
    return item


def _usage(attrs: Mapping[str, Any], item: dict[str, Any]) -> None:
    prompt = _count(_first(attrs, PROMPT_TOKEN_KEYS))
    completion = _count(_first(attrs, COMPLETION_TOKEN_KEYS))
    total = _count(_first(attrs, TOTAL_TOKEN_KEYS))
    if prompt is not None:
        item["prompt_tokens"] = prompt
    if completion is not None:
        item["completion_tokens"] = completion
    if total is not None and (prompt is None or completion is None):
        # Only to complete a missing part: instrumentations disagree on what a total includes
        # (cached, reasoning tokens), and a mismatch would refuse an otherwise good span.
        item["total_tokens"] = total


def _details(attrs: Mapping[str, Any], item: dict[str, Any]) -> None:
    """The usage parts a span reports. Instrumentations of Anthropic that pass its ``input_tokens`` on
    as they are leave cache reads and writes out of the prompt: when the parts exceed the prompt, they
    are added to it (what Anthropic's own total would be)."""
    for name, keys in DETAIL_KEYS.items():
        value = _count(_first(attrs, keys))
        if value:
            item[name] = value
    counts = {k: v for k, v in item.items() if isinstance(v, int) and not isinstance(v, bool)}
    prompt = counts.get("prompt_tokens")
    cache = counts.get("cached_tokens", 0) + counts.get("cache_write_tokens", 0)
    if prompt is not None and cache > prompt:
        item["prompt_tokens"] = prompt + cache
    # Anything else that does not fit its whole is kept within it by `normalize_trace` (an OTLP span
    # is never refused over its usage parts: the call would be lost).


def _first(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return value
    return None


def _count(value: Any) -> Any:
    """Integers as they are; integral floats and digit strings (some SDKs send those) as integers.
    Anything else is passed on for `normalize_trace` to refuse with its message."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def _ttft_ms(span: PlainSpan) -> float | None:
    seconds = span.attributes.get("gen_ai.response.time_to_first_chunk")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds >= 0:
        return seconds * 1000
    for event in span.events:  # OpenInference marks the first streamed token with an event
        if event.name == "First Token Stream Event" and event.time_unix_nano >= span.start_unix_nano > 0:
            return (event.time_unix_nano - span.start_unix_nano) / 1e6
    return None


def _status(span: PlainSpan, item: dict[str, Any]) -> None:
    attrs = span.attributes
    error_type = attrs.get("error.type")
    exception = next((e.attributes for e in span.events if e.name == "exception"), None)
    if span.status_code != STATUS_ERROR and not error_type:
        return
    if not error_type and exception:
        error_type = exception.get("exception.type")
    message = span.status_message or (exception.get("exception.message") if exception else None) or ""
    error_type = str(error_type or "")[:200]
    http_status = attrs.get("http.response.status_code", attrs.get("http.status_code"))
    marker = error_type.lower().replace(" ", "")
    limited = http_status in (429, "429") or any(m in marker for m in RATE_LIMIT_MARKERS)
    item["status"] = "rate_limited" if limited else "error"
    item["error"] = {"type": error_type, "message": str(message)}


def _context(span: PlainSpan, item: dict[str, Any]) -> None:
    resource, attrs = span.resource, span.attributes
    values = {
        "service_name": resource.get("service.name"),
        "environment": _first(resource, ENVIRONMENT_KEYS) or _first(attrs, ENVIRONMENT_KEYS),
        "session_id": _first(attrs, SESSION_KEYS),
        "user_id": _first(attrs, USER_KEYS),
    }
    for name, value in values.items():
        if value is not None and value != "":
            # Cut to the column, not refused: an over-long session id is no reason to lose a call.
            item[name] = str(value).strip()[: TEXT_LIMITS[name]]


def _metadata(span: PlainSpan, mapped: frozenset[str]) -> dict[str, Any]:
    """The span's other attributes (not its content, not what became a field), bounded to the trace
    limits, and the OpenTelemetry ids for linking back to the trace in other tools."""
    metadata: dict[str, Any] = {"otel.trace_id": span.trace_id, "otel.span_id": span.span_id}
    if span.parent_span_id:
        metadata["otel.parent_span_id"] = span.parent_span_id
    metadata["otel.span_name"] = span.name[:MAX_METADATA_STRING]
    if span.scope_name:
        metadata["otel.scope"] = span.scope_name[:MAX_METADATA_STRING]
    room = settings.TRACE_MAX_METADATA_KEYS - OTEL_METADATA
    dropped = 0
    for key, value in span.attributes.items():
        keep = _keep(key, mapped)
        if not keep:
            continue
        if room <= 0:
            dropped += 1
            continue
        metadata[key] = value if type(value) is not str or len(value) <= MAX_METADATA_STRING else _bounded(value)
        room -= 1
    if dropped:
        metadata["otel.dropped_attributes"] = dropped
    return metadata


_KEEP: dict[str, bool] = {}  # attribute name → whether it goes to metadata (names repeat on every span)


def _keep(key: str, mapped: frozenset[str]) -> bool:
    """Whether an attribute goes to metadata: not content, not too long a name, not mapped to a field."""
    if key in mapped:
        return False
    keep = _KEEP.get(key)
    if keep is None:
        keep = not (is_content_key(key) or len(key) > MAX_METADATA_KEY_LENGTH)
        if len(_KEEP) < 10_000:  # bounded: a client inventing names must not grow it without end
            _KEEP[key] = keep
    return keep


def _bounded(value: Any) -> Any:
    if isinstance(value, str):
        return value[:MAX_METADATA_STRING]
    if isinstance(value, list):
        return [_bounded(v) for v in value[:100]]
    if isinstance(value, dict):
        return {str(k)[:MAX_METADATA_KEY_LENGTH]: _bounded(v) for k, v in list(value.items())[:100]}
    return value
