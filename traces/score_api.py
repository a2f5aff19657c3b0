"""The scores API (docs/scores.md): `POST`/`GET /api/v1/traces/{id}/scores` and
`POST`/`GET /api/v1/runs/{run_id}/scores` (a run's score is its root span's; the list is every span's)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import HasApiKey, principal_of
from config.problems import InvalidInput, Problem, problem_responses
from pipeline.scores import score_create

from . import selectors
from .api import json_response, read_json_body
from .models import Trace
from .runs.selectors import run_get
from .scores import parse_score, score_json, scores_of, scores_of_run

TAG = "Scores"
BODY_MAX = 64 * 1024


_VALUE = {
    "oneOf": [
        {"type": "number", "minimum": -1e15, "maximum": 1e15},
        {"type": "boolean"},
        {"type": "string", "minLength": 1, "maxLength": 200},
    ],
    "description": "A number (numeric), a boolean (boolean) or a string: a category (categorical).",
}
SCORE_IN = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "value"],
    "properties": {
        "name": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_.:-]{1,200}$",
            "description": "The score's name (`helpfulness`, `thumbs`).",
        },
        "value": _VALUE,
        "comment": {"type": "string", "maxLength": 10_000, "nullable": True, "description": "null: none."},
        "source": {
            "type": "string",
            "nullable": True,
            "minLength": 1,
            "maxLength": 64,
            "description": "Who scored: `api` (default; also for null), `human`, `eval`, ...",
        },
    },
}
SCORE_OUT = {
    "type": "object",
    "required": ["id", "trace_id", "name", "value", "data_type", "comment", "source", "created_at"],
    "properties": {
        "id": {"type": "string"},
        "trace_id": {"type": "string"},
        "name": {"type": "string"},
        "value": _VALUE,
        "data_type": {"type": "string", "enum": ["numeric", "boolean", "categorical"]},
        "comment": {"type": "string"},
        "source": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
    },
}


def trace_or_404(team_id: int, trace_id: str) -> Trace:
    trace = selectors.trace_get(team_id=team_id, trace_id=trace_id)
    if trace is None:
        raise Problem(404, "not-found", f"No trace '{trace_id[:128]}' in this team.")
    return trace


def run_root_or_problem(team_id: int, run_id: str) -> Trace:
    """The run's root span: a 404 for an unknown run (or another team's), a 409 while its root has not
    arrived (spans may come in any order; the client retries once the root is in)."""
    run = run_get(team_id=team_id, run_id=run_id)
    if run is None:
        raise Problem(404, "not-found", f"No run '{run_id[:128]}' in this team.")
    root = selectors.trace_get(team_id=team_id, trace_id=run.root_id) if run.root_id else None
    if root is None:
        raise Problem(
            409,
            "run-without-root",
            f"Run '{run_id[:128]}' has no root span yet: a run's score goes on its root. Retry once it has arrived.",
        )
    return root


class _MayScore(HasApiKey):
    """Reading takes `traces:read`; posting `ingest` (an SDK's key, a CI key) or `traces:read` (a
    person's token through the CLI: user tokens never ingest)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        super().has_permission(request, view)
        principal = principal_of(request)
        if request.method in ("GET", "HEAD", "OPTIONS"):
            allowed, needed = principal.has_scope(Scope.TRACES_READ), str(Scope.TRACES_READ)
        else:
            allowed = principal.has_scope(Scope.INGEST) or principal.has_scope(Scope.TRACES_READ)
            needed = str(Scope.INGEST)
        if not allowed:
            raise Problem(403, "insufficient-scope", principal.refusal(needed), required_scope=needed)
        return True


_SCORE_EXAMPLES = [
    OpenApiExample("numeric", value={"name": "helpfulness", "value": 0.8, "comment": "good"}, request_only=True),
    OpenApiExample("thumbs", value={"name": "thumbs", "value": True, "source": "human"}, request_only=True),
]


class TraceScores(APIView):
    permission_classes = [_MayScore]

    @extend_schema(
        tags=[TAG],
        operation_id="trace_scores_list",
        summary="List a trace's scores",
        responses={200: {"type": "array", "items": SCORE_OUT}, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, trace_id: str) -> HttpResponse:
        trace = trace_or_404(principal_of(request).team_id, trace_id)
        return json_response([score_json(s, trace.trace_id) for s in scores_of(trace)])

    @extend_schema(
        tags=[TAG],
        operation_id="trace_scores_create",
        summary="Score a trace",
        description="Stores a score or a piece of feedback and sends it to every destination that received "
        "the trace, and to one that receives it later (each in its own terms; an integration's "
        "`config.score_mappings` renames or withholds it). `data_type` follows the value's JSON type.",
        request={"application/json": SCORE_IN},
        responses={201: SCORE_OUT, **problem_responses(400, 401, 403, 404, 413, 415)},
        examples=_SCORE_EXAMPLES,
    )
    def post(self, request: Request, trace_id: str) -> HttpResponse:
        body = read_json_body(request, BODY_MAX, "score")  # a bad body is the same problem on every path
        trace = trace_or_404(principal_of(request).team_id, trace_id)
        try:
            data = parse_score(body)
        except InvalidInput as exc:
            raise Problem(400, "invalid-score", "The score is not valid.", errors=exc.errors)
        score = score_create(trace=trace, data=data)
        return json_response(score_json(score, trace.trace_id), status=201)


class RunScores(APIView):
    permission_classes = [_MayScore]

    @extend_schema(
        tags=[TAG],
        operation_id="run_scores_list",
        summary="List the scores of a run's spans",
        description="Every score of every span of the run, oldest first; each names its span in `trace_id` "
        "(a score posted on the run is on its root span). An unknown run, or another team's, is a 404.",
        responses={200: {"type": "array", "items": SCORE_OUT}, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, run_id: str) -> HttpResponse:
        team_id = principal_of(request).team_id
        if run_get(team_id=team_id, run_id=run_id) is None:
            raise Problem(404, "not-found", f"No run '{run_id[:128]}' in this team.")
        return json_response([score_json(s, s.trace.trace_id) for s in scores_of_run(team_id, run_id)])

    @extend_schema(
        tags=[TAG],
        operation_id="run_scores_create",
        summary="Score a run",
        description="The same body and answer as scoring a trace: the score goes on the run's root span "
        "(`trace_id` in the answer) and is routed like it. A run whose root span has not arrived yet is "
        "a 409 (`run-without-root`): retry once it has.",
        request={"application/json": SCORE_IN},
        responses={201: SCORE_OUT, **problem_responses(400, 401, 403, 404, 409, 413, 415)},
        examples=_SCORE_EXAMPLES,
    )
    def post(self, request: Request, run_id: str) -> HttpResponse:
        body = read_json_body(request, BODY_MAX, "score")  # a bad body before the run's lookup
        try:
            data = parse_score(body)
        except InvalidInput as exc:
            raise Problem(400, "invalid-score", "The score is not valid.", errors=exc.errors)
        root = run_root_or_problem(principal_of(request).team_id, run_id)
        score = score_create(trace=root, data=data)
        return json_response(score_json(score, root.trace_id), status=201)


SCORE_PATHS = ("/api/v1/traces/{trace_id}/scores", "/api/v1/runs/{run_id}/scores")


def require_score_body(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular post-processing hook: a score's body is required (an empty POST is the
    `empty-body` problem), which a raw schema in `extend_schema(request=...)` cannot say."""
    for path in SCORE_PATHS:
        operation = result.get("paths", {}).get(path, {}).get("post")
        if operation and "requestBody" in operation:
            operation["requestBody"]["required"] = True
    return result
