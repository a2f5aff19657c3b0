"""Arize Phoenix: OTLP/HTTP protobuf (Phoenix takes no other encoding) to ``{host}/v1/traces``,
with OpenInference attributes (what Phoenix's UI reads) beside the GenAI ones. The project is
the resource attribute ``openinference.project.name``. A run is one Phoenix trace (the OTLP trace
id and parent span ids); agents, tools, retrievals and chains carry their OpenInference span kind."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import quote

from traces.records import ScoreRecord

from . import ids
from .base import CheckResult
from .calls import Call, Message, to_json
from .configs import Field
from .otlp import OtlpExporter

# Our provider → OpenInference `llm.provider` / `llm.system` values.
OPENINFERENCE_PROVIDERS = {
    "openai": ("openai", "openai"),
    "anthropic": ("anthropic", "anthropic"),
    "azure": ("azure", "openai"),
    "azure_openai": ("azure", "openai"),
    "google": ("google", "vertexai"),
    "gemini": ("google", "vertexai"),
    "vertex": ("google", "vertexai"),
    "bedrock": ("aws", ""),
    "aws": ("aws", ""),
    "mistral": ("mistralai", "mistralai"),
    "mistralai": ("mistralai", "mistralai"),
    "cohere": ("cohere", "cohere"),
    "xai": ("xai", "xai"),
    "deepseek": ("deepseek", "deepseek"),
    "groq": ("groq", ""),
}


# Our usage parts → OpenInference's token-count detail attributes.
OPENINFERENCE_DETAILS = {
    "cached_tokens": "llm.token_count.prompt_details.cache_read",
    "cache_write_tokens": "llm.token_count.prompt_details.cache_write",
    "input_audio_tokens": "llm.token_count.prompt_details.audio",
    "reasoning_tokens": "llm.token_count.completion_details.reasoning",
    "output_audio_tokens": "llm.token_count.completion_details.audio",
}


def _message_attributes(prefix: str, messages: list[Message]) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for i, m in enumerate(messages):
        base = f"{prefix}.{i}.message"
        attrs[f"{base}.role"] = m.role
        if m.content:
            attrs[f"{base}.content"] = m.content
        if m.tool_call_id:
            attrs[f"{base}.tool_call_id"] = m.tool_call_id
        for j, call in enumerate(m.tool_calls):
            attrs[f"{base}.tool_calls.{j}.tool_call.id"] = call.id
            attrs[f"{base}.tool_calls.{j}.tool_call.function.name"] = call.name
            attrs[f"{base}.tool_calls.{j}.tool_call.function.arguments"] = call.arguments
    return attrs


def _io(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return value, "text/plain"
    return to_json(value), "application/json"


# Our span kinds → OpenInference span kinds (what Phoenix draws the tree with).
OPENINFERENCE_KINDS = {
    "llm": "LLM",
    "embedding": "EMBEDDING",
    "agent": "AGENT",
    "tool": "TOOL",
    "retrieval": "RETRIEVER",
    "chain": "CHAIN",
    "workflow": "CHAIN",
    "guardrail": "GUARDRAIL",
    "event": "UNKNOWN",
    "other": "UNKNOWN",
}


def _common_openinference(call: Call) -> dict[str, Any]:
    """What every span carries in OpenInference terms: input/output, session, user, metadata, tags."""
    r = call.record
    attrs: dict[str, Any] = {}
    if r.input is not None:
        attrs["input.value"], attrs["input.mime_type"] = _io(r.input)
    if r.output is not None:
        attrs["output.value"], attrs["output.mime_type"] = _io(r.output)
    if r.session_id:
        attrs["session.id"] = r.session_id
    if r.user_id:
        attrs["user.id"] = r.user_id
    if call.metadata:
        attrs["metadata"] = to_json(call.metadata)
    if call.tags:
        attrs["tag.tags"] = list(call.tags)
    return attrs


def structural_openinference(call: Call) -> dict[str, Any]:
    """A structural span in OpenInference terms: its kind, input/output, and a tool's name."""
    r = call.record
    attrs: dict[str, Any] = {"openinference.span.kind": OPENINFERENCE_KINDS.get(r.kind, "UNKNOWN")}
    if r.kind == "tool" and r.name:
        attrs["tool.name"] = r.name
    return attrs | _common_openinference(call)


def openinference_attributes(call: Call) -> dict[str, Any]:
    if not call.is_call:
        return structural_openinference(call)
    r = call.record
    provider, system = OPENINFERENCE_PROVIDERS.get(r.provider.lower(), (r.provider.lower(), ""))
    attrs: dict[str, Any] = {
        "openinference.span.kind": "EMBEDDING" if call.operation == "embeddings" else "LLM",
        "llm.model_name": r.model,
        "llm.provider": provider,
        "llm.system": system,
        "llm.token_count.prompt": r.prompt_tokens,
        "llm.token_count.completion": r.completion_tokens,
        "llm.token_count.total": r.total_tokens,
    }
    for name, key in OPENINFERENCE_DETAILS.items():
        value = getattr(r, name)
        if value:
            attrs[key] = value
    if call.cost is not None:
        attrs["llm.cost.total"] = call.cost
    if call.parameters:
        attrs["llm.invocation_parameters"] = to_json(call.parameters)
    if call.finish_reasons:
        attrs["llm.finish_reason"] = call.finish_reasons[0]
    attrs.update(_message_attributes("llm.input_messages", call.inputs))
    attrs.update(_message_attributes("llm.output_messages", call.outputs))
    return attrs | _common_openinference(call)


def span_annotation(score: ScoreRecord) -> dict[str, Any]:
    """One Phoenix span annotation on the span our trace became: a number as ``score``, a boolean as
    label "true"/"false" and score 1/0, a category as ``label``; the comment as ``explanation``.
    ``identifier`` is our score id, so a re-send updates the same annotation."""
    result: dict[str, Any] = {}
    if score.data_type == "numeric":
        result["score"] = score.value
    elif score.data_type == "boolean":
        result["label"], result["score"] = ("true", 1) if score.value else ("false", 0)
    else:
        result["label"] = score.value
    if score.comment:
        result["explanation"] = score.comment
    return {
        "span_id": ids.otel_span_id(score.team_id, score.trace_id).hex(),
        "name": score.name,
        "annotator_kind": "HUMAN" if score.source == "human" else "CODE",
        "result": result,
        "metadata": {"source": score.source},
        "identifier": f"tracerelay:{score.score_id}",
    }


class PhoenixExporter(OtlpExporter):
    platform = "phoenix"
    label = "Phoenix"
    supports_scores = True
    fields: ClassVar[tuple[Field, ...]] = (
        Field("host", "base_url", required=True, help="Phoenix base URL, e.g. http://phoenix:6006."),
        Field("projectName", default="default", aliases=("projectId", "project"), max_length=200),
        Field("apiKey", secret=True, help="Only when Phoenix runs with auth enabled (sent as a Bearer token)."),
        Field("headers", "headers", default=dict),
        Field("compression", "choice", default="gzip", choices=("gzip", "none")),
        Field(
            "projectUrlId",
            max_length=200,
            pattern=r"[A-Za-z0-9_=-]+",
            pattern_hint="the id in the project's Phoenix URLs (…/projects/<this>), e.g. UHJvamVjdDox",
            help='Optional: the project\'s id in Phoenix URLs (…/projects/<this>), for "Open in Phoenix" links.',
        ),
    )

    @classmethod
    def trace_url(cls, config: Mapping[str, Any], *, team_id: int, trace_id: str, run_id: str) -> str | None:
        """``{host}/projects/{project}/traces/{trace_id}``: Phoenix's project page id (not its name) and
        the OTel trace id our span went under (the run's), as hex."""
        project, host = config.get("projectUrlId"), config.get("host")
        if not project or not host:
            return None
        trace = ids.otel_trace_id(team_id, run_id or trace_id).hex()
        return f"{str(host).rstrip('/')}/projects/{quote(str(project), safe='')}/traces/{trace}"

    def traces_url(self) -> str:
        return f"{self.config['host']}/v1/traces"

    def auth_headers(self) -> dict[str, str]:
        key = self.config.get("apiKey")
        return {"Authorization": f"Bearer {key}"} if key else {}

    def resource_attributes(self, call: Call) -> dict[str, Any]:
        return {**super().resource_attributes(call), "openinference.project.name": self.config["projectName"]}

    def span_attributes(self, call: Call) -> dict[str, Any]:
        return {**super().span_attributes(call), **openinference_attributes(call)}

    def export_scores(self, scores: Sequence[ScoreRecord]) -> None:
        """Span annotations: ``POST {host}/v1/span_annotations`` with ``{"data": [...]}``."""
        if not scores:
            return
        self.send(
            "POST",
            f"{self.config['host']}/v1/span_annotations",
            content=to_json({"data": [span_annotation(s) for s in scores]}).encode(),
            headers={**self.headers(), "Content-Type": "application/json"},
        )

    def check(self) -> CheckResult:
        """Phoenix's REST project list: reachability and, with auth on, the key."""
        return self.probe(
            "GET",
            f"{self.config['host']}/v1/projects",
            params={"limit": 1},
            headers=self.headers(),
            ok_message="Phoenix answered and accepted the credentials.",
        )
