"""Strict pydantic models of the JSON bodies the native destinations take, written from their
documentation and SDK sources (shared/reference/destinations.md): unknown fields are refused,
so an exporter that drifts from the real format fails the fake server's check.

LangSmith: ``RunBase`` / ``UsageMetadata`` (langsmith ``schemas.py``) plus the batch endpoint's
own requirements (``trace_id``, ``dotted_order``). Helicone: the worker's ``validateAsyncLogModel``.
Datadog: the LLM Observability span intake API. Webhook: our own payload (docs/destinations/webhook.md).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- LangSmith -----------------------------------------------------------------------------------

DOTTED_SEGMENT = re.compile(r"^(\d{8}T\d{6}\d{6}Z)([0-9a-f-]{36})$")


class LangSmithUsage(Strict):
    input_tokens: int
    output_tokens: int
    total_tokens: int
    input_token_details: dict[str, int] | None = None
    output_token_details: dict[str, int] | None = None
    input_cost: float | None = None
    output_cost: float | None = None
    total_cost: float | None = None
    input_cost_details: dict[str, float] | None = None
    output_cost_details: dict[str, float] | None = None


class LangSmithRun(Strict):
    id: UUID
    name: str = Field(min_length=1)
    run_type: Literal["llm", "chain", "tool", "retriever", "embedding", "prompt", "parser"]
    start_time: datetime
    end_time: datetime | None = None
    inputs: dict[str, Any]
    outputs: dict[str, Any] | None = None
    error: str | None = None
    extra: dict[str, Any] | None = None
    tags: list[str] | None = None
    parent_run_id: UUID | None = None
    trace_id: UUID
    dotted_order: str
    session_name: str | None = None
    session_id: UUID | None = None
    events: list[dict[str, Any]] | None = None
    serialized: dict[str, Any] | None = None
    reference_example_id: UUID | None = None

    @model_validator(mode="after")
    def _batch_rules(self) -> LangSmithRun:
        segments = [DOTTED_SEGMENT.match(part) for part in self.dotted_order.split(".")]
        if not all(segments):
            raise ValueError("dotted_order is <YYYYMMDDTHHMMSSffffffZ><run id> segments joined by '.'")
        ids = [m.group(2) for m in segments if m]
        if ids[-1] != str(self.id):
            raise ValueError("dotted_order must end with <YYYYMMDDTHHMMSSffffffZ><run id>")
        if self.parent_run_id is None and (self.trace_id != self.id or len(ids) != 1):
            raise ValueError("a root run has trace_id == id and one dotted_order segment")
        if self.parent_run_id is not None:
            if len(ids) < 2 or ids[-2] != str(self.parent_run_id):
                raise ValueError("a child's dotted_order must end with its parent's segment, then its own")
            if ids[0] != str(self.trace_id):
                raise ValueError("dotted_order must start with the root run (the trace_id)")
        stamp = segments[-1].group(1) if segments[-1] else ""
        t = self.start_time.astimezone(UTC) if self.start_time.tzinfo else self.start_time
        if stamp != f"{t.year:04d}{t:%m%dT%H%M%S%f}Z":  # not %Y: it drops a year's leading zeros
            raise ValueError("a dotted_order segment's time is the run's start_time")
        if self.outputs and "usage_metadata" in self.outputs:
            LangSmithUsage.model_validate(self.outputs["usage_metadata"])
        return self


class LangSmithBatch(Strict):
    post: list[LangSmithRun] = []
    patch: list[LangSmithRun] = []


# --- Helicone ------------------------------------------------------------------------------------


class HeliconeInstant(Strict):
    seconds: int = Field(ge=0)
    milliseconds: int = Field(ge=0, le=999)


class HeliconeTiming(Strict):
    startTime: HeliconeInstant
    endTime: HeliconeInstant
    timeToFirstToken: float | None = None


class HeliconeProviderRequest(Strict):
    url: str
    json_: dict[str, Any] = Field(alias="json")
    meta: dict[str, str]

    @field_validator("meta")
    @classmethod
    def _request_id_is_uuid(cls, meta: dict[str, str]) -> dict[str, str]:
        if "Helicone-Request-Id" in meta:
            UUID(meta["Helicone-Request-Id"])
        return meta


class HeliconeProviderResponse(Strict):
    json_: dict[str, Any] = Field(alias="json")
    status: int
    headers: dict[str, str]
    textBody: str | None = None


class HeliconeLog(Strict):
    providerRequest: HeliconeProviderRequest
    providerResponse: HeliconeProviderResponse
    timing: HeliconeTiming


# --- Datadog LLM Observability -------------------------------------------------------------------


class DatadogMessage(Strict):
    content: str
    role: str | None = None


class DatadogIO(Strict):
    value: str | None = None
    messages: list[DatadogMessage] | None = None
    documents: list[dict[str, Any]] | None = None
    prompt: dict[str, Any] | None = None


class DatadogError(Strict):
    message: str | None = None
    type: str | None = None
    stack: str | None = None


class DatadogMeta(Strict):
    kind: Literal["llm", "agent", "workflow", "tool", "task", "embedding", "retrieval"]
    input: DatadogIO | None = None
    output: DatadogIO | None = None
    error: DatadogError | None = None
    metadata: dict[str, float | bool | str] | None = None
    model_name: str | None = None  # the SDK writes these on meta itself
    model_provider: str | None = None


class DatadogSpan(Strict):
    name: str
    span_id: str = Field(pattern=r"^[0-9]+$")
    trace_id: str
    parent_id: str = Field(pattern=r"^([0-9]+|undefined)$")  # a root's is the literal "undefined"
    start_ns: int = Field(ge=0)
    duration: int = Field(ge=0)
    meta: DatadogMeta
    status: Literal["ok", "error"] = "ok"
    apm_trace_id: str | None = None
    metrics: dict[str, float] | None = None
    session_id: str | None = None
    tags: list[str] | None = None


class DatadogSpansPayload(Strict):
    ml_app: str = Field(max_length=193, pattern=r"^[a-z0-9_:./-]+$")
    spans: list[DatadogSpan] = Field(min_length=1)
    tags: list[str] | None = None
    session_id: str | None = None


class DatadogData(Strict):
    type: Literal["span"]
    attributes: DatadogSpansPayload


class DatadogIntake(Strict):
    data: DatadogData


# --- W&B Weave feedback -------------------------------------------------------------------------


class WeaveFeedbackCreate(Strict):
    """``FeedbackCreateReq`` (weave/trace_server/trace_server_interface.py, strict there too): the
    fields a client may send to ``POST /feedback/create``."""

    id: str | None = None
    project_id: str
    weave_ref: str
    creator: str | None = None
    feedback_type: str = Field(min_length=1)
    payload: dict[str, Any]
    annotation_ref: str | None = None
    runnable_ref: str | None = None
    call_ref: str | None = None
    trigger_ref: str | None = None
    wb_user_id: str | None = None


# --- our webhook ---------------------------------------------------------------------------------


class WebhookError(Strict):
    type: str
    message: str


class WebhookTrace(Strict):
    id: str
    run_id: str = Field(min_length=1, max_length=128)
    parent_id: str | None
    kind: Literal["llm", "embedding", "agent", "tool", "retrieval", "chain", "workflow", "guardrail", "event", "other"]
    name: str
    timestamp: datetime
    end_time: datetime
    model: str
    provider: str
    status: Literal["success", "error", "rate_limited"]
    error: WebhookError | None
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    input_audio_tokens: int
    input_image_tokens: int
    reasoning_tokens: int
    output_audio_tokens: int
    output_image_tokens: int
    cost: float | None
    cost_currency: Literal["USD"]
    unpriced: bool
    usage_estimated: bool
    latency_ms: int | None
    time_to_first_token_ms: int | None
    input: Any
    output: Any
    tags: list[str]
    metadata: dict[str, Any]
    environment: str
    service_name: str
    session_id: str
    user_id: str
    source: str


class WebhookBatch(Strict):
    type: Literal["traces"]
    version: Literal[1]
    id: str = Field(min_length=16)
    destination: str
    traces: list[WebhookTrace] = Field(min_length=1)


class WebhookPing(Strict):
    type: Literal["ping"]
    version: Literal[1]
    id: str
    destination: str
