"""The OTLP endpoint in the OpenAPI document.

It is a plain async Django view speaking protobuf (not DRF), so drf-spectacular cannot see it; this
post-processing hook (SPECTACULAR_SETTINGS in config/settings/base.py) describes it.
"""

from __future__ import annotations

from typing import Any

TAG = "OTLP"
PATH = "/api/v1/otlp/v1/traces"
_BINARY = {"type": "string", "format": "binary"}
_STATUS = {
    "type": "object",
    "description": "google.rpc.Status (protobuf when the request was protobuf, else OTLP JSON).",
    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "details": {"type": "array"}},
}
_ERRORS = {
    "400": "The body is not a valid ExportTraceServiceRequest (protobuf, OTLP JSON or gzip).",
    "401": "Missing, malformed, unknown or revoked key.",
    "403": "The key lacks the ingest scope.",
    "413": "Over TRACERELAY_OTLP_MAX_BYTES (after decompression).",
    "415": "A Content-Type other than application/x-protobuf or application/json, or an encoding other than gzip.",
    "503": "Busy or the database is away: retry after Retry-After seconds.",
}


def _content(json_schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/x-protobuf": {"schema": _BINARY}, "application/json": {"schema": json_schema}}


def add_otlp_path(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    responses: dict[str, Any] = {
        "200": {
            "description": "ExportTraceServiceResponse; `partialSuccess` (rejectedSpans, errorMessage) when some "
            "spans were refused, the rest being stored.",
            "content": _content({"type": "object", "properties": {"partialSuccess": {"type": "object"}}}),
        }
    }
    for code, text in _ERRORS.items():
        responses[code] = {"description": text, "content": _content(_STATUS)}
    responses["503"]["headers"] = {"Retry-After": {"schema": {"type": "integer"}}}
    result.setdefault("paths", {})[PATH] = {
        "post": {
            "operationId": "otlp_traces_export",
            "tags": [TAG],
            "summary": "Send OpenTelemetry spans (OTLP/HTTP)",
            "description": "An OTLP ExportTraceServiceRequest, protobuf or OTLP JSON, optionally gzip "
            "(Content-Encoding). Every span is stored as a span of its run (run_id: the trace id; parent_id: "
            "the parent span's; kind from the GenAI, OpenInference or OpenLLMetry span kind, else llm for a "
            "span naming a model, else other). Answers follow the OTLP spec, not problem+json. See docs/otlp.md.",
            "requestBody": {"required": True, "content": _content({"type": "object"})},
            "responses": responses,
            "security": [{"ApiKey": []}, {"ServiceKey": []}],
        }
    }
    components = result.setdefault("components", {})
    components.setdefault("securitySchemes", {}).setdefault(
        "ServiceKey", {"type": "apiKey", "in": "header", "name": "X-Service-Key", "description": "A team API key."}
    )
    tags = result.setdefault("tags", [])
    if not any(t.get("name") == TAG for t in tags):
        tags.append({"name": TAG, "description": "OpenTelemetry trace ingest (docs/otlp.md)."})
    return result
