"""The re-pricing API (docs/pricing.md, "Re-pricing").

POST /api/v1/prices/reprice        a job over a time range (and a model) → 202, the job
GET  /api/v1/prices/reprice/{id}   the job: status, progress, cost before and after
"""

from __future__ import annotations

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Scope
from accounts.permissions import principal_of, scoped
from config.problems import Problem, json_object, problem_responses, validation_problem
from traces.api import json_response

from . import selectors, services
from .definition import MAX_RANGE, JobError, parse_job

TAG = "Prices"
# Reading is an analytics read; starting a job changes every figure of the range and may send
# traces to the destinations again: admins (and production keys) only, as integrations are.
RepricePermission = scoped(Scope.PRICES_READ, Scope.PRICES_WRITE)

JOB_IN = {
    "type": "object",
    "additionalProperties": False,
    "required": ["since", "until"],
    "properties": {
        "since": {"type": "string", "format": "date-time", "description": "Traces at or after this time."},
        "until": {
            "type": "string",
            "format": "date-time",
            "description": f"Traces before this time; at most {MAX_RANGE.days} days after since.",
        },
        "model": {
            "type": "string",
            "nullable": True,
            "maxLength": 200,
            "pattern": "^[^*]*\\*?$",
            "description": "Only this model, or a prefix ending in * (gpt-4o*); null or left out: every model.",
        },
        "redeliver": {
            "type": "boolean",
            "default": False,
            "description": "Send the traces whose cost changed again to the destinations that received them.",
        },
    },
}
_COSTS = {
    "type": "object",
    "required": ["traces", "changed", "cost_before", "cost_after"],
    "properties": {
        "traces": {"type": "integer"},
        "changed": {"type": "integer"},
        "cost_before": {"type": "number"},
        "cost_after": {"type": "number"},
    },
}
JOB_OUT = {
    "type": "object",
    "required": [
        "id",
        "status",
        "since",
        "until",
        "model",
        "redeliver",
        "traces_total",
        "traces_done",
        "traces_changed",
        "deliveries_requeued",
        "cost_before",
        "cost_after",
        "by_model",
        "created_at",
        "finished_at",
        "error",
    ],
    "properties": {
        "id": {"type": "integer"},
        "status": {"type": "string", "enum": ["pending", "running", "succeeded", "failed"]},
        "since": {"type": "string", "format": "date-time"},
        "until": {"type": "string", "format": "date-time"},
        "model": {"type": "string", "nullable": True},
        "redeliver": {"type": "boolean"},
        "traces_total": {"type": "integer", "nullable": True, "description": "Counted when the job starts."},
        "traces_done": {"type": "integer"},
        "traces_changed": {"type": "integer", "description": "Traces whose cost or unpriced flag changed."},
        "deliveries_requeued": {"type": "integer", "description": "With redeliver: deliveries sent again."},
        "cost_before": {"type": "number", "description": "USD over the traces done, before."},
        "cost_after": {"type": "number", "description": "USD over the traces done, after."},
        "by_model": {"type": "object", "additionalProperties": _COSTS},
        "created_at": {"type": "string", "format": "date-time"},
        "finished_at": {"type": "string", "format": "date-time", "nullable": True},
        "error": {"type": "string", "nullable": True},
    },
}


class RepriceCreate(APIView):
    permission_classes = [RepricePermission]

    @extend_schema(
        tags=[TAG],
        operation_id="prices_reprice_create",
        summary="Re-price stored traces",
        description="Prices the team's calls in [since, until) again under today's prices (team prices and "
        "genai-prices), in the background, and corrects the analytics rollups, runs, reports and alert "
        "windows to match; the audit log records the job. Traces already delivered are not sent again "
        "unless `redeliver` is true. Poll the job with GET /api/v1/prices/reprice/{id}. `since` must be "
        f"earlier than `until` and not in the future, at most {MAX_RANGE.days} days apart (a 400 naming the field).",
        request={"application/json": JOB_IN},
        examples=[
            OpenApiExample(
                "last month, one model family",
                value={"since": "2026-10-01T00:00:00Z", "until": "2026-11-01T00:00:00Z", "model": "gpt-4o*"},
                request_only=True,
            )
        ],
        responses={202: JOB_OUT, **problem_responses(400, 401, 403, 415)},
    )
    def post(self, request: Request) -> HttpResponse:
        principal = principal_of(request)
        try:
            spec = parse_job(json_object(request), now=timezone.now())
        except JobError as exc:
            raise validation_problem(exc.errors, title="Invalid re-pricing job")
        job = services.job_create(team_id=principal.team_id, spec=spec, actor=principal.actor)
        return json_response(selectors.job_json(job), status=202)


class RepriceDetail(APIView):
    permission_classes = [RepricePermission]

    @extend_schema(
        tags=[TAG],
        operation_id="prices_reprice_retrieve",
        summary="A re-pricing job",
        responses={200: JOB_OUT, **problem_responses(401, 403, 404)},
    )
    def get(self, request: Request, job_id: int) -> HttpResponse:
        job = selectors.job_for_team(principal_of(request).team_id, job_id)
        if job is None:
            raise Problem(404, "not-found", f"No re-pricing job {job_id} in this team.")
        return json_response(selectors.job_json(job))
