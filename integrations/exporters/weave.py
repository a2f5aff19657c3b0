"""W&B Weave: OTLP/HTTP protobuf (Weave accepts nothing else) to ``{host}/otel/v1/traces``
(Traces view) or ``{host}/agents/otel/v1/traces`` (Agents view), Basic auth ``api:<key>`` with
the ``project_id: <entity>/<project>`` header; the same routing also as the resource attributes
``wandb.entity`` / ``wandb.project``. Sessions become Weave threads (``wandb.thread_id``). A run is one
Weave trace: its spans share the OTLP trace id and nest as calls by parent span id.

Scores become Weave feedback (``POST {host}/feedback/create``) on the call our span became: Weave
names a call ingested over OTLP by its span id, so its ref is ``weave:///<entity>/<project>/call/<span
id hex>``."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from traces.records import ScoreRecord

from . import ids
from .base import CheckResult, ConfigError
from .calls import Call, to_json
from .configs import Field
from .otlp import OtlpExporter
from .phoenix import OPENINFERENCE_KINDS

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}"
# Weave's own feedback types (reactions, notes, annotations, scorers) start with this; a score with
# such a name is sent under ``tracerelay.<name>`` so Weave never reads it as one of its own.
RESERVED_PREFIX = "wandb."


def weave_feedback(score: ScoreRecord, project_id: str, destination: str) -> dict[str, Any]:
    """A ``FeedbackCreateReq``: a custom feedback type named after the score, its payload the value
    (a number, a boolean or a category) with its type, comment and source; ``id`` stable per (team,
    destination, score), so a re-send carries the same feedback id."""
    call_id = ids.otel_span_id(score.team_id, score.trace_id).hex()
    feedback_type = score.name
    if feedback_type.startswith(RESERVED_PREFIX):
        feedback_type = f"tracerelay.{feedback_type}"
    payload: dict[str, Any] = {
        "value": score.value,
        "data_type": score.data_type,
        "source": score.source,
        "tracerelay_score_id": score.score_id,
    }
    if score.comment:
        payload["comment"] = score.comment
    return {
        "id": str(ids.score_uuid(score.team_id, score.score_id, destination)),
        "project_id": project_id,
        "weave_ref": f"weave:///{project_id}/call/{call_id}",
        "feedback_type": feedback_type,
        "payload": payload,
        "creator": f"tracerelay ({score.source})",
    }


class WeaveExporter(OtlpExporter):
    platform = "weave"
    label = "W&B Weave"
    supports_scores = True
    fields: ClassVar[tuple[Field, ...]] = (
        Field("apiKey", required=True, secret=True, max_length=200),
        Field("entity", pattern=NAME_PATTERN, pattern_hint="must be a W&B team or user name"),
        Field("project", pattern=NAME_PATTERN, pattern_hint="must be a W&B project name"),
        Field(
            "projectId",
            pattern=rf"{NAME_PATTERN}/{NAME_PATTERN}",
            pattern_hint="must be <entity>/<project>",
            help="Alternative to entity + project.",
        ),
        Field("host", "base_url", default="https://trace.wandb.ai", help="Self-managed: https://<you>.wandb.io/traces"),
        Field("view", "choice", default="traces", choices=("traces", "agents")),
    )

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = super().validate_config(config)
        project_id = cleaned.pop("projectId", None)
        if project_id:
            entity, project = project_id.split("/", 1)
            if cleaned.get("entity", entity) != entity or cleaned.get("project", project) != project:
                raise ConfigError({"projectId": ["disagrees with entity/project; give one or the other"]})
            cleaned["entity"], cleaned["project"] = entity, project
        missing = {name: ["This field is required."] for name in ("entity", "project") if not cleaned.get(name)}
        if missing:
            raise ConfigError({**missing, "projectId": ["or give projectId as <entity>/<project>"]})
        return cleaned

    @property
    def project_id(self) -> str:
        return f"{self.config['entity']}/{self.config['project']}"

    def traces_url(self) -> str:
        path = "/agents/otel/v1/traces" if self.config.get("view") == "agents" else "/otel/v1/traces"
        return f"{self.config['host']}{path}"

    def auth_headers(self) -> dict[str, str]:
        token = base64.b64encode(f"api:{self.config['apiKey']}".encode()).decode()
        return {"Authorization": f"Basic {token}", "project_id": self.project_id}

    def resource_attributes(self, call: Call) -> dict[str, Any]:
        return {
            **super().resource_attributes(call),
            "wandb.entity": self.config["entity"],
            "wandb.project": self.config["project"],
        }

    def span_attributes(self, call: Call) -> dict[str, Any]:
        r = call.record
        attrs = {**super().span_attributes(call), "wandb.display_name": call.name}
        if not call.is_call:  # Weave reads OpenInference kinds for the calls it nests
            attrs["openinference.span.kind"] = OPENINFERENCE_KINDS.get(r.kind, "UNKNOWN")
        if r.reasoning_tokens:  # the name Weave's GenAI extraction reads its reasoning tokens from
            attrs["gen_ai.usage.reasoning_tokens"] = r.reasoning_tokens
        if r.session_id:
            attrs["wandb.thread_id"] = r.session_id
            attrs["wandb.is_turn"] = not r.parent_id  # a thread's turn is a run's root
        if r.input is not None:
            attrs["input.value"] = to_json(r.input)
        if r.output is not None:
            attrs["output.value"] = to_json(r.output)
        return attrs

    def export_scores(self, scores: Sequence[ScoreRecord]) -> None:
        """One ``POST {host}/feedback/create`` per score (the single-item endpoint every Weave
        server has), on the call our trace's span became."""
        headers = {"Authorization": self.auth_headers()["Authorization"], "Content-Type": "application/json"}
        for score in scores:
            body = weave_feedback(score, self.project_id, self.target.name)
            self.send("POST", f"{self.config['host']}/feedback/create", content=to_json(body).encode(), headers=headers)

    def check(self) -> CheckResult:
        """A one-row stats query on the project: the key and the project access, nothing written."""
        return self.probe(
            "POST",
            f"{self.config['host']}/calls/query_stats",
            json={"project_id": self.project_id, "limit": 1},
            headers={"Authorization": self.auth_headers()["Authorization"]},
            ok_message=f"Weave accepted the key for {self.project_id}.",
        )
