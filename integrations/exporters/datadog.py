"""Datadog LLM Observability: the span intake ``POST https://api.<site>/api/intake/llm-obs/v1/trace/spans``
with ``DD-API-KEY``. One span per trace, of its Datadog kind (``llm``, ``embedding``, ``agent``, ``tool``,
``retrieval``, ``workflow`` for chains and workflows, ``task`` for the rest); a run's spans share one
``trace_id`` and each names its parent's ``span_id`` in ``parent_id`` (``"undefined"`` for the root). Model and
provider in ``meta``, tokens in ``metrics`` (Datadog estimates cost itself; ours goes in
metadata), user/env/service/tags as span tags, session as ``session_id``.

Datadog's intake accepts spans at most 24 hours old: an older trace is refused when it is encoded
(`Unencodable`), so delivery dead-letters it (or hands it to a fallback) with that reason and
sends the rest of its batch. A span's input/output over ~1 MB is replaced by Datadog's own placeholder text,
as its SDK does, and a request stays under the 5 MB payload limit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import quote

from traces.records import ScoreRecord, TraceRecord

from . import ids
from .base import CheckResult, Encoded, ExportError, Refused, Unencodable
from .calls import Call, Message, iso, since_1970_ns, to_json
from .configs import Field
from .transport import HttpExporter, errors_in_answer

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


# Our span kinds → Datadog LLM Observability span kinds (llm, agent, tool, task, workflow, retrieval,
# embedding): a chain is a workflow, anything else a task.
SPAN_KINDS = {
    "llm": "llm",
    "embedding": "embedding",
    "agent": "agent",
    "tool": "tool",
    "retrieval": "retrieval",
    "chain": "workflow",
    "workflow": "workflow",
    "guardrail": "task",
    "event": "task",
    "other": "task",
}


def _value(value: Any) -> dict[str, str]:
    return {"value": "" if value is None else value if isinstance(value, str) else to_json(value)}


def _meta(call: Call) -> dict[str, Any]:
    r = call.record
    if not call.is_call:  # agent, tool, task …: input and output as values, no model
        return {
            "kind": SPAN_KINDS.get(r.kind, "task"),
            "input": _value(r.input),
            "output": _value(r.output),
            "metadata": {
                **{k: _metadata_value(v) for k, v in call.metadata.items()},
                "tracerelay_trace_id": r.trace_id,
                "tracerelay_kind": r.kind,
            },
        }
    return {
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


def span_for(call: Call) -> dict[str, Any]:
    r = call.record
    meta = _meta(call)
    if call.cost is not None:
        meta["metadata"]["tracerelay_cost_usd"] = call.cost
    if r.is_error:
        meta["error"] = {"message": call.error_message, "type": call.error_type}
    if len(to_json(meta["input"])) + len(to_json(meta["output"])) > EVENT_IO_LIMIT:
        meta["input"] = {"value": DROPPED_IO}
        meta["output"] = {"value": DROPPED_IO}
    metrics: dict[str, Any] = {}
    if call.is_call:
        metrics = {
            "input_tokens": r.prompt_tokens,
            "output_tokens": r.completion_tokens,
            "total_tokens": r.total_tokens,
        }
        # LLM Observability's cache and reasoning metrics, when the call reported them.
        for key, value in (
            ("cache_read_input_tokens", r.cached_tokens),
            ("cache_write_input_tokens", r.cache_write_tokens),
            ("reasoning_output_tokens", r.reasoning_tokens),
        ):
            if value:
                metrics[key] = value
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
        # A root's parent is the literal "undefined"; a child names its parent's span id.
        "parent_id": str(int.from_bytes(call.otel_parent_span_id, "big")) if call.otel_parent_span_id else "undefined",
        "start_ns": since_1970_ns(call.start, "Datadog"),
        "duration": max(0, call.end_ns() - call.start_ns()),
        "status": "error" if r.is_error else "ok",
        "meta": meta,
        "metrics": metrics,
        "tags": tags,
    }
    if r.session_id:
        span["session_id"] = r.session_id
    return span


_LABEL_INVALID = re.compile(r"[^A-Za-z0-9_]")
_EVAL_TYPES = {
    "numeric": ("score", "score_value"),
    "boolean": ("boolean", "boolean_value"),
    "categorical": ("categorical", "categorical_value"),
}


def evaluation_label(name: str) -> str:
    """Datadog's label rule: ASCII letters, digits and underscores, starting with a letter, ≤ 200."""
    label = _LABEL_INVALID.sub("_", name)
    return (label if label[:1].isalpha() else f"s_{label}")[:200]


def evaluation_for(score: ScoreRecord, ml_app: str) -> dict[str, Any]:
    """One evaluation metric joined to the span our trace became (its span and trace ids)."""
    metric_type, value_key = _EVAL_TYPES[score.data_type]
    metric: dict[str, Any] = {
        "join_on": {
            "span": {
                "span_id": str(int.from_bytes(ids.otel_span_id(score.team_id, score.trace_id), "big")),
                "trace_id": ids.otel_trace_id(score.team_id, score.run_id or score.trace_id).hex(),
            }
        },
        "ml_app": ml_app,
        "timestamp_ms": int(score.created_at.timestamp() * 1000),
        "metric_type": metric_type,
        "label": evaluation_label(score.name),
        value_key: score.value,
        "tags": [f"source:{score.source}", "tracerelay_score_id:" + score.score_id],
    }
    if score.comment:
        metric["reasoning"] = score.comment
    return metric


class DatadogExporter(HttpExporter):
    platform = "datadog"
    label = "Datadog LLM Observability"
    max_batch = 100
    supports_scores = True
    fields: ClassVar[tuple[Field, ...]] = (
        Field("apiKey", required=True, secret=True, max_length=200),
        Field("site", "choice", default="datadoghq.com", choices=SITES, address=True),
        Field(
            "mlApp",
            required=True,
            max_length=193,
            pattern=r"[a-z0-9_:./-]+",
            pattern_hint="lowercase letters, digits and _ - : . / only (Datadog's ml_app rule)",
        ),
        Field("endpoint", "base_url", help="Overrides https://api.<site> (a proxy or a private link)."),
    )

    @classmethod
    def trace_url(cls, config: Mapping[str, Any], *, team_id: int, trace_id: str, run_id: str) -> str | None:
        """LLM Observability's trace list searched for the trace id our span went under (the run's):
        ``https://app.<site>/llm/traces?query=trace_id:<hex>`` (us3/us5/ap1 sites have no ``app.``)."""
        site = str(config.get("site") or "datadoghq.com")
        app = f"app.{site}" if site in ("datadoghq.com", "datadoghq.eu", "ddog-gov.com") else site
        trace = ids.otel_trace_id(team_id, run_id or trace_id).hex()
        return f"https://{app}/llm/traces?query={quote(f'trace_id:{trace}', safe=':')}"

    @property
    def base_url(self) -> str:
        return str(self.config.get("endpoint") or f"https://api.{self.config['site']}")

    def headers(self) -> dict[str, str]:
        return {"DD-API-KEY": str(self.config["apiKey"])}

    def encode(self, record: TraceRecord) -> bytes:
        call = Call.of(record, self.target)
        if call.start < datetime.now(UTC) - MAX_AGE:
            raise Unencodable(
                f"it started at {iso(call.start)}, more than 24 hours ago, and Datadog's intake accepts "
                "spans at most 24 hours old"
            )
        return to_json(span_for(call)).encode()

    def export_encoded(self, batch: Sequence[Encoded]) -> Refused | None:
        """One request per chunk under the payload limit. A chunk that fails after another went
        through refuses its own spans only (the spans already taken are not sent again); a failure
        of the first chunk is the whole batch's. A 2xx whose body reports errors fails its chunk."""
        head = b'{"data":{"type":"span","attributes":{"ml_app":' + to_json(self.config["mlApp"]).encode()
        refused: Refused = {}
        start = 0
        for chunk in _chunks([e.item for e in batch]):
            indexes = range(start, start + len(chunk))
            start += len(chunk)
            body = head + b',"spans":[' + b",".join(chunk) + b"]}}}"
            try:
                response = self.send(
                    "POST",
                    f"{self.base_url}/api/intake/llm-obs/v1/trace/spans",
                    content=body,
                    headers={**self.headers(), "Content-Type": "application/json"},
                )
                reported = errors_in_answer(response)
                if reported:
                    raise ExportError(
                        f"{self.destination} answered HTTP {response.status_code} with errors: {reported}",
                        status_code=response.status_code,
                    )
            except ExportError as exc:
                if indexes.start == 0 and len(indexes) == len(batch):
                    raise
                refused.update(dict.fromkeys(indexes, exc))
        return refused or None

    def export_scores(self, scores: Sequence[ScoreRecord]) -> None:
        """LLM Observability evaluations: ``POST /api/intake/llm-obs/v2/eval-metric``, each joined to
        the span our trace became; a comment goes as the evaluation's ``reasoning``."""
        if not scores:
            return
        body = {
            "data": {
                "type": "evaluation_metric",
                "attributes": {"metrics": [evaluation_for(s, str(self.config["mlApp"])) for s in scores]},
            }
        }
        self.send(
            "POST",
            f"{self.base_url}/api/intake/llm-obs/v2/eval-metric",
            content=to_json(body).encode(),
            headers={**self.headers(), "Content-Type": "application/json"},
        )

    def check(self) -> CheckResult:
        """Datadog's key validation endpoint (``GET /api/v1/validate``)."""
        return self.probe(
            "GET",
            f"{self.base_url}/api/v1/validate",
            headers=self.headers(),
            ok_message=f"Datadog ({self.config['site']}) accepted the API key.",
        )


def _chunks(spans: list[bytes]) -> list[list[bytes]]:
    """Encoded spans grouped so that no request body passes the payload limit."""
    chunks: list[list[bytes]] = []
    current: list[bytes] = []
    size = 0
    for span in spans:
        if current and size + len(span) > PAYLOAD_LIMIT:
            chunks.append(current)
            current, size = [], 0
        current.append(span)
        size += len(span) + 1
    if current:
        chunks.append(current)
    return chunks
