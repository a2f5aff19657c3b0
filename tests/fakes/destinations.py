"""Fake destinations: `FakeServer`s that check what they receive against each platform's real
wire format and authentication (shared/reference/destinations.md) and answer as it would.

Every fake keeps what it accepted (``spans``, ``runs``, ``logs``, ``payloads``) deduplicated by
the platform's own key where the platform deduplicates, and lists format violations in
``problems``. Construct with the credentials the code under test should send::

    with FakeLangfuse(public_key="pk-lf-1", secret_key="sk-lf-1") as langfuse:
        ... export to langfuse.url ...
        assert langfuse.problems == []
        assert langfuse.spans[0].attributes["gen_ai.request.model"] == "gpt-4o"
"""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from pydantic import ValidationError

from tests.fakes import schemas
from tests.fakes.server import FakeServer, RecordedRequest, Reply

PROTOBUF = "application/x-protobuf"
CLIENT = 3  # opentelemetry.proto.trace.v1.Span.SpanKind
INTERNAL = 1
# OpenInference span kinds (openinference-semantic-conventions), Langfuse observation types
# (its OTLP processor's list).
OPENINFERENCE_KINDS = ("LLM", "EMBEDDING", "CHAIN", "RETRIEVER", "RERANKER", "TOOL", "AGENT", "GUARDRAIL")
OPENINFERENCE_KINDS += ("EVALUATOR", "PROMPT", "UNKNOWN")
LANGFUSE_TYPES = ("span", "generation", "event", "agent", "tool", "chain", "retriever", "evaluator", "embedding")
LANGFUSE_TYPES += ("guardrail",)


def python_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [python_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return key_values(value.kvlist_value.values)
    return getattr(value, kind) if kind else None


def key_values(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    """OTLP attributes (a repeated KeyValue) as a dict of Python values."""
    return {kv.key: python_value(kv.value) for kv in pairs}


@dataclass
class DecodedSpan:
    trace_id: str  # hex
    span_id: str  # hex
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    status_code: int
    status_message: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def decode_spans(message: ExportTraceServiceRequest) -> list[DecodedSpan]:
    spans = []
    for resource_spans in message.resource_spans:
        resource = key_values(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    DecodedSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        name=span.name,
                        kind=span.kind,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        status_code=span.status.code,
                        status_message=span.status.message,
                        attributes=key_values(span.attributes),
                        resource=resource,
                        events=[(e.name, key_values(e.attributes)) for e in span.events],
                    )
                )
    return spans


@dataclass
class DecodedLog:
    trace_id: str  # hex
    span_id: str  # hex
    time_ns: int
    severity_number: int
    severity_text: str
    event_name: str
    body: Any
    attributes: dict[str, Any]
    resource: dict[str, Any]
    scope: str


def decode_logs(message: ExportLogsServiceRequest) -> list[DecodedLog]:
    logs = []
    for resource_logs in message.resource_logs:
        resource = key_values(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                logs.append(
                    DecodedLog(
                        trace_id=record.trace_id.hex(),
                        span_id=record.span_id.hex(),
                        time_ns=record.time_unix_nano,
                        severity_number=record.severity_number,
                        severity_text=record.severity_text,
                        event_name=record.event_name,
                        body=python_value(record.body),
                        attributes=key_values(record.attributes),
                        resource=resource,
                        scope=scope_logs.scope.name,
                    )
                )
    return logs


def basic_auth(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class FakeOtlpCollector(FakeServer):
    """An OTLP/HTTP receiver (``POST {path}``). Checks the content type (protobuf, or JSON when
    ``accept_json``), decodes ``ExportTraceServiceRequest`` and the span invariants (16-byte
    trace id, 8-byte span id, end ≥ start, GenAI required attributes), and answers 200 with an
    empty protobuf ``ExportTraceServiceResponse``. Spans are kept once per (trace id, span id),
    as Phoenix and MLflow do. ``required_headers`` must arrive exactly (else 401)."""

    traces_path = "/v1/traces"
    accept_json = False

    def __init__(self, *, required_headers: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.required_headers = {k.lower(): v for k, v in (required_headers or {}).items()}
        self.spans: list[DecodedSpan] = []
        self._span_keys: set[tuple[str, str]] = set()
        self.logs: list[DecodedLog] = []
        self.exports = 0

    def authorized(self, request: RecordedRequest) -> bool:
        return all(request.header(k) == v for k, v in self.required_headers.items())

    def handle(self, request: RecordedRequest) -> Reply:
        if request.path in self.traces_paths():
            return self.receive_traces(request)
        if self.receives_logs and request.path in self.logs_paths():
            return self.receive_logs(request)
        return self.handle_other(request)

    def traces_paths(self) -> tuple[str, ...]:
        return (self.traces_path,)

    # Whether this destination has an OTLP logs endpoint beside the traces one (a collector does).
    receives_logs = True

    def logs_paths(self) -> tuple[str, ...]:
        return tuple(p[: -len("traces")] + "logs" for p in self.traces_paths() if p.endswith("/traces"))

    def receive_logs(self, request: RecordedRequest) -> Reply:
        """``ExportLogsServiceRequest`` (protobuf): each record with a 16-byte trace id, an 8-byte span
        id (or none), a time, a severity in 0-24 → an empty ``ExportLogsServiceResponse``."""
        if request.method != "POST":
            return self.problem(request, "OTLP logs must be POSTed", 405)
        if not self.authorized(request):
            return self.unauthorized(request)
        content_type = (request.header("content-type") or "").split(";")[0].strip()
        if content_type != PROTOBUF:
            return self.problem(request, f"Unsupported content type: {content_type}", 415)
        message = ExportLogsServiceRequest()
        try:
            message.ParseFromString(request.content)
        except DecodeError as exc:
            return self.problem(request, f"undecodable protobuf: {exc}", 400)
        logs = decode_logs(message)
        for log in logs:
            if log.trace_id and (len(log.trace_id) != 32 or set(log.trace_id) == {"0"}):
                return self.problem(request, "a log's trace_id must be empty or 16 non-zero bytes", 400)
            if log.span_id and (len(log.span_id) != 16 or set(log.span_id) == {"0"}):
                return self.problem(request, "a log's span_id must be empty or 8 non-zero bytes", 400)
            if log.time_ns <= 0 or not 0 <= log.severity_number <= 24:
                return self.problem(request, "a log needs a time and a severity number 0-24", 400)
            if "service.name" not in log.resource:
                return self.problem(request, "resource without service.name", 400)
        self.logs.extend(logs)
        return Reply(200, ExportLogsServiceResponse().SerializeToString(), {"Content-Type": PROTOBUF})

    def handle_other(self, request: RecordedRequest) -> Reply:
        return self.problem(request, f"unexpected {request.method} {request.path}", 404)

    def unauthorized(self, request: RecordedRequest) -> Reply:
        return Reply(401, {"error": "unauthorized"})

    def receive_traces(self, request: RecordedRequest) -> Reply:
        if request.method != "POST":
            return self.problem(request, "OTLP traces must be POSTed", 405)
        if not self.authorized(request):
            return self.unauthorized(request)
        content_type = (request.header("content-type") or "").split(";")[0].strip()
        message = ExportTraceServiceRequest()
        if content_type == PROTOBUF:
            try:
                message.ParseFromString(request.content)
            except DecodeError as exc:
                return self.problem(request, f"undecodable protobuf: {exc}", 400)
        elif content_type == "application/json" and self.accept_json:
            try:
                json_format.Parse(request.content, message)
            except json_format.ParseError as exc:
                return self.problem(request, f"bad OTLP/JSON: {exc}", 400)
        else:
            return self.problem(request, f"Unsupported content type: {content_type}", 415)
        if request.header("content-encoding") not in (None, "gzip", "deflate"):
            return self.problem(request, "unsupported content encoding", 415)
        spans = decode_spans(message)
        for span in spans:
            error = self.span_problem(span)
            if error:
                return self.problem(request, error, 400)
        self.exports += 1
        for span in spans:
            key = (span.trace_id, span.span_id)
            if key not in self._span_keys:
                self._span_keys.add(key)
                self.spans.append(span)
        return Reply(200, ExportTraceServiceResponse().SerializeToString(), {"Content-Type": PROTOBUF})

    def span_problem(self, span: DecodedSpan) -> str | None:
        if len(span.trace_id) != 32 or set(span.trace_id) == {"0"}:
            return "trace_id must be 16 non-zero bytes"
        if len(span.span_id) != 16 or set(span.span_id) == {"0"}:
            return "span_id must be 8 non-zero bytes"
        if not span.name:
            return "span name is empty"
        if span.parent_span_id and (len(span.parent_span_id) != 16 or set(span.parent_span_id) == {"0"}):
            return "parent_span_id must be empty or 8 non-zero bytes"
        if span.end_ns < span.start_ns or span.start_ns <= 0:
            return "bad span times"
        if span.kind == CLIENT:  # an inference call: the GenAI required attributes
            for required in ("gen_ai.operation.name", "gen_ai.provider.name"):
                if not span.attributes.get(required):
                    return f"GenAI span without {required}"
        elif span.kind != INTERNAL:
            return f"span kind {span.kind}: calls are CLIENT, a run's structure INTERNAL"
        operation = span.attributes.get("gen_ai.operation.name")
        if operation == "invoke_agent" and "gen_ai.agent.name" not in span.attributes:
            return "invoke_agent span without gen_ai.agent.name"
        if operation == "execute_tool" and "gen_ai.tool.name" not in span.attributes:
            return "execute_tool span without gen_ai.tool.name"
        if "service.name" not in span.resource:
            return "resource without service.name"
        return None


class FakePhoenix(FakeOtlpCollector):
    """Phoenix: protobuf only on ``/v1/traces`` (JSON gets 415), project from the resource
    attribute ``openinference.project.name``; ``GET /v1/projects`` for the connection test."""

    receives_logs = False

    def __init__(self, *, api_key: str | None = None, **kwargs: Any) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        super().__init__(required_headers=headers, **kwargs)
        self.annotations: dict[str, dict[str, Any]] = {}

    def span_problem(self, span: DecodedSpan) -> str | None:
        problem = super().span_problem(span)
        if problem:
            return problem
        if span.attributes.get("openinference.span.kind") not in OPENINFERENCE_KINDS:
            return "openinference.span.kind missing"
        if not span.resource.get("openinference.project.name"):
            return "no openinference.project.name resource attribute"
        return None

    def handle_other(self, request: RecordedRequest) -> Reply:
        if request.method == "GET" and request.path == "/v1/projects":
            if not self.authorized(request):
                return self.unauthorized(request)
            return Reply(200, {"data": [{"id": "UHJvamVjdDox", "name": "default"}], "next_cursor": None})
        if request.method == "POST" and request.path == "/v1/span_annotations":
            if not self.authorized(request):
                return self.unauthorized(request)
            return self.receive_annotations(request)
        return super().handle_other(request)

    def receive_annotations(self, request: RecordedRequest) -> Reply:
        """``{"data": [{span_id (16 hex), name, annotator_kind LLM|CODE|HUMAN, result {label?, score?,
        explanation?} with a label or a score, metadata?, identifier?}]}`` → ``{"data": [{"id"}]}``."""
        try:
            items = request.json()["data"]
        except (ValueError, KeyError, TypeError):
            return self.problem(request, "not a span annotations payload", 422)
        problems = []
        for item in items:
            result = item.get("result") or {}
            if not re.fullmatch(r"[0-9a-f]{16}", str(item.get("span_id"))):
                problems.append("span_id")
            if item.get("annotator_kind") not in ("LLM", "CODE", "HUMAN") or not item.get("name"):
                problems.append("annotator_kind/name")
            if set(result) - {"label", "score", "explanation"} or not ("label" in result or "score" in result):
                problems.append("result")
            if "score" in result and (
                isinstance(result["score"], bool) or not isinstance(result["score"], (int, float))
            ):
                problems.append("result.score")
        if problems:
            return self.problem(request, f"invalid annotations: {problems}", 422, {"detail": problems})
        for item in items:
            self.annotations[item.get("identifier") or str(len(self.annotations))] = item
        return Reply(200, {"data": [{"id": f"annotation-{i}"} for i in range(len(items))]})


class FakeMlflow(FakeOtlpCollector):
    """MLflow ≥ 3.6: ``/v1/traces`` needs ``x-mlflow-experiment-id`` (else 422, as verified on
    3.17.2) and accepts protobuf or JSON; ``GET /api/2.0/mlflow/experiments/get`` for the check."""

    receives_logs = False

    accept_json = True

    def __init__(
        self,
        *,
        experiments: tuple[str, ...] = ("1",),
        token: str | None = None,
        username: str | None = None,
        password: str = "",
        **kwargs: Any,
    ) -> None:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        if username:
            headers = {"authorization": basic_auth(username, password)}
        super().__init__(required_headers=headers, **kwargs)
        self.experiments = experiments
        self.assessments: dict[str, dict[str, Any]] = {}

    def receive_traces(self, request: RecordedRequest) -> Reply:
        if request.method == "POST" and not request.header("x-mlflow-experiment-id"):
            return self.problem(request, "x-mlflow-experiment-id header is required", 422)
        if request.header("x-mlflow-experiment-id") not in self.experiments:
            return self.problem(request, "no such experiment", 404, {"error_code": "RESOURCE_DOES_NOT_EXIST"})
        return super().receive_traces(request)

    def handle_other(self, request: RecordedRequest) -> Reply:
        if request.method == "GET" and request.path == "/api/2.0/mlflow/experiments/get":
            if not self.authorized(request):
                return self.unauthorized(request)
            experiment = (request.query.get("experiment_id") or [""])[0]
            if experiment not in self.experiments:
                return Reply(404, {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "No experiment"})
            return Reply(200, {"experiment": {"experiment_id": experiment, "name": "Default"}})
        found = re.fullmatch(r"/api/3\.0/mlflow/traces/([^/]+)/assessments(?:/([^/]+))?", request.path)
        if found:
            if not self.authorized(request):
                return self.unauthorized(request)
            return self.receive_assessment(request, found.group(1), found.group(2))
        return super().handle_other(request)

    def receive_assessment(self, request: RecordedRequest, trace_id: str, assessment_id: str | None) -> Reply:
        """``CreateAssessment`` (a feedback assessment, as MLflow 3.17's handler and entity take it):
        name, a source type of the enum, a ``feedback.value``; a duplicate client id is MLflow's 500.
        ``GET …/assessments/{id}`` reads one back (404 when missing)."""
        if request.method == "GET" and assessment_id:
            stored = self.assessments.get(assessment_id)
            if stored is None or stored["trace_id"] != trace_id:
                return Reply(404, {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no such assessment"})
            return Reply(200, {"assessment": stored})
        if request.method != "POST" or assessment_id:
            return self.problem(request, f"unexpected {request.method} {request.path}", 404)
        try:
            assessment = request.json()["assessment"]
        except (ValueError, KeyError, TypeError):
            return self.problem(request, "assessment is required", 400, {"error_code": "INVALID_PARAMETER_VALUE"})
        allowed = {"assessment_id", "assessment_name", "trace_id", "span_id", "source", "create_time"}
        allowed |= {"last_update_time", "feedback", "rationale", "metadata", "overrides", "valid"}
        problems = [f"unknown field {k}" for k in assessment if k not in allowed]
        if not re.fullmatch(r"tr-[0-9a-f]{32}", trace_id) or assessment.get("trace_id", trace_id) != trace_id:
            problems.append("trace_id")
        if not assessment.get("assessment_name"):
            problems.append("assessment_name")
        source = assessment.get("source") or {}
        source_types = ("HUMAN", "LLM_JUDGE", "CODE")
        if source.get("source_type") not in source_types or set(source) - {"source_type", "source_id"}:
            problems.append("source")
        if not isinstance(assessment.get("feedback"), dict) or "value" not in assessment["feedback"]:
            problems.append("feedback.value")
        if "span_id" in assessment and not re.fullmatch(r"[0-9a-f]{16}", str(assessment["span_id"])):
            problems.append("span_id")
        if not all(isinstance(v, str) for v in (assessment.get("metadata") or {}).values()):
            problems.append("metadata values are strings")
        if problems:
            refusal = {"error_code": "INVALID_PARAMETER_VALUE"}
            return self.problem(request, f"invalid assessment: {problems}", 400, refusal)
        new_id = assessment.get("assessment_id") or f"a-{uuid.uuid4().hex}"
        if new_id in self.assessments:
            return Reply(500, {"error_code": "INTERNAL_ERROR", "message": "constraint violation"})
        self.assessments[new_id] = {**assessment, "assessment_id": new_id, "trace_id": trace_id}
        return Reply(200, {"assessment": self.assessments[new_id]})


class FakeLangfuse(FakeOtlpCollector):
    """Langfuse's OTLP endpoint ``/api/public/otel/v1/traces``: Basic pk:sk (else 401), JSON or
    protobuf, ``x-langfuse-ingestion-version`` above 4 refused (400); ``GET /api/public/projects``."""

    receives_logs = False

    traces_path = "/api/public/otel/v1/traces"
    accept_json = True

    def __init__(self, *, public_key: str = "pk-lf-test", secret_key: str = "sk-lf-test", **kwargs: Any) -> None:
        super().__init__(required_headers={"authorization": basic_auth(public_key, secret_key)}, **kwargs)
        self.scores: dict[str, dict[str, Any]] = {}

    def receive_traces(self, request: RecordedRequest) -> Reply:
        version = request.header("x-langfuse-ingestion-version")
        if version is not None and (not version.isdigit() or int(version) > 4):
            return self.problem(request, "unsupported x-langfuse-ingestion-version", 400)
        return super().receive_traces(request)

    def span_problem(self, span: DecodedSpan) -> str | None:
        problem = super().span_problem(span)
        if problem:
            return problem
        if span.attributes.get("langfuse.observation.type") not in LANGFUSE_TYPES:
            return (
                f"langfuse.observation.type {span.attributes.get('langfuse.observation.type')!r} is not a Langfuse type"
            )
        level = span.attributes.get("langfuse.observation.level", "DEFAULT")
        if level not in ("DEBUG", "DEFAULT", "WARNING", "ERROR"):
            return f"bad langfuse.observation.level {level}"
        return None

    def handle_other(self, request: RecordedRequest) -> Reply:
        if request.method == "GET" and request.path == "/api/public/projects":
            if not self.authorized(request):
                return self.unauthorized(request)
            return Reply(200, {"data": [{"id": "proj-1", "name": "tracerelay-tests", "metadata": {}}]})
        if request.method == "POST" and request.path == "/api/public/scores":
            if not self.authorized(request):
                return self.unauthorized(request)
            return self.receive_score(request)
        return super().handle_other(request)

    def receive_score(self, request: RecordedRequest) -> Reply:
        """Langfuse's CreateScoreRequest: name, value, traceId (our OTLP trace id: 32 hex) and
        observationId (16 hex), dataType NUMERIC (a number), BOOLEAN (1 or 0) or CATEGORICAL (a
        string); an ``id`` given makes a re-send an update of the same score."""
        try:
            body = request.json()
        except ValueError:
            return self.problem(request, "score body is not JSON", 400)
        allowed = {
            "id",
            "traceId",
            "observationId",
            "sessionId",
            "name",
            "value",
            "dataType",
            "comment",
            "metadata",
            "configId",
            "environment",
            "datasetRunId",
        }
        kind, value = body.get("dataType"), body.get("value")
        problems = [f"unknown field {k}" for k in body if k not in allowed]
        if not isinstance(body.get("name"), str) or not body["name"]:
            problems.append("name")
        if not re.fullmatch(r"[0-9a-f]{32}", str(body.get("traceId"))):
            problems.append("traceId")
        if "observationId" in body and not re.fullmatch(r"[0-9a-f]{16}", str(body["observationId"])):
            problems.append("observationId")
        if kind == "NUMERIC" and (isinstance(value, bool) or not isinstance(value, (int, float))):
            problems.append("NUMERIC value")
        elif kind == "BOOLEAN" and (isinstance(value, bool) or value not in (0, 1)):
            problems.append("BOOLEAN value must be 1 or 0")
        elif kind == "CATEGORICAL" and not isinstance(value, str):
            problems.append("CATEGORICAL value")
        elif kind not in ("NUMERIC", "BOOLEAN", "CATEGORICAL"):
            problems.append("dataType")
        if problems:
            return self.problem(request, f"invalid score: {problems}", 400, {"message": "Invalid request data"})
        self.scores[body.get("id") or str(len(self.scores))] = body
        return Reply(200, {"id": body.get("id")})


class FakeWeave(FakeOtlpCollector):
    """W&B Weave OTLP: protobuf only, Basic ``api:<key>``, project from the ``project_id`` header
    (``entity/project``); ``POST /calls/query_stats`` for the check; ``POST /feedback/create``
    (``FeedbackCreateReq``, strict) for feedback, kept by its ``id`` in ``feedback``."""

    receives_logs = False

    PAYLOAD_LIMIT = 1 << 20  # Weave refuses a feedback payload above its ClickHouse limit

    def __init__(self, *, api_key: str = "wandb-key", project_id: str = "team/proj", **kwargs: Any) -> None:
        super().__init__(required_headers={"authorization": basic_auth("api", api_key)}, **kwargs)
        self.project_id = project_id
        self.feedback: dict[str, dict[str, Any]] = {}

    def traces_paths(self) -> tuple[str, ...]:
        return ("/otel/v1/traces", "/agents/otel/v1/traces")

    def receive_traces(self, request: RecordedRequest) -> Reply:
        if request.method == "POST" and self.authorized(request) and request.header("project_id") != self.project_id:
            return self.problem(request, "project_id header must be <entity>/<project>", 400)
        return super().receive_traces(request)

    def handle_other(self, request: RecordedRequest) -> Reply:
        if request.method == "POST" and request.path == "/calls/query_stats":
            if not self.authorized(request):
                return self.unauthorized(request)
            if request.json().get("project_id") != self.project_id:
                return Reply(404, {"reason": "project not found"})
            return Reply(200, {"count": len(self.spans)})
        if request.method == "POST" and request.path == "/feedback/create":
            if not self.authorized(request):
                return self.unauthorized(request)
            return self.receive_feedback(request)
        return super().handle_other(request)

    def receive_feedback(self, request: RecordedRequest) -> Reply:
        """Weave's checks: the strict request model, a ``weave:///`` ref in the same project (a call
        ref's id: an OTLP-ingested call is named by its 16-hex span id), the built-in types'
        payloads (a reaction's one emoji, a note's 1–1024 characters), annotation/runnable types
        only with their refs → ``FeedbackCreateRes``."""
        try:
            body = schemas.WeaveFeedbackCreate.model_validate(request.json())
        except (ValueError, ValidationError) as exc:
            return self.problem(request, f"invalid FeedbackCreateReq: {exc}", 422, {"detail": str(exc)})
        problems = []
        if body.project_id != self.project_id:
            problems.append(f"project_id {body.project_id!r} is not {self.project_id!r}")
        if not re.fullmatch(rf"weave:///{re.escape(self.project_id)}/call/[0-9a-f]{{16}}", body.weave_ref):
            problems.append(f"weave_ref {body.weave_ref!r} is not a call ref of this project")
        kind = body.feedback_type
        if kind == "wandb.reaction.1" and set(body.payload) != {"emoji"}:
            problems.append("a reaction's payload is {emoji}")
        elif kind == "wandb.note.1" and not (set(body.payload) == {"note"} and 1 <= len(body.payload["note"]) <= 1024):
            problems.append("a note's payload is {note} of 1-1024 characters")
        elif kind.startswith(("wandb.annotation", "wandb.runnable")):
            problems.append(f"{kind} needs an annotation/runnable ref")
        if len(json.dumps(body.payload)) > self.PAYLOAD_LIMIT:
            problems.append("Feedback payload too large")
        if problems:
            return self.problem(request, f"invalid feedback: {problems}", 400, {"reason": "; ".join(problems)})
        feedback_id = body.id or str(uuid.uuid4())
        created = self.feedback.get(feedback_id, {}).get("created_at") or time.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.feedback[feedback_id] = {**body.model_dump(), "id": feedback_id, "created_at": created}
        return Reply(200, {"id": feedback_id, "created_at": created, "wb_user_id": "VXNlcjox", "payload": body.payload})


class FakeLangSmith(FakeServer):
    """LangSmith ``POST /runs/batch``: ``x-api-key`` (else 401), every run checked against
    `schemas.LangSmithRun`; a run id already stored answers 409, like LangSmith; ``GET /sessions``."""

    def __init__(self, *, api_key: str = "lsv2-test", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.api_key = api_key
        self.runs: dict[str, dict[str, Any]] = {}
        self.feedback: dict[str, dict[str, Any]] = {}

    def handle(self, request: RecordedRequest) -> Reply:
        if request.header("x-api-key") != self.api_key:
            return Reply(401, {"detail": "Invalid token"})
        if request.method == "GET" and request.path == "/sessions":
            return Reply(200, [])
        if request.method == "POST" and request.path == "/feedback":
            return self.receive_feedback(request)
        if request.method != "POST" or request.path != "/runs/batch":
            return self.problem(request, f"unexpected {request.method} {request.path}", 404)
        try:
            body = request.json()
            schemas.LangSmithBatch.model_validate(body)
        except (ValueError, ValidationError) as exc:
            return self.problem(request, f"invalid batch: {exc}", 422, {"detail": str(exc)})
        runs = body.get("post", [])
        if any(run["id"] in self.runs for run in runs):
            return Reply(409, {"detail": "Run already exists"})
        for run in runs:
            self.runs[run["id"]] = run
        return Reply(202, {"message": "Runs batch ingested"})

    def receive_feedback(self, request: RecordedRequest) -> Reply:
        """LangSmith's FeedbackCreateSchema: ``key``, ``run_id`` (a UUID), ``id`` (a UUID: the same id
        again is a 409), ``score`` a number or boolean and/or ``value``, ``comment``, ``feedback_source``."""
        try:
            body = request.json()
        except ValueError:
            return self.problem(request, "feedback body is not JSON", 422)
        problems = []
        for key in ("id", "run_id"):
            try:
                uuid.UUID(str(body.get(key)))
            except ValueError:
                problems.append(key)
        if not isinstance(body.get("key"), str) or not body["key"]:
            problems.append("key")
        if "score" in body and not isinstance(body["score"], (int, float)):
            problems.append("score")
        if "score" not in body and "value" not in body:
            problems.append("score or value")
        if problems:
            return self.problem(request, f"invalid feedback: {problems}", 422, {"detail": problems})
        if body["id"] in self.feedback:
            return Reply(409, {"detail": "Feedback already exists"})
        self.feedback[body["id"]] = body
        return Reply(200, body)


class FakeHelicone(FakeServer):
    """Helicone's worker ``POST /custom/v1/log``: Bearer key (else 401), body checked like the
    worker's ``validateAsyncLogModel`` (400 with ``{"error"}``), 200 ``ok`` with ``helicone-id``.
    ``storage_error`` makes it answer as when its storage step fails: 200 ``{"error": …}``.
    ``POST /v1/request/query`` serves the connection check. ``POST /v1/request/{id}/score`` is
    jawn's ``AddScores``: Bearer key (else 401 ``{"data": null, "error"}``), a UUID request id, a
    body that is exactly ``{"scores": {name: integer | boolean}}`` (else 400 with the reason);
    stored in ``scores`` (request id → name → value, a re-sent name overwrites, as Helicone's
    one-value-per-name map does), 200 ``{"data": null, "error": null}``."""

    def __init__(self, *, api_key: str = "sk-helicone-test", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.api_key = api_key
        self.logs: dict[str, dict[str, Any]] = {}
        self.scores: dict[str, dict[str, int | bool]] = {}
        self.storage_error: str | None = None

    def receive_scores(self, request: RecordedRequest, request_id: str) -> Reply:
        if request.header("authorization") != f"Bearer {self.api_key}":
            return Reply(401, {"data": None, "error": "Unauthorized"})
        try:
            uuid.UUID(request_id)
        except ValueError:
            return self.problem(
                request, f"request id {request_id!r} is not a UUID", 400, {"data": None, "error": "Invalid requestId"}
            )
        try:
            body = request.json()
        except ValueError:
            return self.problem(request, "score body is not JSON", 400, {"data": None, "error": "Invalid JSON"})
        if not isinstance(body, dict) or set(body) != {"scores"} or not isinstance(body["scores"], dict):
            return self.problem(
                request,
                f"score body is not {{'scores': {{...}}}}: {body!r}",
                400,
                {"data": None, "error": "Invalid body"},
            )
        scores = body["scores"]
        for name, value in scores.items():
            if not name or not (isinstance(value, bool) or isinstance(value, int)):
                return self.problem(
                    request,
                    f"score {name!r}: {value!r} is not an integer or a boolean",
                    400,
                    {"data": None, "error": f"Invalid score value for {name}"},
                )
        self.scores.setdefault(request_id, {}).update(scores)
        return Reply(200, {"data": None, "error": None})

    def handle(self, request: RecordedRequest) -> Reply:
        match = re.fullmatch(r"/v1/request/([^/]+)/score", request.path)
        if request.method == "POST" and match:
            return self.receive_scores(request, match.group(1))
        if request.method == "POST" and request.path == "/v1/request/query":
            if request.header("authorization") != f"Bearer {self.api_key}":
                return Reply(401, {"error": "Unauthorized", "data": None})
            return Reply(200, {"data": [], "error": None})
        if request.method != "POST" or request.path != "/custom/v1/log":
            return self.problem(request, f"unexpected {request.method} {request.path}", 404)
        if len(request.content) > 10 * 1024 * 1024:
            return Reply(400, "Payload too large")
        if not request.header("authorization"):
            return Reply(401, "Unauthorized")
        try:
            log = schemas.HeliconeLog.model_validate(request.json())
        except (ValueError, ValidationError) as exc:
            return self.problem(request, f"invalid log: {exc}", 400)
        if request.header("authorization") != f"Bearer {self.api_key}":
            return Reply(401, {"error": "Invalid API key"})
        if self.storage_error:
            return Reply(200, {"error": self.storage_error})
        request_id = log.providerRequest.meta.get("Helicone-Request-Id", "")
        self.logs[request_id] = request.json()
        return Reply(200, "ok", {"helicone-id": request_id})


class FakeDatadog(FakeServer):
    """Datadog's LLM Observability span intake: ``DD-API-KEY`` (else 403), body checked against
    `schemas.DatadogIntake`, spans older than 24 h refused, 202 with an empty body;
    ``GET /api/v1/validate`` for the check."""

    def __init__(self, *, api_key: str = "dd-test-key", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.api_key = api_key
        self.spans: list[dict[str, Any]] = []
        self.payloads: list[dict[str, Any]] = []
        self.evaluations: list[dict[str, Any]] = []

    def handle(self, request: RecordedRequest) -> Reply:
        if request.header("dd-api-key") != self.api_key:
            return Reply(403, {"errors": ["Forbidden"]})
        if request.method == "GET" and request.path == "/api/v1/validate":
            return Reply(200, {"valid": True})
        if request.method == "POST" and request.path == "/api/intake/llm-obs/v2/eval-metric":
            return self.receive_evaluations(request)
        if request.method != "POST" or request.path != "/api/intake/llm-obs/v1/trace/spans":
            return self.problem(request, f"unexpected {request.method} {request.path}", 404)
        try:
            body = schemas.DatadogIntake.model_validate(request.json())
        except (ValueError, ValidationError) as exc:
            return self.problem(request, f"invalid spans payload: {exc}", 400, {"errors": [str(exc)]})
        for span in body.data.attributes.spans:
            if span.start_ns < (time.time() - 24 * 3600) * 1e9:
                return self.problem(request, "span older than 24 hours", 400)
        payload = request.json()
        self.payloads.append(payload)
        self.spans.extend(payload["data"]["attributes"]["spans"])
        return Reply(202, b"")

    def receive_evaluations(self, request: RecordedRequest) -> Reply:
        """``POST /api/intake/llm-obs/v2/eval-metric``: ``data.type`` evaluation_metric; each metric
        joined on a span (decimal span id, 32-hex trace id), ml_app, timestamp_ms, a label of ASCII
        letters/digits/underscores starting with a letter, and the value key of its metric_type."""
        try:
            body = request.json()
            data = body["data"]
            metrics = data["attributes"]["metrics"]
        except (ValueError, KeyError, TypeError):
            return self.problem(request, "not an evaluation_metric payload", 400, {"errors": ["bad payload"]})
        problems = [] if data.get("type") == "evaluation_metric" else ["data.type"]
        value_keys = {"score": "score_value", "boolean": "boolean_value", "categorical": "categorical_value"}
        for m in metrics:
            span = (m.get("join_on") or {}).get("span") or {}
            if not str(span.get("span_id", "")).isdigit() or not re.fullmatch(
                r"[0-9a-f]{32}", str(span.get("trace_id"))
            ):
                problems.append("join_on.span")
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,199}", str(m.get("label"))):
                problems.append(f"label {m.get('label')!r}")
            if not isinstance(m.get("timestamp_ms"), int) or not m.get("ml_app"):
                problems.append("timestamp_ms/ml_app")
            key = value_keys.get(m.get("metric_type"))
            value = m.get(key) if key else None
            ok = (
                (key == "score_value" and isinstance(value, (int, float)) and not isinstance(value, bool))
                or (key == "boolean_value" and isinstance(value, bool))
                or (key == "categorical_value" and isinstance(value, str))
            )
            if not ok:
                problems.append(f"metric_type {m.get('metric_type')!r} with its value")
        if problems:
            return self.problem(request, f"invalid evaluations: {problems}", 400, {"errors": problems})
        self.evaluations.extend(metrics)
        return Reply(202, {"data": {"type": "evaluation_metric"}})


class FakeWebhookReceiver(FakeServer):
    """A receiver of our webhook: checks the JSON against `schemas.WebhookBatch` / ``WebhookPing``
    and, with ``secret``, the ``X-Tracerelay-Signature`` (401 when wrong). Keeps each delivery
    once per ``X-Tracerelay-Delivery`` id, as a receiver should."""

    def __init__(self, *, secret: str | None = None, path: str = "/hook", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.secret = secret
        self.path = path
        self.deliveries: dict[str, dict[str, Any]] = {}
        self.pings: list[dict[str, Any]] = []

    def handle(self, request: RecordedRequest) -> Reply:
        from integrations.exporters.webhook import verify_signature

        if request.method != "POST" or request.path != self.path:
            return self.problem(request, f"unexpected {request.method} {request.path}", 404)
        if request.header("content-type") != "application/json":
            return self.problem(request, "content type must be application/json", 415)
        if self.secret is not None:
            signature = request.header("x-tracerelay-signature") or ""
            if not verify_signature(self.secret, signature, request.body):
                return Reply(401, {"error": "bad signature"})
        try:
            body = request.json()
            model = schemas.WebhookPing if body.get("type") == "ping" else schemas.WebhookBatch
            model.model_validate(body)
        except (ValueError, ValidationError, AttributeError) as exc:
            return self.problem(request, f"invalid payload: {exc}", 400)
        if body["type"] == "ping":
            self.pings.append(body)
        else:
            delivery = request.header("x-tracerelay-delivery") or ""
            if delivery != body["id"]:
                return self.problem(request, "X-Tracerelay-Delivery must equal the body id", 400)
            self.deliveries.setdefault(delivery, body)
        return Reply(200, {"received": True})

    @property
    def traces(self) -> list[dict[str, Any]]:
        return [t for d in self.deliveries.values() for t in d["traces"]]
