"""Langfuse: its OTLP endpoint ``{host}/api/public/otel/v1/traces`` (the legacy batch ingestion
API is deprecated and gone from Langfuse v4), Basic auth with the project's key pair, and the
``langfuse.*`` attributes Langfuse maps first (generation type, model, usage and cost details,
level, trace tags/metadata/input/output, environment). A run is one Langfuse trace: every span
shares its OTLP trace id and names its parent, which Langfuse reads as ``parentObservationId``;
agents, tools, retrievals and chains become observations of those types."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import quote

from traces.records import ScoreRecord, TraceRecord

from . import ids
from .base import CheckResult
from .calls import Call, iso, to_json
from .configs import Field
from .otlp import OtlpExporter

# Langfuse's environment rule: lowercase letters, digits, - and _, at most 40, not "langfuse…".
_ENV_INVALID = re.compile(r"[^a-z0-9_-]+")


# Our usage parts → Langfuse's usage-detail keys (as its OpenAI and Anthropic integrations name them).
LANGFUSE_DETAILS = {
    "cached_tokens": "input_cached_tokens",
    "cache_write_tokens": "input_cache_creation",
    "input_audio_tokens": "input_audio_tokens",
    "input_image_tokens": "input_image_tokens",
    "reasoning_tokens": "output_reasoning_tokens",
    "output_audio_tokens": "output_audio_tokens",
    "output_image_tokens": "output_image_tokens",
}


def _usage_details(r: TraceRecord) -> dict[str, int]:
    """Langfuse prices each usage key apart, so a part is taken out of ``input`` or ``output`` (as
    Langfuse's own OpenAI integration does) rather than counted twice."""
    details = {"input": r.prompt_tokens, "output": r.completion_tokens, "total": r.total_tokens}
    for name, key in LANGFUSE_DETAILS.items():
        value = getattr(r, name)
        if value:
            details[key] = value
            details["input" if key.startswith("input") else "output"] -= value
    details["input"], details["output"] = max(details["input"], 0), max(details["output"], 0)
    return details


def langfuse_environment(environment: str) -> str:
    env = _ENV_INVALID.sub("-", environment.strip().lower()).strip("-")[:40]
    return "" if env.startswith("langfuse") else env


_LANGFUSE_TYPES = {"numeric": "NUMERIC", "boolean": "BOOLEAN", "categorical": "CATEGORICAL"}


def langfuse_score(score: ScoreRecord, destination: str) -> dict[str, Any]:
    """``POST /api/public/scores``: on the trace and observation our OTLP span became (the ids the
    exporter derives for it); a boolean goes as 1/0 with dataType BOOLEAN, as Langfuse wants."""
    value: Any = score.value
    if score.data_type == "boolean":
        value = 1 if score.value else 0
    body: dict[str, Any] = {
        "id": str(ids.score_uuid(score.team_id, score.score_id, destination)),
        "traceId": ids.otel_trace_id(score.team_id, score.run_id or score.trace_id).hex(),
        "observationId": ids.otel_span_id(score.team_id, score.trace_id).hex(),
        "name": score.name,
        "value": value,
        "dataType": _LANGFUSE_TYPES[score.data_type],
        "metadata": {"source": score.source, "tracerelay_score_id": score.score_id},
    }
    if score.comment:
        body["comment"] = score.comment
    return body


def _scalar(value: Any) -> Any:
    return value if isinstance(value, (str, bool, int, float)) else to_json(value)


# Our span kinds → Langfuse observation types (its documented list: span, generation, event, agent,
# tool, chain, retriever, evaluator, embedding, guardrail).
OBSERVATION_TYPES = {
    "llm": "generation",
    "embedding": "embedding",
    "agent": "agent",
    "tool": "tool",
    "retrieval": "retriever",
    "chain": "chain",
    "workflow": "chain",
    "guardrail": "guardrail",
    "event": "event",
    "other": "span",
}


def langfuse_attributes(call: Call) -> dict[str, Any]:
    """A span as a Langfuse observation: its type, and for a call the model, usage and cost. The
    observation hangs under its parent (Langfuse reads ``parentObservationId`` from the OTLP parent
    span id) in the run's one trace; the root span names the trace and gives it its input/output."""
    r = call.record
    root = not r.parent_id
    kind = "embedding" if call.is_call and call.operation == "embeddings" else r.kind
    attrs: dict[str, Any] = {
        "langfuse.observation.type": OBSERVATION_TYPES.get(kind, "span"),
        "langfuse.observation.level": "ERROR" if r.is_error else "DEFAULT",
    }
    if call.is_call:
        attrs["langfuse.observation.model.name"] = r.model
        attrs["langfuse.observation.usage_details"] = to_json(_usage_details(r))
        if call.parameters:
            attrs["langfuse.observation.model.parameters"] = to_json(call.parameters)
        if call.cost is not None:
            attrs["langfuse.observation.cost_details"] = to_json({"total": call.cost})
        if call.first_token_at is not None:
            # JSON-encoded like the Langfuse SDK sends it.
            attrs["langfuse.observation.completion_start_time"] = to_json(iso(call.first_token_at))
    if root:
        attrs["langfuse.trace.name"] = (r.service_name or call.name) if call.is_call else call.name
    if r.is_error:
        attrs["langfuse.observation.status_message"] = f"{call.error_type}: {call.error_message}"
    if r.input is not None:
        attrs["langfuse.observation.input"] = to_json(r.input)
        if root:
            attrs["langfuse.trace.input"] = attrs["langfuse.observation.input"]
    if r.output is not None:
        attrs["langfuse.observation.output"] = to_json(r.output)
        if root:
            attrs["langfuse.trace.output"] = attrs["langfuse.observation.output"]
    if call.tags:
        attrs["langfuse.trace.tags"] = list(call.tags)
    for key, value in call.metadata.items():
        attrs[f"langfuse.trace.metadata.{key}"] = _scalar(value)
    attrs["langfuse.observation.metadata.tracerelay_trace_id"] = r.trace_id
    if call.is_call:
        attrs["langfuse.observation.metadata.provider"] = r.provider
    if r.unpriced:
        attrs["langfuse.observation.metadata.unpriced"] = True
    env = langfuse_environment(r.environment)
    if env:
        attrs["langfuse.environment"] = env
    return attrs


class LangfuseExporter(OtlpExporter):
    resend_to_find_refused = True  # Langfuse upserts observations by id: a span sent again is one
    platform = "langfuse"
    label = "Langfuse"
    max_batch = 512
    supports_scores = True
    fields: ClassVar[tuple[Field, ...]] = (
        Field("publicKey", required=True, max_length=200, help="pk-lf-…"),
        Field("secretKey", required=True, secret=True, max_length=200, help="sk-lf-…"),
        Field("host", "base_url", default="https://cloud.langfuse.com", aliases=("baseUrl",)),
        Field(
            "projectId",
            max_length=100,
            pattern=r"[A-Za-z0-9_-]+",
            pattern_hint="the id in the project's Langfuse URLs: letters, digits, _ and - only",
            help='Optional: the project\'s id in Langfuse URLs (…/project/<this>), for "Open in Langfuse" links.',
        ),
    )

    @classmethod
    def trace_url(cls, config: Mapping[str, Any], *, team_id: int, trace_id: str, run_id: str) -> str | None:
        """``{host}/project/{projectId}/traces/{traceId}``: the OTel trace id our span went under (the
        run's: Langfuse shows the run as one trace), the span selected as its observation."""
        project, host = config.get("projectId"), config.get("host") or "https://cloud.langfuse.com"
        if not project:
            return None
        trace = ids.otel_trace_id(team_id, run_id or trace_id).hex()
        span = ids.otel_span_id(team_id, trace_id).hex()
        return f"{str(host).rstrip('/')}/project/{quote(str(project), safe='')}/traces/{trace}?observation={span}"

    def traces_url(self) -> str:
        return f"{self.config['host']}/api/public/otel/v1/traces"

    def auth_headers(self) -> dict[str, str]:
        pair = f"{self.config['publicKey']}:{self.config['secretKey']}".encode()
        return {
            "Authorization": "Basic " + base64.b64encode(pair).decode(),
            # Langfuse v4 / Cloud: real-time processing for direct OTLP exporters.
            "x-langfuse-ingestion-version": "4",
        }

    def span_attributes(self, call: Call) -> dict[str, Any]:
        return {**super().span_attributes(call), **langfuse_attributes(call)}

    def export_scores(self, scores: Sequence[ScoreRecord]) -> None:
        """One ``POST /api/public/scores`` per score (the endpoint takes one); its id is stable, so a
        re-send updates the same score in Langfuse."""
        for score in scores:
            self.send(
                "POST",
                f"{self.config['host']}/api/public/scores",
                content=to_json(langfuse_score(score, self.target.name)).encode(),
                headers={**self.auth_headers(), "Content-Type": "application/json"},
            )

    def check(self) -> CheckResult:
        """``GET /api/public/projects`` answers with the key pair's project: auth without writing."""
        return self.probe(
            "GET",
            f"{self.config['host']}/api/public/projects",
            headers=self.auth_headers(),
            ok_message="Langfuse accepted the key pair.",
        )
