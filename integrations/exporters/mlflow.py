"""MLflow tracing server (≥ 3.6): OTLP/HTTP protobuf to ``{host}/v1/traces`` with the required
``x-mlflow-experiment-id`` header. MLflow translates the GenAI attributes itself (token usage,
model, provider, request/response previews from ``gen_ai.input/output.messages``). A run is one MLflow
trace (the OTLP trace id; spans nest by parent span id), each span typed by ``mlflow.spanType``.

Scores become MLflow 3 feedback assessments (``POST {host}/api/3.0/mlflow/traces/{trace_id}/assessments``)
on the trace our run became (``tr-<OTLP trace id hex>``) and the span our trace became. The assessment
id is ours (``a-`` + 32 hex, stable per team, destination and score): MLflow keeps a client-chosen id,
and refuses a second one with the same id, so a re-send that finds it stored counts as delivered."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from traces.records import ScoreRecord

from . import ids
from .base import CheckResult, ConfigError, ExportError
from .calls import Call, iso, to_json
from .configs import Field
from .otlp import OtlpExporter

# Our span kinds → MLflow span types (`mlflow.entities.SpanType`).
SPAN_TYPES = {
    "llm": "LLM",
    "embedding": "EMBEDDING",
    "agent": "AGENT",
    "tool": "TOOL",
    "retrieval": "RETRIEVER",
    "chain": "CHAIN",
    "workflow": "CHAIN",
    "guardrail": "UNKNOWN",
    "event": "UNKNOWN",
    "other": "UNKNOWN",
}


# Our score sources → MLflow's `AssessmentSourceType`; any other source is CODE (an API, a script).
HUMAN_SOURCES = frozenset({"human", "user", "annotator", "reviewer", "dashboard"})
JUDGE_SOURCES = frozenset({"llm", "llm_judge", "llm-judge", "judge", "llm_as_judge"})


def mlflow_trace_id(team_id: int, run_id: str) -> str:
    """The MLflow trace id of an OTLP trace: ``tr-`` and its 32 hex digits."""
    return "tr-" + ids.otel_trace_id(team_id, run_id).hex()


def assessment_source_type(source: str) -> str:
    key = source.strip().lower()
    if key in HUMAN_SOURCES:
        return "HUMAN"
    if key in JUDGE_SOURCES:
        return "LLM_JUDGE"
    return "CODE"


def mlflow_assessment(score: ScoreRecord, destination: str) -> dict[str, Any]:
    """A ``CreateAssessment`` body: a feedback assessment named after the score, its value as is
    (number, boolean or category), the comment as ``rationale``, our source as ``source_id``."""
    created = iso(score.created_at)
    assessment: dict[str, Any] = {
        "assessment_id": "a-" + ids.score_uuid(score.team_id, score.score_id, destination).hex,
        "assessment_name": score.name,
        "trace_id": mlflow_trace_id(score.team_id, score.run_id or score.trace_id),
        "span_id": ids.otel_span_id(score.team_id, score.trace_id).hex(),
        "source": {"source_type": assessment_source_type(score.source), "source_id": score.source},
        "feedback": {"value": score.value},
        "create_time": created,
        "last_update_time": created,
        "metadata": {
            "tracerelay.score_id": score.score_id,
            "tracerelay.data_type": score.data_type,
            "tracerelay.trace_id": score.trace_id,
        },
    }
    if score.comment:
        assessment["rationale"] = score.comment
    return {"assessment": assessment}


def token_usage(call: Call) -> dict[str, int]:
    """MLflow's ``mlflow.chat.tokenUsage`` (`mlflow.tracing.constant.TokenUsageKey`), given rather than
    left to MLflow's translation of the GenAI attributes: that one needs both input and output tokens
    (an embedding has none out), and older servers leave the cache counts out."""
    r = call.record
    usage = {"input_tokens": r.prompt_tokens, "output_tokens": r.completion_tokens, "total_tokens": r.total_tokens}
    if r.cached_tokens:
        usage["cache_read_input_tokens"] = r.cached_tokens
    if r.cache_write_tokens:
        usage["cache_creation_input_tokens"] = r.cache_write_tokens
    return usage


def mlflow_attributes(call: Call) -> dict[str, Any]:
    """The span type MLflow draws (JSON-encoded, as MLflow stores its span attributes) and, for a
    structural span, its inputs and outputs (a call's come from the GenAI messages)."""
    r = call.record
    kind = "embedding" if call.is_call and call.operation == "embeddings" else r.kind
    attrs: dict[str, Any] = {"mlflow.spanType": to_json(SPAN_TYPES.get(kind, "UNKNOWN"))}
    if call.is_call:
        attrs["mlflow.chat.tokenUsage"] = to_json(token_usage(call))
    else:
        if r.input is not None:
            attrs["mlflow.spanInputs"] = to_json(r.input)
        if r.output is not None:
            attrs["mlflow.spanOutputs"] = to_json(r.output)
    return attrs


class MlflowExporter(OtlpExporter):
    platform = "mlflow"
    label = "MLflow"
    supports_scores = True
    fields: ClassVar[tuple[Field, ...]] = (
        Field("host", "base_url", required=True, aliases=("trackingUri",), help="e.g. http://mlflow:5000"),
        Field(
            "experimentId",
            required=True,
            aliases=("projectId",),
            pattern=r"[0-9A-Za-z_\-]{1,64}",
            pattern_hint="must be an MLflow experiment id (letters, digits, - and _)",
        ),
        Field("token", secret=True, help="Bearer token, when the server has auth enabled."),
        Field("username", help="Basic auth user, when the server uses MLflow's basic auth."),
        Field("password", secret=True),
        Field("headers", "headers", default=dict),
        Field("compression", "choice", default="gzip", choices=("gzip", "none")),
    )

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = super().validate_config(config)
        if bool(cleaned.get("username")) != bool(cleaned.get("password")):
            raise ConfigError({"password": ["username and password go together"]})
        if cleaned.get("token") and cleaned.get("username"):
            raise ConfigError({"token": ["give a token or a username and password, not both"]})
        return cleaned

    def traces_url(self) -> str:
        return f"{self.config['host']}/v1/traces"

    def auth_headers(self) -> dict[str, str]:
        headers = {"x-mlflow-experiment-id": str(self.config["experimentId"])}
        if self.config.get("token"):
            headers["Authorization"] = f"Bearer {self.config['token']}"
        elif self.config.get("username"):
            pair = f"{self.config['username']}:{self.config['password']}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        return headers

    def span_attributes(self, call: Call) -> dict[str, Any]:
        return {**super().span_attributes(call), **mlflow_attributes(call)}

    def export_scores(self, scores: Sequence[ScoreRecord]) -> None:
        """One ``CreateAssessment`` per score. When MLflow refuses one, a ``GetAssessment`` of its id
        tells a re-send of a stored assessment (MLflow answers a duplicate id with a 500) from a real
        refusal, which is raised as it came."""
        headers = {**self.headers(), "Content-Type": "application/json"}
        for score in scores:
            body = mlflow_assessment(score, self.target.name)
            trace_id = body["assessment"]["trace_id"]
            url = f"{self.config['host']}/api/3.0/mlflow/traces/{trace_id}/assessments"
            try:
                self.send("POST", url, content=to_json(body).encode(), headers=headers)
            except ExportError as exc:
                if exc.status_code is None or not self._stored(url, body["assessment"]["assessment_id"]):
                    raise

    def _stored(self, url: str, assessment_id: str) -> bool:
        try:
            response = self.request("GET", f"{url}/{assessment_id}", headers=self.headers())
        except ExportError:
            return False
        return response.status_code == 200

    def check(self) -> CheckResult:
        """Reads the experiment: proves the server, the credentials and the experiment id."""
        return self.probe(
            "GET",
            f"{self.config['host']}/api/2.0/mlflow/experiments/get",
            params={"experiment_id": self.config["experimentId"]},
            headers=self.headers(),
            ok_message=f"MLflow answered and experiment {self.config['experimentId']} exists.",
        )
