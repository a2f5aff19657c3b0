"""The run API (docs/runs.md): `GET /api/v1/runs` (the list, newest first, cursor-paginated like the
feed) and `GET /api/v1/runs/{run_id}` (every span of a run and its totals, in one answer)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.jsoncodec import dumps
from config.problems import Problem, problem_responses

from ..api import CURSOR, json_response, parse_limit, reject_unknown_parameters
from ..filters import FilterError
from . import selectors
from .serializers import RunDetailSerializer, RunPageSerializer, run_json

TAG = "Runs"
_TEXT = {"type": "string", "maxLength": 200}
_TIME = {"type": "string", "format": "date-time"}


class RunList(APIView):
    permission_classes = [scoped(Scope.TRACES_READ)]

    @extend_schema(
        tags=[TAG],
        operation_id="runs_list",
        summary="List runs",
        description="Runs (trees of spans; a trace sent without `run_id` is a run of its own), newest first by "
        "their earliest span, with their figures. Read from a per-run summary kept at ingest: a page costs "
        "the same at any number of traces.",
        parameters=[
            OpenApiParameter("since", _TIME, description="Runs that started at or after this time (ISO 8601)."),
            OpenApiParameter("until", _TIME, description="Runs that started before this time (ISO 8601)."),
            OpenApiParameter(
                "status", str, enum=["success", "error"], description="`error`: a span failed; `success`: none did."
            ),
            OpenApiParameter("name", _TEXT, description="The root span's name, exactly."),
            OpenApiParameter("user_id", _TEXT, description="The run's end user."),
            OpenApiParameter("session_id", _TEXT, description="The run's session."),
            OpenApiParameter(
                "limit", {"type": "integer", "minimum": 1}, description="Page size (default 50, at most 500)."
            ),
            OpenApiParameter(
                "cursor", CURSOR, description="`next_cursor` of the previous page, unchanged; any other value is a 400."
            ),
        ],
        responses={200: RunPageSerializer, **problem_responses(400, 401, 403)},
    )
    def get(self, request: Request) -> HttpResponse:
        principal = principal_of(request)
        params = request.query_params
        reject_unknown_parameters(params, (*selectors.RUN_FILTER_PARAMS, "limit", "cursor"))
        try:
            run_filter = selectors.parse_run_filter(params)
        except FilterError as exc:
            raise Problem(400, "invalid-parameter", exc.message, errors={exc.param: [exc.message]}, parameter=exc.param)
        limit = parse_limit(params.get("limit"), default=50, maximum=500) or 50
        try:
            rows, next_cursor = selectors.run_page(
                team_id=principal.team_id, run_filter=run_filter, limit=limit, cursor=params.get("cursor")
            )
        except selectors.CursorError as exc:
            raise Problem(400, "invalid-parameter", str(exc), errors={"cursor": [str(exc)]}, parameter="cursor")
        return json_response({"data": [run_json(r) for r in rows], "next_cursor": next_cursor})


class RunDetail(APIView):
    permission_classes = [scoped(Scope.TRACES_READ)]

    @extend_schema(
        tags=[TAG],
        operation_id="runs_retrieve",
        summary="Get one run: every span and the totals",
        description="Every span of the run in one answer (up to 100,000; without input/output), oldest first, "
        "and its totals: only `llm` and `embedding` spans count as calls, are priced, or are unpriced. Spans "
        "may arrive in any order: the tree is whole once every span has. An unknown run, or another team's, "
        "is a 404.",
        responses={200: RunDetailSerializer, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, run_id: str) -> HttpResponse:
        principal = principal_of(request)
        run = selectors.run_spans(team_id=principal.team_id, run_id=run_id)
        if run is None:
            raise Problem(404, "not-found", f"No run '{run_id[:128]}' in this team.")
        # The spans' JSON comes from Postgres as it is: spliced in, never parsed and dumped again.
        head = dumps({"run_id": run.run_id}).decode()[:-1]
        tail = dumps({"totals": run.totals, "truncated": run.truncated}).decode()[1:]
        body = f'{head},"spans":{run.spans_json},{tail}'
        return HttpResponse(body.encode(), content_type="application/json")
