"""LangSmith: the runs batch API, ``POST {endpoint}/runs/batch`` with ``x-api-key``.

Why the runs API and not LangSmith's OTLP endpoint: a run id is the documented idempotency key
(a re-sent run answers 409, which the LangSmith SDK itself treats as "already stored"), so our
UUIDv5 run ids make retries and replays exactly-once; and runs carry LangSmith's first-class
fields — ``usage_metadata`` with costs, ``ls_provider`` / ``ls_model_name`` for its own cost
lookup, ``session_name`` for the project, tags, error — without depending on how its OTLP
translator reads GenAI attributes. Each trace is one root ``llm`` run (``trace_id == id``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any, ClassVar

from traces.records import ScoreRecord, TraceRecord

from . import ids
from .base import CheckResult, Encoded
from .calls import Call, iso, to_json
from .configs import Field
from .transport import HttpExporter, error_for_response


def dotted_order(call: Call) -> str:
    """``<YYYYMMDDTHHMMSSffffffZ><run id>``: a root run's single segment."""
    s = call.start.astimezone(UTC)  # not strftime: its %Y drops a year's leading zeros on Linux
    stamp = f"{s.year:04d}{s.month:02d}{s.day:02d}T{s.hour:02d}{s.minute:02d}{s.second:02d}{s.microsecond:06d}Z"
    return stamp + str(call.run_id)


def run_for(call: Call, project: str) -> dict[str, Any]:
    r = call.record
    usage: dict[str, Any] = {
        "input_tokens": r.prompt_tokens,
        "output_tokens": r.completion_tokens,
        "total_tokens": r.total_tokens,
    }
    if call.cost is not None:
        usage["total_cost"] = call.cost
    outputs: dict[str, Any] = {
        "choices": [
            {"index": i, "message": m.as_openai(), "finish_reason": m.finish_reason or None}
            for i, m in enumerate(call.outputs)
        ],
        "usage_metadata": usage,
    }
    if r.output is not None and not call.outputs:
        outputs["output"] = r.output
    metadata: dict[str, Any] = {
        **call.metadata,
        "ls_provider": r.provider,
        "ls_model_name": r.model,
        "ls_model_type": "chat" if call.operation == "chat" else "llm",
        "tracerelay_trace_id": r.trace_id,
    }
    for key in ("temperature", "max_tokens", "stop"):
        if key in call.parameters:
            metadata[f"ls_{key}"] = call.parameters[key]
    if r.user_id:
        metadata["user_id"] = r.user_id
    if r.session_id:
        metadata["session_id"] = r.session_id  # LangSmith threads group runs by this key
    if r.environment:
        metadata["environment"] = r.environment
    if r.service_name:
        metadata["service_name"] = r.service_name
    if r.unpriced:
        metadata["unpriced"] = True
    run: dict[str, Any] = {
        "id": str(call.run_id),
        "trace_id": str(call.run_id),
        "dotted_order": dotted_order(call),
        "name": call.name,
        "run_type": "llm" if call.operation != "embeddings" else "embedding",
        "session_name": project,
        "start_time": iso(call.start),
        "end_time": iso(call.end),
        "inputs": {"messages": [m.as_openai() for m in call.inputs], **call.parameters},
        "outputs": outputs,
        "extra": {"metadata": metadata, "invocation_params": {"model": r.model, **call.parameters}},
        "tags": list(call.tags),
        "error": f"{call.error_type}: {call.error_message}" if r.is_error else None,
    }
    if call.first_token_at is not None:
        run["events"] = [{"name": "new_token", "time": iso(call.first_token_at)}]
    return run


class LangsmithExporter(HttpExporter):
    platform = "langsmith"
    supports_scores = True
    label = "LangSmith"
    max_batch = 100  # the SDK's batch size; well under the 20 MiB size limit for typical traces
    fields: ClassVar[tuple[Field, ...]] = (
        Field("apiKey", required=True, secret=True, max_length=200),
        Field("projectId", default="default", aliases=("project", "projectName"), max_length=200),
        Field(
            "endpoint",
            "base_url",
            default="https://api.smith.langchain.com",
            aliases=("host",),
            help="EU: https://eu.api.smith.langchain.com; self-hosted: https://<host>/api/v1",
        ),
        Field("tenantId", max_length=100, aliases=("workspaceId",), help="Needed when the key spans workspaces."),
    )

    def headers(self) -> dict[str, str]:
        headers = {"x-api-key": str(self.config["apiKey"])}
        if self.config.get("tenantId"):
            headers["X-Tenant-Id"] = str(self.config["tenantId"])
        return headers

    def encode(self, record: TraceRecord) -> bytes:
        return to_json(run_for(Call.of(record, self.target), str(self.config["projectId"]))).encode()

    def export_encoded(self, batch: Sequence[Encoded]) -> None:
        if not batch:
            return
        body = b'{"post":[' + b",".join(e.item for e in batch) + b'],"patch":[]}'
        response = self.request(
            "POST",
            f"{self.config['endpoint']}/runs/batch",
            content=body,
            headers={**self.headers(), "Content-Type": "application/json"},
        )
        if response.status_code == 409:
            return  # these run ids are already stored: a retry of something that got through
        error = error_for_response(response, self.destination)
        if error is not None:
            raise error

    def export_scores(self, scores: Sequence[ScoreRecord]) -> None:
        """LangSmith feedback: one ``POST {endpoint}/feedback`` per score, on the run our trace became
        (its run id), keyed by the score's name; numbers and booleans as ``score``, a category as
        ``value``; a stable feedback id, so a re-send is the same feedback."""
        for score in scores:
            run_id = str(ids.run_uuid(score.team_id, score.trace_id))
            body: dict[str, Any] = {
                "id": str(ids.score_uuid(score.team_id, score.score_id, self.target.name)),
                "run_id": run_id,
                "key": score.name,
                "feedback_source": {"type": "api", "metadata": {"source": score.source}},
            }
            if score.data_type == "categorical":
                body["value"] = score.value
            else:
                body["score"] = (1 if score.value else 0) if score.data_type == "boolean" else score.value
            if score.comment:
                body["comment"] = score.comment
            response = self.request(
                "POST",
                f"{self.config['endpoint']}/feedback",
                content=to_json(body).encode(),
                headers={**self.headers(), "Content-Type": "application/json"},
            )
            if response.status_code == 409:
                continue  # this feedback id is stored already: a re-send of one that got through
            error = error_for_response(response, self.destination)
            if error is not None:
                raise error

    def check(self) -> CheckResult:
        """Lists one project (``GET /sessions``): the key and the workspace, nothing written."""
        return self.probe(
            "GET",
            f"{self.config['endpoint']}/sessions",
            params={"limit": 1},
            headers=self.headers(),
            ok_message="LangSmith accepted the API key.",
        )
