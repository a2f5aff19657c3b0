"""Datadog LLM Observability: the span intake ``POST https://api.<site>/api/intake/llm-obs/v1/trace/spans``
with ``DD-API-KEY``. One ``llm`` span per trace (a root: ``parent_id: "undefined"``), model and
provider in ``meta``, tokens in ``metrics`` (Datadog estimates cost itself; ours goes in
metadata), user/env/service/tags as span tags, session as ``session_id``.

Datadog refuses spans older than 24 hours; such a batch fails permanently up front rather than
being half-sent. A span's input/output over ~1 MB is replaced by Datadog's own placeholder text,
as its SDK does, and a request stays under the 5 MB payload limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from traces.records import TraceRecord

from .base import CheckResult, ExportError
from .calls import Call, Message, to_json
from .configs import Field
from .transport import HttpExporter

SITES = (
    "datadoghq.com",
    "us3.datadoghq.com",
    "us5.datadoghq.com",
    "datadoghq.eu",
    "ap1.datadoghq.com",
    "ap2.datadoghq.com",
    "ddog-gov.com",
)
MAX_AGE = timedelta(hours=24)
EVENT_IO_LIMIT = 1_000_000
PAYLOAD_LIMIT = 4_500_000
DROPPED_IO = "[This value has been dropped because this span's size exceeds the 1MB size limit.]"


def _messages(messages: list[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def _metadata_value(value: Any) -> Any:
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return to_json(value)


def _tag(key: str, value: str) -> str:
    return f"{key}:{value}".replace(",", "_")


def span_for(call: Call) -> dict[str, Any]:
    r = call.record
    meta: dict[str, Any] = {
        "kind": "embedding" if call.operation == "embeddings" else "llm",
        "model_name": r.model,
        "model_provider": r.provider or "custom",
        "input": {"messages": _messages(call.inputs)} if call.inputs else {"value": ""},
        "output": {"messages": _messages(call.outputs)} if call.outputs else {"value": ""},
        "metadata": {
            **{k: _metadata_value(v) for k, v in call.metadata.items()},
            **{k: _metadata_value(v) for k, v in call.parameters.items() if k in ("temperature", "max_tokens")},
            "model_name": r.model,
            "model_provider": r.provider or "custom",
            "tracerelay_trace_id": r.trace_id,
        },
    }
    if call.cost is not None:
        meta["metadata"]["tracerelay_cost_usd"] = call.cost
    if r.is_error:
        meta["error"] = {"message": call.error_message, "type": call.error_type}
    if len(to_json(meta["input"])) + len(to_json(meta["output"])) > EVENT_IO_LIMIT:
        meta["input"] = {"value": DROPPED_IO}
        meta["output"] = {"value": DROPPED_IO}
    metrics: dict[str, Any] = {
        "input_tokens": r.prompt_tokens,
        "output_tokens": r.completion_tokens,
        "total_tokens": r.total_tokens,
    }
    if r.time_to_first_token_ms is not None:
        metrics["time_to_first_token"] = r.time_to_first_token_ms / 1000
    tags = [_tag("source", "tracerelay")]
    if r.environment:
        tags.append(_tag("env", r.environment))
    if r.service_name:
        tags.append(_tag("service", r.service_name))
    if r.user_id:
        tags.append(_tag("user_id", r.user_id))
    tags.extend(t.replace(",", "_") for t in call.tags)
    span: dict[str, Any] = {
        "name": call.name,
        "span_id": str(int.from_bytes(call.otel_span_id, "big")),
        "trace_id": call.otel_trace_id.hex(),
        "parent_id": "undefined",
        "start_ns": call.start_ns(),
        "duration": max(0, call.end_ns() - call.start_ns()),
        "status": "error" if r.is_error else "ok",
        "meta": meta,
        "metrics": metrics,
        "tags": tags,
    }
    if r.session_id:
        span["session_id"] = r.session_id
    return span


class DatadogExporter(HttpExporter):
    platform = "datadog"
    label = "Datadog LLM Observability"
    max_batch = 100
    fields: ClassVar[tuple[Field, ...]] = (
        Field("apiKey", required=True, secret=True, max_length=200),
        Field("site", "choice", default="datadoghq.com", choices=SITES),
        Field(
            "mlApp",
            required=True,
            max_length=193,
            pattern=r"[a-z0-9_:./-]+",
            pattern_hint="lowercase letters, digits and _ - : . / only (Datadog's ml_app rule)",
        ),
        Field("endpoint", "base_url", help="Overrides https://api.<site> (a proxy or a private link)."),
    )

    @property
    def base_url(self) -> str:
        return str(self.config.get("endpoint") or f"https://api.{self.config['site']}")

    def headers(self) -> dict[str, str]:
        return {"DD-API-KEY": str(self.config["apiKey"])}

    def export(self, traces: Sequence[TraceRecord]) -> None:
        if not traces:
            return
        calls = [Call.of(record, self.target) for record in traces]
        oldest_allowed = datetime.now(UTC) - MAX_AGE
        too_old = [c.record.trace_id for c in calls if c.start < oldest_allowed]
        if too_old:
            raise ExportError(
                f"{self.destination} refuses spans older than 24 hours: {', '.join(too_old[:5])}"
                + (f" and {len(too_old) - 5} more" if len(too_old) > 5 else ""),
                permanent=True,
            )
        for chunk in _chunks([span_for(c) for c in calls]):
            body = {"data": {"type": "span", "attributes": {"ml_app": self.config["mlApp"], "spans": chunk}}}
            self.send(
                "POST",
                f"{self.base_url}/api/intake/llm-obs/v1/trace/spans",
                json=body,
                headers=self.headers(),
            )

    def check(self) -> CheckResult:
        """Datadog's key validation endpoint (``GET /api/v1/validate``)."""
        return self.probe(
            "GET",
            f"{self.base_url}/api/v1/validate",
            headers=self.headers(),
            ok_message=f"Datadog ({self.config['site']}) accepted the API key.",
        )


def _chunks(spans: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Spans grouped so that no request body passes the payload limit."""
    chunks: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    size = 0
    for span in spans:
        span_size = len(to_json(span))
        if current and size + span_size > PAYLOAD_LIMIT:
            chunks.append(current)
            current, size = [], 0
        current.append(span)
        size += span_size
    if current:
        chunks.append(current)
    return chunks
