"""Records → the trace dicts of `POST /api/v1/traces` (docs/api.md), on the worker thread."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from . import __version__
from ._config import Config
from ._ids import new_trace_id
from ._jsonable import jsonable
from ._records import Call, Span

MAX_TEXT = 200
MAX_MESSAGE = 4000


def to_trace(item: Call | Span, config: Config) -> tuple[dict[str, Any], str]:
    """(the trace, the id its sampling hangs on: its run's, so a run is kept or dropped whole)."""
    if isinstance(item, Span):
        return _span_trace(item, config), item.run_id
    trace = _call_trace(item, config)
    return trace, item.span.run_id if item.span is not None else trace["id"]


# The span name of a call, as the GenAI semantic conventions write it: "{operation} {model}".
OPERATIONS = {"embeddings": "embeddings", "generate_content": "generate_content"}


def _call_trace(call: Call, config: Config) -> dict[str, Any]:
    fields = call.build(call) if call.result is not None or call.chunks else {}
    model = fields.pop("model", None) or call.request.get("model") or "unknown"
    first = fields.pop("_first", None)
    asked = call.request.get("model") or model
    trace: dict[str, Any] = {
        "id": new_trace_id(),
        "kind": "embedding" if call.endpoint == "embeddings" else "llm",
        "name": f"{OPERATIONS.get(call.endpoint, 'chat')} {asked}"[:MAX_TEXT],
        "model": str(model)[:MAX_TEXT],
        "provider": call.provider,
        "timestamp": _iso(call.started),
        "latency_ms": _ms(call.t1 - call.t0),
        **fields,
    }
    if call.stream and first is not None:
        trace["time_to_first_token_ms"] = _ms(first - call.t0)
    if config.capture_content:
        trace["input"] = jsonable(call.request)
    else:
        trace.pop("output", None)
    metadata: dict[str, Any] = {
        "sdk": {"name": "tracerelay-python", "version": __version__, "endpoint": call.endpoint, "stream": call.stream}
    }
    if call.usage_injected:
        metadata["sdk"]["usage_injected"] = True
    if call.error is not None:
        status = _add_error(trace, call.error, billed=bool(call.chunks))
        if status is not None:
            metadata["status_code"] = status
    span = call.span
    tags: list[str] = []
    if span is not None:
        trace["run_id"] = span.run_id
        trace["parent_id"] = span.id
        _add_people(trace, span)
        tags = span.tags
    _add_common(trace, metadata, tags, config)
    return trace


def _span_trace(span: Span, config: Config) -> dict[str, Any]:
    """A block: a structural span of its run, with no model, provider or tokens."""
    trace: dict[str, Any] = {
        "id": span.id,
        "run_id": span.run_id,
        "parent_id": span.parent_id,
        "kind": span.kind,
        "name": str(span.name)[:MAX_TEXT],
        "timestamp": _iso(span.started),
        "latency_ms": _ms(span.t1 - span.t0),
    }
    if config.capture_content:
        trace["input"] = jsonable(span.input)
        trace["output"] = jsonable(span.output)
    if span.error is not None:
        _add_error(trace, span.error, billed=False, tokens=False)
    _add_people(trace, span)
    metadata: dict[str, Any] = {**jsonable(span.metadata), "sdk": {"name": "tracerelay-python", "version": __version__}}
    _add_common(trace, metadata, span.tags, config)
    return trace


def _add_people(trace: dict[str, Any], span: Span) -> None:
    if span.session_id:
        trace["session_id"] = str(span.session_id)[:MAX_TEXT]
    if span.user_id:
        trace["user_id"] = str(span.user_id)[:MAX_TEXT]


def _add_common(trace: dict[str, Any], metadata: dict[str, Any], tags: list[str], config: Config) -> None:
    if config.service_name:
        trace["service_name"] = config.service_name[:MAX_TEXT]
    if config.environment:
        trace["environment"] = config.environment[:64]
    all_tags = [*config.tags, *tags]
    if all_tags:
        trace["tags"] = list(dict.fromkeys(str(t)[:MAX_TEXT] for t in all_tags if str(t).strip()))[:50]
    trace["metadata"] = dict(list(metadata.items())[:64])


def _add_error(trace: dict[str, Any], error: BaseException, *, billed: bool, tokens: bool = True) -> int | None:
    """Status and error from an exception; returns the HTTP status the provider answered, if any."""
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    trace["status"] = "rate_limited" if status == 429 else "error"
    trace["error"] = {"type": type(error).__name__[:MAX_TEXT], "message": str(error)[:MAX_MESSAGE]}
    if tokens and not billed and "prompt_tokens" not in trace:
        # No reply, no usage: nothing was billed (an estimate from the prompt would be wrong).
        trace["prompt_tokens"] = trace["completion_tokens"] = 0
    return status if isinstance(status, int) else None


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat()  # noqa: UP017 - 3.10 has no UTC


def _ms(seconds: float) -> float:
    return round(max(seconds, 0.0) * 1000, 3)
