"""The one OTLP encoder shared by the OpenTelemetry-family exporters (generic OTLP, Phoenix,
MLflow, Langfuse, Weave).

Every span of a run shares one trace id (derived from the team and the run id) and names its
parent's span id, so a destination gets the run's tree. A call becomes a CLIENT span named
``{operation} {model}``; a structural span an INTERNAL span named by its ``name`` (agents and tools
with their GenAI ``invoke_agent`` / ``execute_tool`` attributes). A call carries the OpenTelemetry
GenAI semantic conventions (``gen_ai.*``, the last in-repo version of the registry, with the
deprecated ``gen_ai.system`` beside ``gen_ai.provider.name`` for older consumers) plus our own
``tracerelay.*`` attributes. A platform adds its own attributes through two hooks: resource
attributes (e.g. Phoenix's project) and span attributes (OpenInference, ``langfuse.*``).
Each trace is encoded on its own (`encode_span`: one that cannot be represented fails alone), and
`assemble` groups the spans of a batch into one request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from traces.records import ScoreRecord

from . import ids
from .calls import Call, Message, genai_provider, since_1970_ns, to_json

SCOPE_NAME = "tracerelay"
SCOPE_VERSION = "1.0.0"
SPAN_KIND_CLIENT = Span.SpanKind.SPAN_KIND_CLIENT
SPAN_KIND_INTERNAL = Span.SpanKind.SPAN_KIND_INTERNAL
FLAG_SAMPLED = 0x01

Attributes = dict[str, Any]
AttributeHook = Callable[[Call], Attributes]


def set_value(target: AnyValue, value: Any) -> None:
    """Write a Python value into an OTLP AnyValue in place (no intermediate messages: this is
    the encoder's hot loop). Lists of scalars stay arrays; dicts and odd lists become JSON
    strings (most backends read JSON-string attributes, few read kvlists)."""
    if isinstance(value, str):
        target.string_value = value
    elif isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        if -(2**63) <= value < 2**63:
            target.int_value = value
        else:
            target.string_value = str(value)
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, (list, tuple)) and all(isinstance(v, (str, bool, int, float)) for v in value):
        values = target.array_value.values
        for item in value:
            set_value(values.add(), item)
    else:
        target.string_value = to_json(value)


def any_value(value: Any) -> AnyValue:
    out = AnyValue()
    set_value(out, value)
    return out


def add_attributes(container: Any, attributes: Mapping[str, Any]) -> None:
    """Append ``attributes`` (None and "" skipped) to a repeated KeyValue field."""
    for key, value in attributes.items():
        if value is None or value == "":
            continue
        kv = container.add()
        kv.key = key
        set_value(kv.value, value)


def _semconv_message(message: Message) -> dict[str, Any]:
    """A message in the GenAI JSON schema: ``{role, parts:[{type, content}|tool_call], finish_reason?}``."""
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        parts.append({"type": "tool_call_response", "id": message.tool_call_id, "response": message.content})
    elif message.content:
        parts.append({"type": "text", "content": message.content})
    for call in message.tool_calls:
        parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments})
    out: dict[str, Any] = {"role": message.role, "parts": parts}
    return out


def genai_input_messages(call: Call) -> str | None:
    return to_json([_semconv_message(m) for m in call.inputs]) if call.inputs else None


def genai_output_messages(call: Call) -> str | None:
    if not call.outputs:
        return None
    messages = []
    for m in call.outputs:
        item = _semconv_message(m)
        item["finish_reason"] = _finish_reason(m.finish_reason, call)
        messages.append(item)
    return to_json(messages)


def _finish_reason(reason: str, call: Call) -> str:
    """Provider reasons → the semconv enum (stop, length, content_filter, tool_call, error)."""
    mapped = {
        "stop": "stop",
        "end_turn": "stop",
        "stop_sequence": "stop",
        "length": "length",
        "max_tokens": "length",
        "content_filter": "content_filter",
        "tool_calls": "tool_call",
        "tool_use": "tool_call",
        "function_call": "tool_call",
    }.get(reason)
    if mapped:
        return mapped
    return "error" if call.record.is_error else "stop"


# Our token parts → the GenAI semantic conventions' usage attributes: cache reads and writes
# (semantic-conventions#3163), reasoning (#3383), and the per-modality breakdown of
# semantic-conventions-genai (`gen_ai.usage.{audio,image}.{input,output}_tokens`).
GENAI_USAGE_PARTS = {
    "cached_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_write_tokens": "gen_ai.usage.cache_creation.input_tokens",
    "input_audio_tokens": "gen_ai.usage.audio.input_tokens",
    "input_image_tokens": "gen_ai.usage.image.input_tokens",
    "reasoning_tokens": "gen_ai.usage.reasoning.output_tokens",
    "output_audio_tokens": "gen_ai.usage.audio.output_tokens",
    "output_image_tokens": "gen_ai.usage.image.output_tokens",
}


def genai_attributes(call: Call) -> Attributes:
    """The OpenTelemetry GenAI semantic-convention attributes of one inference span."""
    r = call.record
    provider = genai_provider(r.provider)
    attrs: Attributes = {
        "gen_ai.operation.name": call.operation,
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,  # deprecated in semconv 1.37; older consumers still read it
        "gen_ai.request.model": r.model,
        "gen_ai.response.model": r.model,
        "gen_ai.usage.input_tokens": r.prompt_tokens,
        "gen_ai.usage.output_tokens": r.completion_tokens,
    }
    # The semantic conventions' usage breakdown (parts of input_tokens / output_tokens), when reported.
    for name, key in GENAI_USAGE_PARTS.items():
        value = getattr(r, name)
        if value:
            attrs[key] = value
    for key in ("temperature", "top_p", "top_k", "frequency_penalty", "presence_penalty", "seed"):
        value = call.parameters.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attrs[f"gen_ai.request.{key}"] = value
    max_tokens = call.parameters.get("max_tokens", call.parameters.get("max_completion_tokens"))
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
        attrs["gen_ai.request.max_tokens"] = max_tokens
    stop = call.parameters.get("stop")
    if isinstance(stop, str):
        attrs["gen_ai.request.stop_sequences"] = [stop]
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        attrs["gen_ai.request.stop_sequences"] = stop
    if call.parameters.get("stream") is True:
        attrs["gen_ai.request.stream"] = True
    if call.finish_reasons:
        attrs["gen_ai.response.finish_reasons"] = [_finish_reason(f, call) for f in call.finish_reasons]
    if r.time_to_first_token_ms is not None:
        attrs["gen_ai.response.time_to_first_chunk"] = r.time_to_first_token_ms / 1000
    if r.session_id:
        attrs["gen_ai.conversation.id"] = r.session_id
        attrs["session.id"] = r.session_id
    if r.user_id:
        attrs["user.id"] = r.user_id
    if call.error_type:
        attrs["error.type"] = call.error_type
    attrs["gen_ai.input.messages"] = genai_input_messages(call)
    attrs["gen_ai.output.messages"] = genai_output_messages(call)
    return attrs


def structural_attributes(call: Call) -> Attributes:
    """A structural span's GenAI attributes: agents (``invoke_agent``, ``gen_ai.agent.name``) and tools
    (``execute_tool``, ``gen_ai.tool.name``, the call's arguments and result); its input and output
    as JSON for every kind."""
    r = call.record
    attrs: Attributes = {}
    if call.operation:
        attrs["gen_ai.operation.name"] = call.operation
    if r.kind == "agent":
        attrs["gen_ai.agent.name"] = r.name
    elif r.kind == "tool":
        attrs["gen_ai.tool.name"] = r.name
        attrs["gen_ai.tool.type"] = "function"
        if r.input is not None:
            attrs["gen_ai.tool.call.arguments"] = to_json(r.input)
        if r.output is not None:
            attrs["gen_ai.tool.call.result"] = to_json(r.output)
    if r.session_id:
        attrs["gen_ai.conversation.id"] = r.session_id
        attrs["session.id"] = r.session_id
    if r.user_id:
        attrs["user.id"] = r.user_id
    if call.error_type:
        attrs["error.type"] = call.error_type
    if r.input is not None:
        attrs["tracerelay.input"] = to_json(r.input)
    if r.output is not None:
        attrs["tracerelay.output"] = to_json(r.output)
    return attrs


def tracerelay_attributes(call: Call) -> Attributes:
    """Our own attributes: the public trace id, the span's place in its run, cost (GenAI semconv has
    no cost key), tags, metadata (after the integration's mapping, one attribute per key) and
    pricing flags."""
    r = call.record
    attrs: Attributes = {
        "tracerelay.trace_id": r.trace_id,
        "tracerelay.run_id": r.run,
        "tracerelay.kind": r.kind,
        "tracerelay.parent_id": r.parent_id,
        "tracerelay.status": r.status,
        "tracerelay.usage.total_tokens": r.total_tokens,
        "tracerelay.latency_ms": r.latency_ms,
        "tracerelay.source": r.source,
    }
    if call.cost is not None:
        attrs["tracerelay.cost_usd"] = call.cost
        attrs["gen_ai.usage.cost"] = call.cost  # not semconv; Langfuse and others read it
    if r.unpriced:
        attrs["tracerelay.unpriced"] = True
    if r.usage_estimated:
        attrs["tracerelay.usage_estimated"] = True
    if call.tags:
        attrs["tracerelay.tags"] = list(call.tags)
    for key, value in call.metadata.items():
        attrs[f"tracerelay.metadata.{key}"] = value if isinstance(value, (str, bool, int, float)) else to_json(value)
    return attrs


def default_resource_attributes(call: Call) -> Attributes:
    r = call.record
    attrs: Attributes = {
        "service.name": r.service_name or "tracerelay",
        "telemetry.sdk.name": "tracerelay",
        "telemetry.sdk.language": "python",
    }
    if r.environment:
        attrs["deployment.environment.name"] = r.environment
        attrs["deployment.environment"] = r.environment  # pre-1.27 name, still widely read
    return attrs


def default_span_attributes(call: Call) -> Attributes:
    if not call.is_call:
        return {**structural_attributes(call), **tracerelay_attributes(call)}
    return {**genai_attributes(call), **tracerelay_attributes(call)}


def build_span(call: Call, attributes: Attributes, span: Span | None = None) -> Span:
    """Fill ``span`` (a new one when None) for this call."""
    r = call.record
    span = span if span is not None else Span()
    span.trace_id = call.otel_trace_id
    span.span_id = call.otel_span_id
    if call.otel_parent_span_id:
        span.parent_span_id = call.otel_parent_span_id
    span.flags = FLAG_SAMPLED
    span.name = call.name
    span.kind = SPAN_KIND_CLIENT if call.is_call else SPAN_KIND_INTERNAL
    span.start_time_unix_nano = since_1970_ns(call.start, "OTLP")
    span.end_time_unix_nano = since_1970_ns(call.end, "OTLP")
    add_attributes(span.attributes, attributes)
    if r.is_error:
        span.status.code = Status.STATUS_CODE_ERROR
        span.status.message = call.error_message
        # Recording Errors convention: an exception event with type and message.
        event = span.events.add()
        event.name = "exception"
        event.time_unix_nano = call.end_ns()
        add_attributes(event.attributes, {"exception.type": call.error_type, "exception.message": call.error_message})
    else:
        span.status.code = Status.STATUS_CODE_OK
    return span


@dataclass(frozen=True, slots=True)
class EncodedSpan:
    """One trace as an OTLP span, with the resource it belongs to (`Exporter.encode`'s item)."""

    resource: Attributes
    span: Span


def encode_span(
    call: Call,
    *,
    resource_attributes: AttributeHook = default_resource_attributes,
    span_attributes: AttributeHook = default_span_attributes,
) -> EncodedSpan:
    """One call → its span; raises when the call cannot be represented (a time before 1970 …)."""
    return EncodedSpan(resource_attributes(call), build_span(call, span_attributes(call)))


def assemble(spans: Iterable[EncodedSpan]) -> ExportTraceServiceRequest:
    """Spans → one `ExportTraceServiceRequest`, grouped by identical resource attributes."""
    request = ExportTraceServiceRequest()
    groups: dict[str, ScopeSpans] = {}
    for encoded in spans:
        key = to_json(sorted(encoded.resource.items()))
        scope_spans = groups.get(key)
        if scope_spans is None:
            resource_spans: ResourceSpans = request.resource_spans.add()
            add_attributes(resource_spans.resource.attributes, encoded.resource)
            scope_spans = resource_spans.scope_spans.add()
            scope_spans.scope.CopyFrom(InstrumentationScope(name=SCOPE_NAME, version=SCOPE_VERSION))
            groups[key] = scope_spans
        scope_spans.spans.append(encoded.span)
    return request


# --- scores as log records -----------------------------------------------------------------------
SCORE_EVENT = "tracerelay.score"
SCORE_RESOURCE: Attributes = {"service.name": "tracerelay", "telemetry.sdk.name": "tracerelay"}


def score_attributes(score: ScoreRecord) -> Attributes:
    """``tracerelay.score.*``: the value keeps its type (a double, a bool or a string)."""
    value: Any = float(score.value) if score.data_type == "numeric" else score.value
    return {
        "tracerelay.score.id": score.score_id,
        "tracerelay.score.name": score.name,
        "tracerelay.score.value": value,
        "tracerelay.score.data_type": score.data_type,
        "tracerelay.score.comment": score.comment or None,
        "tracerelay.score.source": score.source,
        "tracerelay.trace_id": score.trace_id,
    }


def score_logs(scores: Iterable[ScoreRecord]) -> ExportLogsServiceRequest:
    """Scores → one `ExportLogsServiceRequest`: each an INFO log record named ``tracerelay.score``
    (``event_name``), timed at the score, on the trace id and span id its trace was sent with, so a
    backend shows it beside that span."""
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    add_attributes(resource_logs.resource.attributes, SCORE_RESOURCE)
    scope_logs = resource_logs.scope_logs.add()
    scope_logs.scope.CopyFrom(InstrumentationScope(name=SCOPE_NAME, version=SCOPE_VERSION))
    for score in scores:
        record = scope_logs.log_records.add()
        record.time_unix_nano = record.observed_time_unix_nano = since_1970_ns(score.created_at, "OTLP")
        record.severity_number = SeverityNumber.SEVERITY_NUMBER_INFO
        record.severity_text = "INFO"
        record.event_name = SCORE_EVENT
        record.body.string_value = f"score {score.name} = {to_json(score.value)}"
        record.trace_id = ids.otel_trace_id(score.team_id, score.run_id or score.trace_id)
        record.span_id = ids.otel_span_id(score.team_id, score.trace_id)
        record.flags = FLAG_SAMPLED
        add_attributes(record.attributes, score_attributes(score))
    return request
