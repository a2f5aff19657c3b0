"""OTLP requests built from plain values, as an OpenTelemetry SDK's exporter would encode them."""

from __future__ import annotations

import base64
import gzip
import itertools
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

START = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z in ns
PATH = "/api/v1/otlp/v1/traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ids = itertools.count(1)


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, list | tuple):
        return AnyValue(array_value=ArrayValue(values=[any_value(v) for v in value]))
    if isinstance(value, dict):
        return AnyValue(kvlist_value=KeyValueList(values=kvs(value)))
    raise TypeError(value)


def kvs(attrs: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=any_value(v)) for k, v in attrs.items()]


def span(
    attrs: dict[str, Any] | None = None,
    *,
    name: str = "chat gpt-4o-mini",
    trace_id: bytes | None = None,
    span_id: bytes | None = None,
    parent_span_id: bytes = b"",
    start: int = START,
    duration_ms: float = 850,
    status: int = 0,
    status_message: str = "",
    events: list[tuple[str, int, dict[str, Any]]] = (),  # type: ignore[assignment]
) -> Span:
    n = next(_ids)
    return Span(
        trace_id=trace_id if trace_id is not None else n.to_bytes(16, "big"),
        span_id=span_id if span_id is not None else (n + 1000).to_bytes(8, "big"),
        parent_span_id=parent_span_id,
        name=name,
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=start,
        end_time_unix_nano=start + int(duration_ms * 1_000_000) if start else 0,
        attributes=kvs(attrs or {}),
        events=[Span.Event(name=e, time_unix_nano=t, attributes=kvs(a)) for e, t, a in events],
        status=Status(code=status, message=status_message),
    )


def llm_span(**extra: Any) -> Span:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 7,
    }
    attrs.update(extra.pop("attrs", {}))
    return span(attrs, **extra)


def export_request(*spans: Span, resource: dict[str, Any] | None = None) -> ExportTraceServiceRequest:
    resource = {"service.name": "checkout", **(resource or {})}
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=kvs(resource)),
                scope_spans=[ScopeSpans(spans=list(spans))],
            )
        ]
    )


def protobuf(*spans: Span, **kwargs: Any) -> bytes:
    return export_request(*spans, **kwargs).SerializeToString()


def otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """OTLP JSON as the spec writes it: lowerCamelCase names, hex ids, integer enums."""
    data = json_format.MessageToDict(request, use_integers_for_enums=True)
    for rs in data.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in s:
                        s[name] = base64.b64decode(s[name]).hex()
    return data


def gz(data: bytes) -> bytes:
    return gzip.compress(data)
