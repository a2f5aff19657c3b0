"""Protobuf spans to plain Python: what `mapping` reads, with no protobuf types past this module."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

STATUS_ERROR = 2  # Status.StatusCode.STATUS_CODE_ERROR


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_unix_nano: int
    attributes: dict[str, Any]


@dataclass(slots=True)
class PlainSpan:
    """One span with its resource's and scope's context, ids in hex ("" when the id is malformed)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_unix_nano: int
    end_unix_nano: int
    status_code: int
    status_message: str
    attributes: dict[str, Any]
    events: list[SpanEvent]
    resource: dict[str, Any]
    scope_name: str


def iter_spans(request: ExportTraceServiceRequest) -> Iterator[PlainSpan]:
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope_name = scope_spans.scope.name
            for span in scope_spans.spans:
                yield plain_span(span, resource, scope_name)


def count_spans(request: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def plain_span(span: Span, resource: dict[str, Any], scope_name: str) -> PlainSpan:
    return PlainSpan(
        trace_id=_id(span.trace_id, 16),
        span_id=_id(span.span_id, 8),
        parent_span_id=span.parent_span_id.hex() if len(span.parent_span_id) == 8 else "",
        name=span.name,
        kind=span.kind,
        start_unix_nano=span.start_time_unix_nano,
        end_unix_nano=span.end_time_unix_nano,
        status_code=span.status.code,
        status_message=span.status.message,
        attributes=attributes(span.attributes),
        events=[SpanEvent(e.name, e.time_unix_nano, attributes(e.attributes)) for e in span.events],
        resource=resource,
        scope_name=scope_name,
    )


def _id(raw: bytes, size: int) -> str:
    """Hex of a valid id; "" for a wrong length or all zeros (both invalid per the OTLP spec)."""
    if len(raw) != size or not any(raw):
        return ""
    return raw.hex()


def attributes(pairs: Any) -> dict[str, Any]:
    """Repeated `KeyValue` → {key: value}; the last wins on a repeated key, as in the SDKs."""
    out: dict[str, Any] = {}
    kv: KeyValue
    for kv in pairs:
        # The scalar cases inline: this loop runs for every attribute of every span.
        value = kv.value
        kind = value.WhichOneof("value")
        if kind == "string_value":
            out[kv.key] = value.string_value
        elif kind == "int_value":
            out[kv.key] = value.int_value
        else:
            out[kv.key] = any_value(value)
    return out


def any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return value.double_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None
