"""LangSmith: the runs batch API, ``POST {endpoint}/runs/batch`` with ``x-api-key``.

Why the runs API and not LangSmith's OTLP endpoint: a run id is the documented idempotency key
(a re-sent run answers 409, which the LangSmith SDK itself treats as "already stored"), so our
UUIDv5 run ids make retries and replays exactly-once; and runs carry LangSmith's first-class
fields — ``usage_metadata`` with costs, ``ls_provider`` / ``ls_model_name`` for its own cost
lookup, ``session_name`` for the project, tags, error — without depending on how its OTLP
translator reads GenAI attributes.

A run is one LangSmith trace: every span is a run with its own UUIDv5 id, the root's id as
``trace_id``, ``parent_run_id``, and ``dotted_order`` made of its ancestors' segments (their start
times and ids, read from the database), root first. A span whose ancestors have not all arrived
waits (`NotYet`, no attempt spent) and gives up after an hour; a trace sent without a run is one
root run (``trace_id == id``), as before. Agents and chains are ``chain`` runs, tools ``tool``,
retrievals ``retriever``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit
from uuid import UUID

import httpx

from traces.lineage import Ancestor, ancestors
from traces.records import ScoreRecord, TraceRecord

from . import ids
from .base import CheckResult, Encoded, ExportError, NotYet, Refused, Unencodable
from .calls import Call, iso, to_json
from .configs import Field
from .transport import HttpExporter, error_for_response, errors_in_answer

# Our span kinds → LangSmith run types (llm, chain, tool, retriever, embedding, prompt, parser).
RUN_TYPES = {
    "llm": "llm",
    "embedding": "embedding",
    "tool": "tool",
    "retrieval": "retriever",
}
# How long a span waits for its parent to arrive before it gives up (LangSmith needs every
# ancestor's start time and id in `dotted_order`); replay it once the parent is stored.
PARENT_WAIT = timedelta(hours=1)


def segment(start: datetime, run_id: UUID) -> str:
    """One ``dotted_order`` segment: ``<YYYYMMDDTHHMMSSffffffZ><run id>``."""
    s = (start if start.tzinfo else start.replace(tzinfo=UTC)).astimezone(
        UTC
    )  # not strftime: its %Y drops a year's leading zeros on Linux
    stamp = f"{s.year:04d}{s.month:02d}{s.day:02d}T{s.hour:02d}{s.minute:02d}{s.second:02d}{s.microsecond:06d}Z"
    return stamp + str(run_id)


def dotted_order(call: Call, lineage: Sequence[Ancestor] = ()) -> str:
    """The segments of the run's ancestors, root first, then its own, joined by ``.``."""
    team = call.record.team_id
    parts = [segment(a.timestamp, ids.run_uuid(team, a.trace_id)) for a in lineage]
    return ".".join([*parts, segment(call.start, call.run_id)])


def _structural_run(call: Call) -> dict[str, Any]:
    """An agent, chain, tool … as a LangSmith run (no model, no usage)."""
    r = call.record
    metadata: dict[str, Any] = {**call.metadata, "tracerelay_trace_id": r.trace_id, "tracerelay_kind": r.kind}
    for key in ("user_id", "session_id", "environment", "service_name"):
        if getattr(r, key):
            metadata[key] = getattr(r, key)
    return {
        "name": call.name,
        "run_type": RUN_TYPES.get(r.kind, "chain"),
        "inputs": r.input if isinstance(r.input, dict) else ({} if r.input is None else {"input": r.input}),
        "outputs": r.output if isinstance(r.output, dict) else (None if r.output is None else {"output": r.output}),
        "extra": {"metadata": metadata},
    }


def run_for(call: Call, project: str, lineage: Sequence[Ancestor] = ()) -> dict[str, Any]:
    """A span as a LangSmith run: its own UUIDv5 id, the run's ``trace_id`` (the root's id),
    ``parent_run_id`` and ``dotted_order`` from ``lineage`` (its ancestors, root first)."""
    r = call.record
    team = r.team_id
    tree: dict[str, Any] = {
        "id": str(call.run_id),
        "trace_id": str(ids.run_uuid(team, lineage[0].trace_id)) if lineage else str(call.run_id),
        "dotted_order": dotted_order(call, lineage),
        "session_name": project,
        "start_time": iso(call.start),
        "end_time": iso(call.end),
        "tags": list(call.tags),
        "error": f"{call.error_type}: {call.error_message}" if r.is_error else None,
    }
    if r.parent_id:
        tree["parent_run_id"] = str(ids.run_uuid(team, r.parent_id))
    if not call.is_call:
        return {**tree, **_structural_run(call)}
    return {**tree, **_call_run(call)}


def _call_run(call: Call) -> dict[str, Any]:
    r = call.record
    usage: dict[str, Any] = {
        "input_tokens": r.prompt_tokens,
        "output_tokens": r.completion_tokens,
        "total_tokens": r.total_tokens,
    }
    # LangChain's UsageMetadata details: parts of input_tokens and output_tokens.
    input_details = {
        "cache_read": r.cached_tokens,
        "cache_creation": r.cache_write_tokens,
        "audio": r.input_audio_tokens,
    }
    output_details = {"reasoning": r.reasoning_tokens, "audio": r.output_audio_tokens}
    if any(input_details.values()):
        usage["input_token_details"] = {k: v for k, v in input_details.items() if v}
    if any(output_details.values()):
        usage["output_token_details"] = {k: v for k, v in output_details.items() if v}
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
        "name": call.name,
        "run_type": "llm" if call.operation != "embeddings" else "embedding",
        "inputs": {"messages": [m.as_openai() for m in call.inputs], **call.parameters},
        "outputs": outputs,
        "extra": {"metadata": metadata, "invocation_params": {"model": r.model, **call.parameters}},
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
        Field(
            "projectUuid",
            max_length=36,
            pattern=r"[0-9a-fA-F-]{36}",
            pattern_hint="the project's UUID from its LangSmith URL (…/projects/p/<uuid>)",
            help='Optional, with tenantId: the project\'s UUID in LangSmith URLs, for "Open in LangSmith" links.',
        ),
    )

    @classmethod
    def trace_url(cls, config: Mapping[str, Any], *, team_id: int, trace_id: str, run_id: str) -> str | None:
        """``{web}/o/{tenantId}/projects/p/{projectUuid}/r/{run id}``: the run id this exporter gave the
        span (`ids.run_uuid`). The web host is the API endpoint's without ``api.`` / ``/api/v1``."""
        tenant, project = config.get("tenantId"), config.get("projectUuid")
        if not tenant or not project:
            return None
        web = web_host(str(config.get("endpoint") or "https://api.smith.langchain.com"))
        run = ids.run_uuid(team_id, trace_id)
        return f"{web}/o/{quote(str(tenant), safe='')}/projects/p/{quote(str(project), safe='')}/r/{run}"

    def headers(self) -> dict[str, str]:
        headers = {"x-api-key": str(self.config["apiKey"])}
        if self.config.get("tenantId"):
            headers["X-Tenant-Id"] = str(self.config["tenantId"])
        return headers

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lineage: dict[str, tuple[Ancestor, ...] | None] = {}

    def prepare(self, traces: Sequence[TraceRecord]) -> None:
        """Each span's ancestors, for its ``dotted_order`` (spans without a parent need none)."""
        with_parents = [t for t in traces if t.parent_id]
        self.lineage = ancestors(with_parents[0].team_id, with_parents) if with_parents else {}

    def encode(self, record: TraceRecord) -> bytes:
        call = Call.of(record, self.target)
        chain: tuple[Ancestor, ...] = ()
        if record.parent_id:
            found = self.lineage.get(record.trace_id)
            if found is None:
                if call.start < datetime.now(UTC) - PARENT_WAIT:
                    raise Unencodable(
                        f"an ancestor of this span (its parent {record.parent_id!r} or above) never arrived, and "
                        "LangSmith needs every ancestor in dotted_order; replay it once the ancestors are stored"
                    )
                raise NotYet(f"its parent span {record.parent_id!r} (or an ancestor) has not arrived yet")
            chain = found
        return to_json(run_for(call, str(self.config["projectId"]), chain)).encode()

    def export_encoded(self, batch: Sequence[Encoded]) -> Refused | None:
        if not batch:
            return None
        response = self._post([e.item for e in batch])
        if response.status_code == 409 and len(batch) > 1:
            # Some run ids of the batch are stored already and LangSmith refused the whole batch:
            # each run alone learns which are new (a stored one answers 409 again: delivered).
            return self._one_by_one(batch)
        self._raise_for_answer(response)
        return None

    def _post(self, items: Sequence[bytes]) -> httpx.Response:
        body = b'{"post":[' + b",".join(items) + b'],"patch":[]}'
        return self.request(
            "POST",
            f"{self.config['endpoint']}/runs/batch",
            content=body,
            headers={**self.headers(), "Content-Type": "application/json"},
        )

    def _raise_for_answer(self, response: httpx.Response) -> None:
        if response.status_code == 409:
            return  # these run ids are already stored: a retry of something that got through
        error = error_for_response(response, self.destination)
        if error is not None:
            raise error
        reported = errors_in_answer(response)
        if reported:
            raise ExportError(
                f"{self.destination} answered HTTP {response.status_code} with errors: {reported}",
                status_code=response.status_code,
            )

    def _one_by_one(self, batch: Sequence[Encoded]) -> Refused:
        refused: Refused = {}
        for index, encoded in enumerate(batch):
            try:
                self._raise_for_answer(self._post([encoded.item]))
            except ExportError as exc:
                refused[index] = exc
        return refused

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


def web_host(endpoint: str) -> str:
    """LangSmith's web app for an API endpoint: https://api.smith.langchain.com → https://smith.langchain.com,
    https://eu.api.smith.langchain.com → https://eu.smith.langchain.com, https://host/api/v1 → https://host."""
    parts = urlsplit(endpoint.rstrip("/"))
    host = parts.netloc
    if host == "api.smith.langchain.com" or host.endswith(".api.smith.langchain.com"):
        host = host.replace("api.smith.langchain.com", "smith.langchain.com")
    path = parts.path.removesuffix("/api/v1").removesuffix("/api")
    return f"{parts.scheme}://{host}{path}"
